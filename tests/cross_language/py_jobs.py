"""The Python side of the cross-language tests: records each job's args as JSON."""

import json
import os

import cogworker


@cogworker.job(name="PyEcho")
def py_echo(*args: object) -> None:
    with open(os.environ["CROSS_RESULTS"], "a", encoding="utf-8") as f:
        f.write(json.dumps(["python", *args], ensure_ascii=False) + "\n")


def _write(row: list[object]) -> None:
    with open(os.environ["CROSS_RESULTS"], "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def _tenant_seen(job: cogworker.RunningJob, call_next: object) -> object:
    """Server middleware: what a field another language's client middleware added looks like here."""
    if job.class_name == "PyTenant":
        _write(["python-middleware", job.get("tenant"), job.retry_count])
    return call_next()  # type: ignore[operator]


cogworker.server_middleware.add(_tenant_seen)


@cogworker.job(name="PyTenant", retry=2, retry_in=lambda count, error: 0)
def py_tenant() -> None:
    if not os.path.exists(os.environ["CROSS_RESULTS"] + ".py-ran"):
        open(os.environ["CROSS_RESULTS"] + ".py-ran", "w").close()
        raise RuntimeError("the first run fails: the field must survive the retry")


@cogworker.job(name="PySum")
def py_sum(a: int, b: int) -> dict[str, object]:
    return {"sum": a + b, "by": "python"}
