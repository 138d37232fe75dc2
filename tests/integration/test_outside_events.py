"""Actions outside the console (mqcore.outside_events): who, what and why, in a bounded
stream; one entry per event however often it is sent; bad input writes nothing; the CLI
records its position moves, trims, replays and purges."""

from __future__ import annotations

import json

import pytest
import redis

from mqcore.cli import main
from mqcore.config import MQConfig
from mqcore.errors import InvalidArgumentError
from mqcore.outside_events import OutsideEvents
from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.dlq_support import add_letters

pytestmark = pytest.mark.redis


def test_record_and_read_back(mq_config: MQConfig) -> None:
    events = OutsideEvents(mq_config)
    first = events.record(
        "position.set",
        topic="orders",
        group="billing",
        who="alice",
        why="reprocess after the fix",
        what={"target": {"kind": "earliest"}, "skipped": 0},
    )
    events.record("dlq.purge", topic="orders", who="bob", what={"purged": 3})
    newest, oldest = events.recent()
    assert (newest.action, newest.who, newest.what, newest.group) == (
        "dlq.purge",
        "bob",
        {"purged": 3},
        None,
    )
    assert oldest.id == first
    assert (oldest.topic, oldest.group, oldest.why) == (
        "orders",
        "billing",
        "reprocess after the fix",
    )
    assert oldest.what == {"target": {"kind": "earliest"}, "skipped": 0}
    assert oldest.source == "mqcore"
    assert oldest.at_ms > 0
    assert [e.id for e in events.recent(before=newest.id)] == [first]


def test_same_token_is_written_once(mq_config: MQConfig, r: redis.Redis) -> None:
    events = OutsideEvents(mq_config)
    ids = {events.record("dlq.purge", topic="t", who="w", token="tok-1") for _ in range(3)}
    assert len(ids) == 1
    assert r.xlen(mq_config.keys.outside_events()) == 1


def test_stream_is_bounded(mq_config: MQConfig, r: redis.Redis) -> None:
    events = OutsideEvents(mq_config, max_events=10)
    for i in range(400):
        events.record("topic.trim", topic="t", who="cron", what={"i": i})
    assert r.xlen(mq_config.keys.outside_events()) <= 110  # MAXLEN ~: whole nodes of 100


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"action": "topic.delete"}, "unknown action"),
        ({"who": ""}, "who"),
        ({"why": "x" * 1001}, "at most 1000"),
        ({"why": "two\nlines"}, "one line"),
        ({"what": {"blob": "x" * 9000}}, "8192 bytes"),
        ({"source": "console"}, "unknown source"),
    ],
)
def test_bad_input_writes_nothing(
    mq_config: MQConfig, r: redis.Redis, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"action": "dlq.purge", "topic": "t", "who": "w", **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        OutsideEvents(mq_config).record(**args)  # type: ignore[arg-type]
    assert not r.exists(mq_config.keys.outside_events())


def cli(url: str, *args: str) -> int:
    return main(["--redis-url", url, *args])


def test_cli_records_moves_trims_replays_and_purges(
    mq_config: MQConfig, redis_url: str, r: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    Topics(mq_config).create("orders", 1)
    Producer(mq_config).send("orders", "x", key="k")
    (letter,) = add_letters(r, mq_config, "orders", 1, partitions=1)
    move = ["group", "set-position", "orders", "--group", "default-group", "--to", "latest"]
    assert cli(redis_url, *move, "--yes", "--by", "alice", "--reason", "skip the bad batch") == 0
    assert cli(redis_url, "topic", "trim", "orders", "--maxlen", "10", "--reason", "space") == 0
    assert cli(redis_url, "dlq", "replay", "orders", letter, "--by", "bob") == 0
    assert cli(redis_url, "dlq", "purge", "orders", "--yes", "--reason", "all handled") == 0
    capsys.readouterr()
    purge, replay, trim, moved = OutsideEvents(mq_config).recent()
    assert (moved.action, moved.who, moved.why, moved.group) == (
        "position.set",
        "alice",
        "skip the bad batch",
        "default-group",
    )
    assert moved.source == "mqcore-cli"
    assert moved.what["direction"] == "skip"
    assert moved.what["skipped"] == 1
    assert (trim.action, trim.why, trim.what["maxlen"]) == ("topic.trim", "space", 10)
    assert (replay.action, replay.who, replay.what["dlq_id"]) == ("dlq.replay", "bob", letter)
    assert (purge.action, purge.why, purge.what) == ("dlq.purge", "all handled", {"purged": 1})
    assert trim.who  # the login of whoever ran it


def test_cli_refuses_a_reason_it_cannot_record_before_moving(
    mq_config: MQConfig, redis_url: str, r: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    Topics(mq_config).create("orders", 1)
    Producer(mq_config).send("orders", "x", key="k")
    key = mq_config.keys.partition("orders", 0)
    before = r.xinfo_groups(key)[0]["last-delivered-id"]
    move = ["group", "set-position", "orders", "--group", "default-group", "--to", "latest"]
    assert cli(redis_url, *move, "--yes", "--reason", "x" * 2000) == 2
    assert "at most 1000" in capsys.readouterr().err
    assert r.xinfo_groups(key)[0]["last-delivered-id"] == before
    assert not r.exists(mq_config.keys.outside_events())


def test_cli_lists_them_newest_first(
    mq_config: MQConfig, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    events = OutsideEvents(mq_config)
    first = events.record("dlq.purge", topic="orders", who="alice", why="handled")
    events.record("topic.trim", topic="audit", who="cron", what={"maxlen": 5})
    assert cli(redis_url, "--json", "outside-events", "--limit", "1") == 0
    (newest,) = json.loads(capsys.readouterr().out)["events"]
    assert (newest["action"], newest["who"], newest["what"]) == (
        "topic.trim",
        "cron",
        {"maxlen": 5},
    )
    assert cli(redis_url, "outside-events", "--before", newest["id"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "AT", "ACTION", "TOPIC", "GROUP", "WHO", "WHY"]
    assert lines[1].split()[0] == first
    assert lines[1].split()[2:] == ["dlq.purge", "orders", "alice", "handled"]
    assert cli(redis_url, "outside-events", "--before", "nope") == 2
    assert "id" in capsys.readouterr().err
