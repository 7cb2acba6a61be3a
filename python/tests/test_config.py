"""Bad settings and bad jobs raise clear, specific errors."""

from __future__ import annotations

import pytest
import tasks

import cogworker


@pytest.mark.parametrize(
    ("settings", "field", "value"),
    [
        ({"concurrency": 0}, "concurrency", "0"),
        ({"concurrency": "ten"}, "concurrency", '"ten"'),
        ({"concurrency": object}, "concurrency", "<class 'object'>"),
        ({"fetch": "turbo"}, "fetch", '"turbo"'),
        ({"queues": ["a,zero"]}, "queues", '"a,zero"'),
        ({"shutdown_timeout": -1}, "shutdown_timeout", "-1"),
        ({"redis_url": "http://x"}, "redis_url", "http://x"),
        ({"bogus": 1}, "setting", '"bogus"'),
    ],
)
def test_config_errors_name_the_setting_and_value(settings, field, value) -> None:
    with pytest.raises(cogworker.ConfigError) as info:
        cogworker.configure(**settings)
    assert (info.value.field, info.value.value) == (field, value)
    assert field in str(info.value) and value in str(info.value)
    assert isinstance(info.value, cogworker.Error)


def test_every_setting_is_reachable() -> None:
    # history_max and dead_max_jobs were reachable from no host language.
    config = cogworker._core.Config(history_max=5, dead_max_jobs=7, dead_timeout=60)
    read = [config.get(name) for name in ("history_max", "dead_max_jobs", "dead_timeout")]
    assert read == [5, 7, 60.0]
    assert cogworker._core.Config().get("concurrency") == 10


def test_non_json_args_are_refused_before_anything_is_written(configured) -> None:
    with pytest.raises(cogworker.InvalidJob, match="JSON"):
        tasks.echo.enqueue(object())
    with pytest.raises(cogworker.InvalidJob, match="class"):
        cogworker.Client().enqueue("", 1)
    assert configured.cli("DBSIZE") == "(integer) 0"


def test_unreachable_redis_raises_redis_error() -> None:
    from conftest import free_port

    client = cogworker.Client(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(cogworker.RedisError):
        client.enqueue("A")


def test_an_orphan_threshold_shorter_than_two_heartbeats_is_refused() -> None:
    cogworker._settings.reset()  # the default 5 s heartbeat, whatever ran before
    with pytest.raises(cogworker.ConfigError) as info:
        cogworker.configure(orphan_threshold=2)
    assert info.value.field == "orphan_threshold"
    assert "heartbeat_interval" in str(info.value)
    cogworker.configure(orphan_threshold=2, heartbeat_interval=0.5)  # fits
    cogworker._settings.reset()


def test_a_push_without_the_replicas_it_wants_raises_not_replicated(configured) -> None:
    """A durable push (min_replicas_acked): with no replica to confirm it,
    the push raises NotReplicated, a RedisError, and the job is queued."""
    cogworker.configure(min_replicas_acked=1, replica_ack_timeout=0.1)
    with pytest.raises(cogworker.NotReplicated, match="0 of the 1 replica") as raised:
        cogworker.Client().enqueue("A")
    assert isinstance(raised.value, cogworker.RedisError)
    assert cogworker.Api().queue("default")["size"] == 1
