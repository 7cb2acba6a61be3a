"""FastAPI with cogworker: endpoints await the push (the event loop is
never blocked) and read the job's result.

    cogworker worker web_tasks            # the worker, in this directory
    uvicorn fastapi_app:app               # the app
    curl -X POST 'localhost:8000/signup?email=a@example.com'
    curl 'localhost:8000/jobs/<jid>?wait=5'
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from web_tasks import resize, send_welcome

import cogworker

app = FastAPI()


@app.post("/signup")
async def signup(email: str) -> dict[str, Any]:
    return {"jid": await send_welcome.aenqueue(email)}


@app.post("/images/{image_id}/resize")
async def resize_image(image_id: int, width: int = 200) -> dict[str, Any]:
    return {"jid": await resize.aenqueue(image_id, width)}


@app.get("/jobs/{jid}")
async def job(jid: str, wait: float = 0.0) -> dict[str, Any]:
    """The job's outcome, waiting up to ``wait`` seconds for it."""
    try:
        value = await cogworker.Client().aresult(jid, wait=wait or None)
    except cogworker.JobFailed as failure:
        return {"status": failure.status, "error": failure.error_message}
    if isinstance(value, cogworker.Pending):
        return {"status": value.status}
    return {"status": "succeeded", "value": value}
