"""The jobs of the FastAPI and Flask examples, in their own module so the
worker imports only them: `cogworker worker web_tasks` in this directory.
Redis comes from COGWORKER_REDIS_URL (or REDIS_URL) in both processes."""

from __future__ import annotations

import asyncio

import cogworker


@cogworker.job(result_ttl=3600)
def send_welcome(email: str) -> str:
    # Stand-in for talking to a mail server.
    return f"welcome mail sent to {email}"


@cogworker.job(result_ttl=3600)
async def resize(image_id: int, width: int) -> dict[str, int]:
    await asyncio.sleep(0.01)  # stand-in for awaiting an image service
    return {"image": image_id, "width": width}
