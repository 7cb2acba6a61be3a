"""Long jobs under kills and stops (issue #48): one import of 100,000
items, checkpointing after each, worked by one worker process of each
language that is killed with ``kill -9`` and stopped with TERM along the
way, a new worker started after each. Pass: every item processed; after
a kill the job resumed from a saved checkpoint, never from zero, and
repeated only the items since it; after a TERM nothing repeated (the job
stopped between items, saved its cursor and went back on its queue); the
job completed; every TERM exited 0.

`scripts/test` runs 2 kills and 1 TERM per language; FAULT_SOAK=1
(`scripts/soak`) the issue's 5 kills and 2 TERMs.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from harness import LANGUAGES, NS, SOAK, Fleet, Redis, _client, wait_drained, wait_registered

pytestmark = pytest.mark.timeout(1800 if SOAK else 300)

ITEMS = 100_000
# In order: what happens to the worker running the import.
EVENTS = ["kill", "term", "kill", "kill", "term", "kill", "kill"] if SOAK else ["kill", "term", "kill"]
# Items processed between two events.
STRIDE = ITEMS // (len(EVENTS) + 2)


def _read(results: str) -> tuple[list[tuple[str, int, int]], list[str]]:
    """(`item`/`stopped`, index or cursor, pid) per line, in file order, and
    the lines that are not that. A last line still being written (no
    newline yet) is left for the next read: a CI run once read one
    half-written. A line a `kill -9` cut short (the kernel stops a write
    between pages for a fatal signal) runs into the next one: a CI run
    read one of two fields; those are counted, and bounded by the kills."""
    if not os.path.exists(results):
        return [], []
    with open(results, encoding="utf-8") as f:
        whole = [line for line in f if line.endswith("\n") and line.strip()]
    lines, garbled = [], []
    for line in whole:
        fields = line.split()
        if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
            lines.append((fields[0], int(fields[1]), int(fields[2])))
        else:
            garbled.append(line)
    return lines, garbled


def _lines(results: str) -> list[tuple[str, int, int]]:
    return _read(results)[0]


def _wait_items(results: str, count: int, limit: float) -> None:
    deadline = time.monotonic() + limit
    while sum(1 for kind, _, _ in _lines(results) if kind == "item") < count:
        assert time.monotonic() < deadline, f"fewer than {count} items processed in {limit} s"
        time.sleep(0.02)


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_import_resumes_from_its_checkpoint_after_kills_and_stops(language, tmp_path):
    results, logdir = str(tmp_path / "results.txt"), str(tmp_path / "logs")
    os.mkdir(logdir)
    with Redis() as server:
        r = server.client()
        fleet = Fleet(server.url, results, logdir, concurrency=1, env={"TEST_ORPHAN_THRESHOLD": "2"})
        worker = fleet.start(language)
        wait_registered(r, fleet)
        _client(server.url).enqueue("Import", ITEMS, 20)
        ended: list[tuple[str, int]] = []  # (event, pid of the worker it ended)
        codes = []
        for n, event in enumerate(EVENTS, start=1):
            _wait_items(results, n * STRIDE, 120)
            ended.append((event, worker.proc.pid))
            if event == "kill":
                fleet.kill9(worker)
            else:
                codes += fleet.stop_all()
            worker = fleet.start(language)
            wait_registered(r, fleet)
        drained = wait_drained(r, 180)
        codes += fleet.stop_all()
        assert drained, fleet.logs()[-20000:]
        done = int(r.get(f"{NS}:stat:processed") or 0)

    lines, garbled = _read(results)
    assert len(garbled) <= EVENTS.count("kill"), f"lines no kill explains: {garbled}"
    items = [n for kind, n, _ in lines if kind == "item"]
    assert set(items) == set(range(ITEMS)), f"{ITEMS - len(set(items))} items never processed"
    # The runs, in order: each a pid's consecutive lines.
    runs: list[tuple[int, list[tuple[str, int]]]] = []
    for kind, n, pid in lines:
        if not runs or runs[-1][0] != pid:
            runs.append((pid, []))
        runs[-1][1].append((kind, n))
    assert [pid for pid, _ in runs[:-1]] == [pid for _, pid in ended], (runs[:3], ended)
    repeated_after_kills, resumed_from = [], []
    for (event, _), (_, run), (_, after) in zip(ended, runs, runs[1:]):
        last = max(n for kind, n in run if kind == "item")
        first = after[0][1]
        resumed_from.append(first)
        if event == "kill":
            assert first > 0, "resumed from zero after a kill: no checkpoint was saved"
            repeated_after_kills.append(last + 1 - first)
        else:
            assert run[-1] == ("stopped", last + 1), run[-3:]
            assert first == last + 1, f"a TERM repeated {last + 1 - first} items"
    assert all(0 <= repeated < STRIDE for repeated in repeated_after_kills), repeated_after_kills
    assert done == 1, f"the import completed once ({done})"
    assert all(code == 0 for code in codes), codes
    row = json.dumps(
        {
            "scenario": f"long_job_{language}",
            "items": ITEMS,
            "kills": EVENTS.count("kill"),
            "terms": EVENTS.count("term"),
            "processed_lines": len(items),
            "repeated_after_kills": repeated_after_kills,
            "repeated_after_terms": 0,
            "resumed_from": resumed_from,
        }
    )
    print(row, file=sys.stderr)
    if os.environ.get("FAULT_REPORT"):
        with open(os.environ["FAULT_REPORT"], "a", encoding="utf-8") as f:
            f.write(row + "\n")
