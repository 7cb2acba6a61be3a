"""The Python side of the cross-language tests: records each job's args as JSON."""

import json
import os

import cogworker


@cogworker.job(name="PyEcho")
def py_echo(*args: object) -> None:
    with open(os.environ["CROSS_RESULTS"], "a", encoding="utf-8") as f:
        f.write(json.dumps(["python", *args], ensure_ascii=False) + "\n")
