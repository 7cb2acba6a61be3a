"""Flask with cogworker: a view pushes, another reads the job's result.

cogworker worker web_tasks            # the worker, in this directory
flask --app flask_app run             # the app
curl -X POST localhost:5000/signup -H 'Content-Type: application/json' -d '{"email": "a@example.com"}'
curl 'localhost:5000/jobs/<jid>?wait=5'
"""

from __future__ import annotations

from typing import Any

from flask import Flask, request
from web_tasks import send_welcome

import cogworker

app = Flask(__name__)


@app.post("/signup")
def signup() -> dict[str, Any]:
    return {"jid": send_welcome.enqueue(request.get_json()["email"])}


@app.get("/jobs/<jid>")
def job(jid: str) -> dict[str, Any]:
    """The job's outcome, waiting up to ``?wait=`` seconds for it."""
    wait = request.args.get("wait", type=float)
    try:
        value = cogworker.Client().result(jid, wait=wait)
    except cogworker.JobFailed as failure:
        return {"status": failure.status, "error": failure.error_message}
    if isinstance(value, cogworker.Pending):
        return {"status": value.status}
    return {"status": "succeeded", "value": value}
