"""The jobs of `bench --hosts` (core/examples/bench/hosts.rs), the same as
its Rust worker's: `Noop` does nothing; `Probe` records how long it waited
to be picked up, and the list is printed on exit, as the Rust worker
prints it. BENCH_PREFETCH=0 turns prefetch off (`bench --hosts --no-prefetch`)."""

from __future__ import annotations

import atexit
import json
import os
import time

import cogworker

if os.environ.get("BENCH_PREFETCH") == "0":
    cogworker.configure(prefetch=False)
_latencies: list[float] = []


@cogworker.job(name="Noop")
def noop(*_args: object) -> None:
    pass


@cogworker.job(name="Probe")
def probe(pushed_at: float) -> None:
    _latencies.append(time.time() - pushed_at)  # list.append is atomic under the GIL


@atexit.register
def _print_latencies() -> None:
    print("LATENCIES " + json.dumps(_latencies), flush=True)
