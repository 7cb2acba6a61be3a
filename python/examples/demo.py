"""The demo: a Python app pushing jobs and a `cogworker worker` process
running them, on a private Redis this script starts and stops.

Run it with `scripts/demo` from the repository root.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = int(os.environ.get("DEMO_JOBS", "5000"))


def main() -> int:
    import cogworker

    workdir = tempfile.mkdtemp(prefix="cogworker-demo-")
    # The worker's log (a line per job) goes to a file that outlives the
    # demo; the screen gets a progress line and a summary.
    log_path = os.path.join(tempfile.mkdtemp(prefix="cogworker-demo-log-"), "worker.log")
    redis = cogworker.testing.RedisServer()
    port, url = redis.port, redis.url
    print(f"demo: private redis-server on {url}")
    print(f"demo: the worker logs to {log_path}")
    log = open(log_path, "ab")  # noqa: SIM115 - closed in finally
    os.environ["COGWORKER_REDIS_URL"] = url
    sys.path.insert(0, HERE)

    import demo_tasks

    cogworker.configure(scheduler_poll_interval=0.5)
    api = cogworker.Api()
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cogworker",
            "worker",
            "demo_tasks",
            "-c",
            "10",
            "-q",
            "critical,3",
            "-q",
            "default",
        ],
        cwd=HERE,
        env={**os.environ, "DEMO_STATE_DIR": workdir, "PYTHONPATH": HERE},
        stdout=log,
        stderr=log,
    )
    try:
        started = time.monotonic()
        emails = JOBS // 10
        client = cogworker.Client()
        client.enqueue_many("demo_tasks.thumbnail", [(i, 128) for i in range(JOBS - emails)])
        client.enqueue_many(
            "demo_tasks.send_email",
            [(f"user{i}@example.com", "Welcome!") for i in range(emails)],
            queue="critical",
        )
        for i in range(20):
            demo_tasks.fetch_feed.enqueue(f"https://example.com/feed/{i}")
        demo_tasks.build_report.enqueue_in(2.0, "weekly")
        # A buggy producer in another language pushes garbage: it is buried
        # in `dead` with its bytes kept, and everything else keeps flowing.
        subprocess.run(
            ["redis-cli", "-p", str(port), "LPUSH", "cogworker:queue:default", "{oops"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        expected = JOBS + 20 + 1
        print(
            f"demo: pushed {JOBS} jobs ({emails} emails, every 10th fails once), 20 async feeds, "
            "1 scheduled report, 1 garbage payload"
        )
        in_place = sys.stdout.isatty()
        while True:
            stats = api.stats()
            queued = sum(q["size"] for q in api.queues())
            line = (
                f"demo: {time.monotonic() - started:5.1f}s processed={stats['processed']} "
                f"failed={stats['failed']} queued={queued} retry={api.set_size('retry')} "
                f"scheduled={api.set_size('scheduled')} dead={api.set_size('dead')}"
            )
            done = stats["processed"] >= expected or time.monotonic() - started > 60
            # One line, rewritten in place on a terminal; a line a second elsewhere.
            if in_place:
                print("\r" + line, end="\n" if done else "", flush=True)
            elif done or int((time.monotonic() - started) * 2) % 2 == 0:
                print(line)
            if done:
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        dead = api.entries("dead")
        print("demo: sending TERM to the worker")
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(30)
        log.flush()
        with open(log_path, "rb") as f:
            lines = sum(1 for _ in f)
        print(
            f"demo: done in {elapsed:.1f}s (the report waited 2 s): {stats['processed']} of {expected} "
            f"jobs ran; {stats['failed']} failed attempts (each email that fails once was retried and "
            "done; the garbage payload was buried)"
        )
        for entry in dead:
            job = entry["job"]
            kept = job.get("raw_payload")
            print(f"demo: in dead, its bytes kept: {job['class']} ({job['error_message']}) {kept!r}")
        print(f"demo: the worker exited with {code} on TERM; its log: {log_path} ({lines} lines)")
        return 0 if code == 0 and stats["processed"] >= expected else 1
    finally:
        if worker.poll() is None:
            worker.kill()
        log.close()
        redis.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
