"""The ops API: queues, the scheduled/retry/dead sets, processes, stats."""

from __future__ import annotations

import json
from typing import Any

from . import _core
from ._settings import make_config


class Api:
    """``cogworker.Api().queues()`` and friends. Set names: "scheduled", "retry", "dead"."""

    def __init__(self, redis_url: str | None = None, namespace: str | None = None) -> None:
        self._native = _core.Api(make_config(redis_url=redis_url, namespace=namespace))

    def queues(self) -> list[dict[str, Any]]:
        return self._native.queues()

    def pause_queue(self, name: str) -> None:
        self._native.pause_queue(name)

    def unpause_queue(self, name: str) -> None:
        self._native.unpause_queue(name)

    def clear_queue(self, name: str) -> int:
        return self._native.clear_queue(name)

    def set_size(self, set_name: str) -> int:
        return self._native.set_size(set_name)

    def entries(self, set_name: str, start: int = 0, count: int = 50) -> list[dict[str, Any]]:
        """A page of a set, latest first: dicts with ``score``, ``payload`` (text) and ``job`` (parsed)."""
        return [_with_job(e) for e in self._native.set_page(set_name, start, count)]

    def find(self, set_name: str, jid: str) -> dict[str, Any] | None:
        entry = self._native.find(set_name, jid)
        return None if entry is None else _with_job(entry)

    def retry_now(self, set_name: str, entry: dict[str, Any]) -> bool:
        return self._native.retry_now(set_name, entry["payload"], entry["score"])

    def retry_all(self, set_name: str) -> int:
        return self._native.retry_all(set_name)

    def clear_set(self, set_name: str) -> int:
        """Deletes every entry of a set; returns how many there were."""
        return self._native.clear_set(set_name)

    def delete(self, set_name: str, entry: dict[str, Any]) -> bool:
        return self._native.delete(set_name, entry["payload"], entry["score"])

    def kill(self, set_name: str, entry: dict[str, Any]) -> bool:
        return self._native.kill(set_name, entry["payload"], entry["score"])

    def processes(self) -> list[dict[str, Any]]:
        return [{**p, "info": json.loads(p["info"])} for p in self._native.processes()]

    def quiet_process(self, identity: str) -> None:
        self._native.quiet_process(identity)

    def stop_process(self, identity: str) -> None:
        self._native.stop_process(identity)

    def stats(self, day: str | None = None) -> dict[str, int]:
        processed, failed = self._native.stats(day)
        return {"processed": processed, "failed": failed}

    def attempts(self, jid: str) -> list[dict[str, Any]]:
        return [json.loads(a) for a in self._native.attempts(jid)]

    def history(self, count: int = 50) -> list[dict[str, Any]]:
        return [json.loads(h) for h in self._native.history(count)]

    def unique_locks(self, limit: int = 1000) -> list[dict[str, Any]]:
        """Held unique-job locks: dicts with ``digest``, ``jid`` (the owner) and ``ttl``."""
        return [{"digest": d, "jid": j, "ttl": t} for d, j, t in self._native.unique_locks(limit)]

    def clear_unique_lock(self, digest: str) -> bool:
        """Removes a unique lock so a job with that digest can be pushed again."""
        return self._native.clear_unique_lock(digest)

    def periodic(self) -> list[dict[str, Any]]:
        """Periodic entries of the live processes, with ``last_slot`` (epoch
        seconds) and ``running`` (the jid holding an ``until_executed`` lock)."""
        return [
            {**json.loads(entry), "pjid": pjid, "last_slot": last, "running": running}
            for entry, pjid, last, running in self._native.periodic()
        ]


def _with_job(entry: dict[str, Any]) -> dict[str, Any]:
    try:
        job = json.loads(entry["payload"])
    except ValueError:
        job = None
    return {**entry, "job": job}
