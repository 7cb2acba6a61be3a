"""The FastAPI and Flask recipes (python/examples): each app runs in-process
under its framework's test client, a real worker process
(`cogworker worker web_tasks`) runs what they push, against a private
redis-server; the apps then read the results."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import start_worker, stop_worker

import cogworker
from cogworker.testing import RedisServer

EXAMPLES = Path(__file__).resolve().parents[2] / "python" / "examples"


@pytest.fixture(scope="module")
def worker() -> Iterator[str]:
    redis = RedisServer()
    previous = os.environ.get("COGWORKER_REDIS_URL")
    os.environ["COGWORKER_REDIS_URL"] = redis.url
    sys.path.insert(0, str(EXAMPLES))
    command = [sys.executable, "-m", "cogworker", "worker", "web_tasks", "-c", "2"]
    process = start_worker(
        command, EXAMPLES, {**os.environ, "COGWORKER_REDIS_URL": redis.url}, cogworker.Api(redis.url)
    )
    try:
        yield redis.url
    finally:
        output = stop_worker(process)
        sys.path.remove(str(EXAMPLES))
        if previous is None:
            os.environ.pop("COGWORKER_REDIS_URL", None)
        else:
            os.environ["COGWORKER_REDIS_URL"] = previous
        redis.close()
    assert process.returncode == 0, output


def test_fastapi_endpoints_await_the_push_and_read_the_result(worker: str) -> None:
    from fastapi.testclient import TestClient
    from fastapi_app import app

    client = TestClient(app)
    jid = client.post("/signup", params={"email": "a@example.com"}).json()["jid"]
    outcome: dict[str, Any] = client.get(f"/jobs/{jid}", params={"wait": 10}).json()
    assert outcome == {"status": "succeeded", "value": "welcome mail sent to a@example.com"}
    jid = client.post("/images/7/resize", params={"width": 64}).json()["jid"]
    assert client.get(f"/jobs/{jid}", params={"wait": 10}).json() == {
        "status": "succeeded",
        "value": {"image": 7, "width": 64},
    }
    assert client.get("/jobs/no-such-job").json() == {"status": "unknown"}


def test_flask_views_push_and_read_the_result(worker: str) -> None:
    from flask_app import app

    client = app.test_client()
    jid = client.post("/signup", json={"email": "b@example.com"}).get_json()["jid"]
    outcome = client.get(f"/jobs/{jid}?wait=10").get_json()
    assert outcome == {"status": "succeeded", "value": "welcome mail sent to b@example.com"}
