"""``manage.py collect --once``: last line ``collected <c> in <N> ms``."""

from __future__ import annotations

import re
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from dashboard.clusters import console_store
from mqcore.config import MQConfig
from mqcore.producer import Producer
from mqcore.topics import Topics

pytestmark = [pytest.mark.redis]


def _run(*args: str) -> list[str]:
    out = StringIO()
    call_command("collect", *args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_collect_once_prints_and_stores(mq_config: MQConfig, console_r: redis.Redis) -> None:
    Topics(mq_config).create("orders", 3)
    Producer(mq_config).send("orders", "x", key="a")
    lines = _run("--once", "--cluster", "default")
    assert re.fullmatch(r"collected default in \d+ ms", lines[-1])
    assert any("1 topics, 3 partitions, 1 groups" in line and "stored" in line for line in lines)
    assert console_store().snapshot_get("default") is not None
    # same slot again: still gathers and prints, but does not store a second sample
    again = _run("--once")
    assert any("not stored" in line for line in again)
    assert re.fullmatch(r"collected default in \d+ ms", again[-1])


def test_unknown_cluster_is_a_clear_error(console_r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="unknown cluster 'nope'"):
        _run("--once", "--cluster", "nope")


def test_unreachable_cluster_fails_with_last_line(settings, console_r: redis.Redis) -> None:
    from dashboard.clusters import reset_caches
    from scripts.embedded import find_free_port

    settings.MQ_CLUSTERS = {"down": {"url": f"redis://:hunter2@127.0.0.1:{find_free_port()}/0"}}
    reset_caches()
    out = StringIO()
    try:
        with pytest.raises(CommandError, match="failed"):
            call_command("collect", "--once", stdout=out)
    finally:
        reset_caches()
    lines = out.getvalue().strip().splitlines()
    assert "FAILED" in lines[0]
    assert "hunter2" not in out.getvalue()
    assert re.fullmatch(r"collected down in \d+ ms", lines[-1])
    assert console_store().collector_health_get()["down"]["ok"] is False
