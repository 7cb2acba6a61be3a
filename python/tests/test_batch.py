"""Batches from Python (issue #31): ``with cogworker.Batch(...)`` pushes
into a batch and closes it; callbacks run once with the batch's status;
a job adds to its own batch; a batch opened inside another's block is its
child; a block that raises leaves its batch open."""

from __future__ import annotations

import pytest
import tasks
from conftest import wait_for

import cogworker


def setup_function() -> None:
    tasks.BATCH_CALLS.clear()


def events(tag: str) -> list[str]:
    return sorted(event for t, event, _ in tasks.BATCH_CALLS if t == tag)


def test_a_batch_closes_after_its_block_and_fires_complete_and_success_once(worker_factory) -> None:
    worker_factory(concurrency=4)
    batch = cogworker.Batch("python import")
    batch.on("success", tasks.batch_done, "import")
    batch.on("complete", tasks.batch_done, "import", queue="default")
    with batch:
        assert cogworker.batch.current_bid() == batch.bid
        tasks.batch_step.enqueue(1)
        cogworker.Client().enqueue_many(tasks.batch_step.name, [(2,), (3,)])
        tasks.batch_spawner.enqueue(2)
    assert cogworker.batch.current_bid() is None
    wait_for("both callbacks ran", lambda: events("import") == ["complete", "success"])
    status = batch.status()
    assert status is not None
    assert (status["state"], status["pending"], status["open"]) == ("success", 0, False)
    # 1 + 2 (enqueue_many) + the spawner + the 2 steps it added.
    assert status["total"] == 6
    success = next(s for _, event, s in tasks.BATCH_CALLS if event == "success")
    assert (success["bid"], success["description"], success["total"]) == (batch.bid, "python import", 6)


def test_a_child_batch_counts_in_its_parent_and_a_raising_block_leaves_it_open(worker_factory) -> None:
    parent = cogworker.Batch("parent").on("success", tasks.batch_done, "parent")
    with parent:
        tasks.batch_step.enqueue("p")
        child = cogworker.Batch("child").on("success", tasks.batch_done, "child")
        with child:
            tasks.batch_step.enqueue("c")
    api = cogworker.Api()
    assert api.batch(child.bid)["parent"] == parent.bid
    assert api.batch(parent.bid)["total"] == 2, "a job and the child"
    stuck = cogworker.Batch("stuck").on("complete", tasks.batch_done, "stuck")
    with pytest.raises(RuntimeError), stuck:
        tasks.batch_step.enqueue("s")
        raise RuntimeError("half pushed")
    worker_factory(concurrency=2)
    wait_for(
        "child then parent succeeded",
        lambda: events("parent") == ["success"] and events("child") == ["success"],
    )
    wait_for("the stuck batch's job ran", lambda: api.batch(stuck.bid)["pending"] == 0)
    status = api.batch(stuck.bid)
    assert (status["state"], status["open"]) == ("open", True), "never closed: nothing fires"
    assert events("stuck") == []
    with pytest.raises(cogworker.InvalidArgument) as refused:
        cogworker.Client().enqueue(tasks.batch_step.name, 1, bid="nosuchbatch")
    assert refused.value.field == "bid"
    with pytest.raises(cogworker.InvalidArgument):
        stuck.on("success", tasks.batch_done, "late")
