"""Workflows from Python (issue #31): ``handle.step(...)`` and
``cogworker.chain/group/chord`` push steps that each take the result of
the one before; a workflow pushed inside ``with Batch`` is a unit of it;
what cannot be a workflow is refused naming the step."""

from __future__ import annotations

import pytest
import tasks
from conftest import wait_for

import cogworker


def setup_function() -> None:
    tasks.WORKFLOW_CALLS.clear()
    tasks.BATCH_CALLS.clear()


def test_a_chain_then_a_chord_pass_results_on(worker_factory) -> None:
    worker_factory(concurrency=4)
    flow = cogworker.chain(
        tasks.workflow_double.step(3),
        tasks.workflow_double.step(takes_result=True),
        tasks.workflow_record.step("chain", takes_result=True),
    ).push()
    assert len(flow.steps) == 3
    wait_for("the chain ended", lambda: (12, "chain") in tasks.WORKFLOW_CALLS)
    chord = cogworker.chord(
        [tasks.workflow_double.step(n) for n in (1, 2, 3)],
        tasks.workflow_record.options(queue="default").step("chord"),
    ).push()
    wait_for("the chord's callback ran", lambda: ([2, 4, 6], "chord") in tasks.WORKFLOW_CALLS)
    status = cogworker.Api().batch(chord.id)
    assert status is not None
    assert (status["state"], status["total"]) == ("success", 2)
    assert len(tasks.WORKFLOW_CALLS) == 2, tasks.WORKFLOW_CALLS


def test_a_workflow_in_a_batch_is_one_unit_of_it(worker_factory) -> None:
    batch = cogworker.Batch("outer").on("success", tasks.batch_done, "outer")
    with batch:
        tasks.batch_step.enqueue(1)
        flow = cogworker.chain(
            tasks.workflow_double.step(1), tasks.workflow_double.step(takes_result=True)
        ).push()
    api = cogworker.Api()
    assert api.batch(flow.id)["parent"] == batch.bid
    assert api.batch(batch.bid)["total"] == 2, "a job and the workflow"
    worker_factory(concurrency=2)
    wait_for(
        "the batch succeeded", lambda: [e for t, e, _ in tasks.BATCH_CALLS if t == "outer"] == ["success"]
    )


def test_what_cannot_be_a_workflow_is_refused_naming_the_step(configured) -> None:
    with pytest.raises(cogworker.InvalidArgument) as raised:
        cogworker.chain(tasks.workflow_double.step(1, takes_result=True)).push()
    assert raised.value.field == "steps[0].takes_result"
    with pytest.raises(cogworker.InvalidArgument) as raised:
        cogworker.chain(tasks.workflow_double.step(1), cogworker.group()).push()
    assert raised.value.field == "steps[1]"
    with pytest.raises(cogworker.InvalidJob) as refused:
        cogworker.chain(
            tasks.workflow_double.step(1), cogworker.step(tasks.workflow_double, 2, delay=5)
        ).push()
    assert refused.value.field == "steps[1]"
    assert cogworker.Api().batches() == []
