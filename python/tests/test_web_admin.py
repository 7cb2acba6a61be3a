"""`cogworker web` and the admin commands as real processes against a
private Redis."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from conftest import HERE, RedisServer, worker_env
from test_cli import exit_code

import cogworker


def cli(server: RedisServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cogworker", *args],
        env=worker_env(server),
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_web_serves_the_dashboard_until_term(redis_server: RedisServer):
    proc = subprocess.Popen(
        [sys.executable, "-m", "cogworker", "web", "--port", "0", "--auth", "ops:pa55"],
        env=worker_env(redis_server),
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("cogworker web: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        try:
            urllib.request.urlopen(url, timeout=10)
            raise AssertionError("served without credentials")
        except urllib.error.HTTPError as e:
            assert e.code == 401
            e.close()
        credentials = base64.b64encode(b"ops:pa55").decode()
        request = urllib.request.Request(url, headers={"Authorization": f"Basic {credentials}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read().decode()
            assert response.status == 200
            assert "Dashboard" in body and "script-src 'self'" in response.headers["Content-Security-Policy"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert exit_code(proc) == 0
        assert proc.stdout is not None
        proc.stdout.close()


def test_web_refuses_a_bad_port_or_auth(redis_server: RedisServer):
    assert cli(redis_server, "web", "--auth", "no-colon").returncode == 2
    taken = cli(redis_server, "web", "--port", str(redis_server.port))
    assert taken.returncode == 2 and "web.bind" in taken.stderr


@pytest.mark.parametrize("command", ["web", "metrics"])
def test_web_refuses_an_open_address_without_credentials(redis_server: RedisServer, command: str):
    refused = cli(redis_server, command, "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2, refused.stderr
    assert "--auth" in refused.stderr and "--insecure-no-auth" in refused.stderr, refused.stderr


def test_web_insecure_no_auth_warns_and_serves_only_allowed_hosts(redis_server: RedisServer):
    env = {**worker_env(redis_server), "COGWORKER_WEB_ALLOWED_HOSTS": "jobs.example.com"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cogworker", "web", "--host", "0.0.0.0", "--port", "0", "--insecure-no-auth"],
        env=env,
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = int(line.rsplit(":", 1)[1].strip().rstrip("/"))
        url = f"http://127.0.0.1:{port}/"

        def status(host: str) -> tuple[int, str]:
            request = urllib.request.Request(url, headers={"Host": host})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as e:
                with e:
                    return e.code, e.read().decode()

        assert status("jobs.example.com")[0] == 200
        assert status(f"localhost:{port}")[0] == 200
        code, body = status(f"evil.example:{port}")
        assert code == 403 and "--allowed-host" in body, body
    finally:
        proc.send_signal(signal.SIGTERM)
        assert exit_code(proc) == 0
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        log = proc.stderr.read()
        proc.stderr.close()
    assert "WARN" in log and "WITHOUT credentials" in log, log


def test_admin_output_shows_terminal_escapes_as_text(redis_server: RedisServer):
    hostile = "mail\x1b]0;pwned\x07\x1b[2J"
    redis_server.cli("SADD", "cogworker:queues", hostile)
    redis_server.cli("LPUSH", f"cogworker:queue:{hostile}", json.dumps({"class": "X", "args": []}))
    out = cli(redis_server, "queues").stdout
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert "mail\\u{1b}]0;pwned\\u{7}\\u{1b}[2J" in out, out


def test_admin_commands(redis_server: RedisServer):
    client = cogworker.Client(redis_url=redis_server.url)
    client.enqueue("Some.Job", 1)
    dead_job = {"class": "Dead.Job", "args": [], "queue": "default", "jid": "d" * 24}
    redis_server.cli("ZADD", "cogworker:dead", "1", json.dumps(dead_job))

    stats = cli(redis_server, "stats")
    assert stats.returncode == 0 and "dead" in stats.stdout and "1" in stats.stdout, stats.stdout
    queues = cli(redis_server, "queues")
    assert "default" in queues.stdout and "running" in queues.stdout
    assert cli(redis_server, "pause", "default").returncode == 0
    assert "paused" in cli(redis_server, "queues").stdout
    assert cli(redis_server, "unpause", "default").returncode == 0
    retried = cli(redis_server, "retry-all", "dead")
    assert retried.stdout.strip() == "retried 1 job(s) from dead"
    assert redis_server.cli_raw("LLEN", "cogworker:queue:default") == "2"
    assert cli(redis_server, "clear-queue", "default").stdout.strip() == "deleted 2 job(s) from queue default"
    bad = cli(redis_server, "clear", "nowhere")
    assert bad.returncode == 2 and 'invalid argument set = "nowhere"' in bad.stderr
    assert cli(redis_server, "processes").returncode == 0


def test_locate_finds_the_set_a_job_waits_in(redis_server: RedisServer) -> None:
    client = cogworker.Client(redis_url=redis_server.url)
    api = cogworker.Api(redis_url=redis_server.url)
    later = client.enqueue("Some.Job", 1, at=time.time() + 3600)
    assert api.locate(later)["set"] == "scheduled"
    assert api.locate(later)["job"]["args"] == [1]
    assert api.locate(client.enqueue("Some.Job", 2)) is None, "on a queue, in no set"


def test_a_password_on_the_command_line_is_warned_of_and_files_keep_it_off(
    redis_server: RedisServer, tmp_path
):
    with_password = redis_server.url.replace("redis://", "redis://:pw@")
    warned = cli(redis_server, "queues", "--redis-url", with_password)
    assert "--redis-url puts a password on the command line" in warned.stderr, warned.stderr
    assert "COGWORKER_REDIS_URL_FILE" in warned.stderr
    quiet = cli(redis_server, "queues", "--redis-url", redis_server.url)
    assert quiet.returncode == 0 and "command line" not in quiet.stderr, quiet.stderr
    url_file = tmp_path / "redis_url"
    url_file.write_text(redis_server.url + "\n")
    env = {**worker_env(redis_server), "COGWORKER_REDIS_URL": "redis://127.0.0.1:1/0"}
    env["COGWORKER_REDIS_URL_FILE"] = str(url_file)
    from_file = subprocess.run(
        [sys.executable, "-m", "cogworker", "stats"],
        env=env,
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert from_file.returncode == 0, from_file.stderr
