"""A real Django project (this directory) whose tasks run on cogworker: a
view enqueues, `python manage.py cogworker` runs the tasks in another
process against a private redis-server, and Django's own API reads the
results. Runs under whichever Django this interpreter has: 6.x
(`django.tasks`) or 5.2 with the `django-tasks` backport."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import start_worker, stop_worker

import cogworker
from cogworker.testing import RedisServer

PROJECT = Path(__file__).resolve().parent
RESULT_WAIT = 20.0


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Django set up on a fresh sqlite file and Redis, and a worker started
    with the management command."""
    redis = RedisServer()
    db = tmp_path_factory.mktemp("shop") / "shop.sqlite3"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "site_config.settings",
        "SHOP_DB": str(db),
        "SHOP_REDIS_URL": redis.url,
    }
    os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "SHOP_DB", "SHOP_REDIS_URL")})
    sys.path.insert(0, str(PROJECT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    api = cogworker.Api(redis.url, "shop")
    command = [sys.executable, "manage.py", "cogworker", "-c", "2", "--shutdown-timeout", "5"]
    worker = start_worker(command, PROJECT, env, api)
    try:
        yield {"api": api, "client": cogworker.Client(redis.url, "shop"), "worker": worker, "redis": redis}
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        redis.close()


def finished(site: dict[str, Any], task: Any, result_id: str) -> Any:
    """The task's result once it has a final outcome (waited for on Redis)."""
    try:
        site["client"].result(result_id, wait=RESULT_WAIT)
    except cogworker.JobFailed:
        pass
    result = task.get_result(result_id)
    assert result.is_finished, f"{result_id} still {result.status} after {RESULT_WAIT}s"
    return result


def test_a_view_enqueues_and_the_worker_runs_it(site: dict[str, Any]) -> None:
    from django.test import Client
    from shop.models import Order
    from shop.tasks import process_order

    response = Client().post("/orders/", json.dumps({"name": "book"}), content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "READY"
    result = finished(site, process_order, body["task"])
    assert result.status == "SUCCESSFUL"
    assert result.return_value == {"order": body["order"], "name": "book", "note": "from the view"}
    assert result.args == [body["order"]] and result.kwargs == {"note": "from the view"}
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert len(result.worker_ids) == 1 and result.worker_ids[0], result.worker_ids
    assert Order.objects.get(pk=body["order"]).processed, "the worker wrote the row"
    # The dashboard and the ops API show the task by its import path.
    assert site["api"].history(5)[0]["class"] == "shop.tasks.process_order"


def test_an_async_view_and_an_async_task(site: dict[str, Any]) -> None:
    from django.test import AsyncClient
    from shop.tasks import process_order, total

    response = asyncio.run(AsyncClient().post("/orders/async/"))
    assert finished(site, process_order, response.json()["task"]).status == "SUCCESSFUL"
    result = asyncio.run(total.aenqueue([1, 2, 3]))
    assert finished(site, total, result.id).return_value == 6


def test_a_failing_task_is_failed_with_its_error(site: dict[str, Any]) -> None:
    from shop.tasks import explode

    result = finished(site, explode, explode.enqueue("no stock").id)
    assert result.status == "FAILED"
    with pytest.raises(ValueError):
        result.return_value  # noqa: B018 - Django raises for a failed task
    assert [error.exception_class for error in result.errors] == [ValueError]
    assert "no stock" in result.errors[0].traceback and "shop/tasks.py" in result.errors[0].traceback
    assert result.errors[0].traceback.endswith("ValueError: no stock\n"), "as traceback.format_exception ends"
    # Not retried (Django Tasks has no retries); kept in dead, retryable
    # from the dashboard, under the task's name.
    dead = site["api"].entries("dead")
    assert [(e["job"]["jid"], e["job"]["class"]) for e in dead] == [(result.id, "shop.tasks.explode")]


def test_a_task_with_retries_is_ready_again_after_a_failure(site: dict[str, Any]) -> None:
    from shop.tasks import fails_then_waits

    result = fails_then_waits.enqueue("try later")
    deadline = time.monotonic() + RESULT_WAIT
    while site["client"].status(result.id) != "retrying":
        assert time.monotonic() < deadline, "the first run did not fail"
        time.sleep(0.05)
    again = fails_then_waits.get_result(result.id)
    assert again.status == "READY" and not again.is_finished
    assert [error.exception_class for error in again.errors] == [RuntimeError]
    assert "try later" in again.errors[0].traceback
    assert len(again.worker_ids) == 1
    assert [e["job"]["jid"] for e in site["api"].entries("retry")] == [result.id]


def test_run_after_defers_the_task(site: dict[str, Any]) -> None:
    from django.utils import timezone
    from shop.tasks import send_email

    run_after = timezone.now() + datetime.timedelta(seconds=2)
    result = send_email.using(run_after=run_after).enqueue("a@example.com")
    assert send_email.get_result(result.id).status == "READY"
    assert site["client"].status(result.id) == "scheduled"
    done = finished(site, send_email, result.id)
    assert done.return_value == "sent to a@example.com"
    assert done.started_at >= run_after


def test_a_task_with_context_knows_its_id_and_attempt(site: dict[str, Any]) -> None:
    from shop.tasks import whoami

    result = whoami.enqueue("me")
    assert finished(site, whoami, result.id).return_value == {"id": result.id, "attempt": 1, "label": "me"}


def test_enqueue_on_commit_waits_for_the_commit_and_a_rollback_enqueues_nothing(site: dict[str, Any]) -> None:
    from django.db import transaction
    from shop.models import Order
    from shop.tasks import process_order

    from cogworker.contrib.django._compat import TaskResultDoesNotExist

    with transaction.atomic():
        order = Order.objects.create(name="held")
        held = process_order.enqueue(order.pk)
        with pytest.raises(TaskResultDoesNotExist):
            process_order.get_result(held.id)
        assert site["client"].status(held.id) == "unknown", "not pushed before the commit"
    assert finished(site, process_order, held.id).status == "SUCCESSFUL"

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        order = Order.objects.create(name="never")
        dropped = process_order.enqueue(order.pk)
        raise Rollback
    assert site["client"].status(dropped.id) == "unknown"
    assert site["api"].queue("default")["size"] == 0


def test_database_connections_are_closed_around_each_task(site: dict[str, Any]) -> None:
    from shop.tasks import connection_was_open

    # Two slot threads: from the third run on, a thread would reuse the
    # connection an earlier task left open, were it not closed.
    for _ in range(4):
        result = connection_was_open.enqueue()
        assert finished(site, connection_was_open, result.id).return_value is False


def test_priority_maps_onto_cogworkers_levels_and_is_honoured(site: dict[str, Any]) -> None:
    from shop.tasks import send_email

    from cogworker.contrib.django.backend import priority_level

    assert [priority_level(p) for p in (100, 50, 1, 0, -1, -50, -100)] == [9, 7, 6, None, 4, 2, 0]
    api = site["api"]
    api.pause_queue("emails")
    try:
        urgent = send_email.using(priority=100).enqueue("urgent@example.com")
        plain = send_email.enqueue("plain@example.com")
        late = send_email.using(priority=-100).enqueue("late@example.com")
        queued = [job.get("priority") for job in api.queue_jobs("emails")]
        assert queued == [9, None, 0], queued
    finally:
        api.unpause_queue("emails")
    for result in (urgent, plain, late):
        finished(site, send_email, result.id)


def test_a_tasks_group_and_cap_are_computed_from_its_args(site: dict[str, Any]) -> None:
    from shop.tasks import sync_account

    api = site["api"]
    api.pause_queue("accounts")
    try:
        results = [sync_account.enqueue(7, since="monday"), sync_account.enqueue(7), sync_account.enqueue(8)]
        groups = sorted((g["name"], g["size"], g["cap"]) for g in api.groups("accounts"))
        assert groups == [("acct:7", 2, 1), ("acct:8", 1, 1)], groups
    finally:
        api.unpause_queue("accounts")
    for result in results:
        assert finished(site, sync_account, result.id).return_value.startswith("synced")
    with pytest.raises(cogworker.InvalidJob, match="group"):
        sync_account.using(queue_name="accounts").enqueue("x" * 300)


def test_what_the_backend_refuses(site: dict[str, Any]) -> None:
    from django.core.exceptions import ImproperlyConfigured
    from shop.tasks import send_email

    from cogworker.contrib.django import CogworkerBackend
    from cogworker.contrib.django._compat import InvalidTask

    with pytest.raises(InvalidTask, match="nowhere"):
        send_email.using(queue_name="nowhere")
    with pytest.raises(ImproperlyConfigured, match="bogus"):
        CogworkerBackend("x", {"OPTIONS": {"bogus": 1}})
    with pytest.raises(ImproperlyConfigured, match="redis_url"):
        CogworkerBackend("x", {"OPTIONS": {"redis_url": "http://nope"}})
    with pytest.raises(ImproperlyConfigured, match="retry"):
        CogworkerBackend("x", {"OPTIONS": {"retry": -1}})
    with pytest.raises(TypeError):
        send_email.enqueue(object())  # not JSON


def test_a_result_whose_class_is_not_a_task_is_refused_as_the_reference_does(
    site: dict[str, Any],
) -> None:
    """A jid whose job is not a Django task (another language's, a plain
    function's) is a SuspiciousOperation naming it, as Django's database
    backend and django-rq raise."""
    from django.core.exceptions import SuspiciousOperation
    from shop.tasks import send_email

    client = site["client"]
    for class_name in ("subprocess.check_output", "Billing::Charge"):
        jid = client.enqueue(class_name, "exit", result_ttl=600, queue="nowhere-runs-this")
        expected = f"Task {jid} does not point to a Task ({class_name})"
        with pytest.raises(SuspiciousOperation) as raised:
            send_email.get_result(jid)
        assert str(raised.value) == expected


def test_the_worker_stops_cleanly_on_term(site: dict[str, Any]) -> None:
    worker = site["worker"]
    output = stop_worker(worker)
    assert worker.returncode == 0, output
    assert "shop.tasks.process_order" in output, "it logged the tasks it registered"


def test_the_management_command_forks_worker_processes(site: dict[str, Any]) -> None:
    """``manage.py cogworker -p 2``: Django is set up once, in the parent;
    each forked child runs tasks (here writing to the database) and TERM
    stops them all."""
    from shop.tasks import total

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "site_config.settings"}
    command = [sys.executable, "manage.py", "cogworker", "-c", "1", "-p", "2", "--shutdown-timeout", "5"]
    worker = start_worker(command, PROJECT, env, site["api"])
    deadline = time.monotonic() + 30
    while len(site["api"].processes()) < 2:
        assert time.monotonic() < deadline, "two worker processes did not register"
        time.sleep(0.05)
    results = [total.enqueue([i, i]) for i in range(4)]
    assert [finished(site, total, r.id).return_value for r in results] == [0, 2, 4, 6]
    output = stop_worker(worker)
    assert worker.returncode == 0, output
    assert "all 2 worker processes stopped" in output, output
