"""Prometheus: `cogworker metrics` (the /metrics exposition alone) passes
`promtool check metrics`, and a real Prometheus server (Debian's
`prometheus` package) scrapes it; its query API then returns the
processed and failed counters of the jobs a worker ran."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import cogworker
from cogworker.testing import RedisServer, free_port

WAIT = 30.0


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


@cogworker.job(name="Observed.Work")
def work(n: int) -> int:
    return n


@cogworker.job(name="Observed.Fails", retry=False)
def fails() -> None:
    raise ValueError("on purpose")


def test_promtool_accepts_the_exposition_and_prometheus_scrapes_it(tmp_path: Path) -> None:
    for tool in ("promtool", "prometheus"):
        assert shutil.which(tool), f"{tool} missing: scripts/setup installs Debian's prometheus"
    with RedisServer() as redis:
        cogworker.configure(redis_url=redis.url)
        for n in range(5):
            work.enqueue(n)
        fails.enqueue()
        worker = cogworker.Worker(concurrency=2)
        worker.start()
        api = cogworker.Api(redis.url)
        try:
            deadline = time.monotonic() + WAIT
            while sum(t["metrics"]["processed"] for t in api.metric_totals()) < 6:
                assert time.monotonic() < deadline, f"metrics not written: {api.metric_totals()}"
                time.sleep(0.1)
        finally:
            worker.stop()
            worker.wait(15)
            worker.join()

        exporter = subprocess.Popen(
            [sys.executable, "-m", "cogworker", "metrics", "--redis-url", redis.url, "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        prometheus = None
        try:
            line = exporter.stdout.readline() if exporter.stdout else ""
            assert line.startswith("cogworker metrics: http://"), line
            url = line.split(": ", 1)[1].strip()
            text = fetch(url)
            assert 'cogworker_jobs_processed_total{queue="default",class="Observed.Work"} 5' in text, text
            promtool = ["promtool", "check", "metrics"]
            check = subprocess.run(promtool, input=text, capture_output=True, text=True)
            assert check.returncode == 0, check.stdout + check.stderr
            assert check.stdout.strip() == "" and check.stderr.strip() == "", check.stdout + check.stderr

            target = urllib.parse.urlsplit(url).netloc
            config = tmp_path / "prometheus.yml"
            config.write_text(
                "global:\n  scrape_interval: 1s\n"
                "scrape_configs:\n  - job_name: cogworker\n"
                f"    static_configs:\n      - targets: ['{target}']\n"
            )
            port = free_port()
            prometheus = subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=open(tmp_path / "prometheus.log", "w"),  # noqa: SIM115 - the process owns it
            )
            query = urllib.parse.urlencode({"query": "cogworker_jobs_processed_total"})
            deadline = time.monotonic() + WAIT
            results: list = []
            while not results:
                assert prometheus.poll() is None, (tmp_path / "prometheus.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "prometheus.log").read_text()[-3000:]
                try:
                    answer = json.loads(fetch(f"http://127.0.0.1:{port}/api/v1/query?{query}"))
                    results = answer["data"]["result"]
                except OSError:
                    pass
                time.sleep(0.2)
            got = {(r["metric"]["class"], r["metric"]["queue"]): r["value"][1] for r in results}
            assert got == {("Observed.Work", "default"): "5", ("Observed.Fails", "default"): "1"}, results
        finally:
            if prometheus is not None:
                prometheus.send_signal(signal.SIGTERM)
                prometheus.wait(30)
            exporter.send_signal(signal.SIGTERM)
            assert exporter.wait(15) == 0
            cogworker.configure(redis_url=os.environ.get("COGWORKER_REDIS_URL"))
