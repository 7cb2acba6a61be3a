"""Bad settings and bad jobs raise clear, specific errors."""

from __future__ import annotations

import pytest
import tasks

import cogworker


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"concurrency": 0}, ["concurrency", "0"]),
        ({"concurrency": "ten"}, ["concurrency", "'ten'"]),
        ({"fetch": "turbo"}, ["fetch", "turbo"]),
        ({"queues": ["a,zero"]}, ["queues", "a,zero"]),
        ({"shutdown_timeout": -1}, ["shutdown_timeout", "-1"]),
        ({"redis_url": "http://x"}, ["redis_url", "http://x"]),
        ({"bogus": 1}, ["bogus"]),
    ],
)
def test_config_errors_name_the_setting_and_value(settings, words) -> None:
    with pytest.raises(cogworker.ConfigError) as info:
        cogworker.configure(**settings)
    for word in words:
        assert word in str(info.value)
    assert isinstance(info.value, cogworker.Error)


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
