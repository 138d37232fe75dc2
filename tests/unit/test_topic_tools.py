"""Pure parts of the topic tools: the memory probe's rotation and growth baseline, the
per-partition produced counter, the skew measure, the CSV writer and export filenames."""

from __future__ import annotations

import csv
import io

from dashboard.collectors.derive import (
    memory_of,
    memory_pass,
    partition_points,
    partition_produced,
)
from dashboard.services.exports import export_filename
from mqcore.admin.partitions import skew
from mqcore.admin.probes import MinuteProbe, memory_pick
from mqcore.csvsafe import csv_lines
from tests.snapshot_parts import builtins, snapshot_of


def test_memory_pick_rotates_within_the_budget() -> None:
    topics = [("a", 4), ("b", 4), ("c", 1), ("d", 10)]
    assert memory_pick(topics, 0, 8) == ([("a", 4), ("b", 4)], 2)
    assert memory_pick(topics, 2, 8) == ([("c", 1)], 3)  # d would pass the budget
    assert memory_pick(topics, 3, 8) == ([("d", 10)], 0)  # always one, even over budget
    assert memory_pick(topics, 9, 100) == ([("b", 4), ("c", 1), ("d", 10), ("a", 4)], 1)
    assert memory_pick([], 5, 8) == ([], 0)


def test_memory_pass_baseline_failures_and_vanished_topics() -> None:
    snap = snapshot_of(
        {"topics": [{"topic": "a", "partitions": 2}, {"topic": "b", "partitions": 1}]}
    )
    previous = {"gone": {"bytes": 1.0}, "b": {"bytes": 7.0, "at_ms": 1}}
    measured = [(t.topic, t.partitions) for t in snap.topics]

    def fetch(topics: list[tuple[str, int]]) -> dict[str, list[int | None]]:
        assert topics == [("a", 2), ("b", 1)]
        return {"a": [100, None], "b": [None]}

    picked, cursor = memory_pick(measured, 0, 10)
    probe = MinuteProbe(picked=picked, cursor=cursor, memory=fetch(picked))
    history = {"a": [(1_000, 40.0), (2_000, 60.0)]}
    done = memory_pass(snap, previous, probe, history, now_ms=5_000)
    assert done.points == [("memory_bytes", "a", 100.0)]
    assert done.state["a"] == {
        "bytes": 100.0,
        "at_ms": 5_000,
        "from_bytes": 40.0,
        "from_ms": 1_000,
        "partitions": [100, None],
    }
    assert done.state["b"] == {"bytes": 7.0, "at_ms": 1}  # no stream answered: kept
    assert "gone" not in done.state

    picked, cursor = memory_pick(measured, 0, 1)
    down = MinuteProbe(picked=picked, cursor=cursor, memory_error=ConnectionError("down"))
    failed = memory_pass(snap, done.state, down, {}, now_ms=6_000)
    assert failed.errors == ["1 topics: ConnectionError"]
    assert failed.state == done.state
    assert failed.cursor == 1
    topic_memory = memory_of(done.state, snap.topics[0].topic)
    assert topic_memory is not None
    assert builtins(topic_memory)["bytes"] == 100.0


def test_partition_produced_prefers_exact_group_counts() -> None:
    topic = {
        "topic": "t",
        "partitions": 3,
        "partition_lengths": [5, 7, 9],
        "groups": [
            {
                "group": "g",
                "partitions": [
                    {"partition": 0, "lag": 2, "entries_read": 10},
                    {"partition": 1, "lag": None, "entries_read": 3},
                ],
            },
            {"group": "h", "partitions": [{"partition": 0, "lag": 0, "entries_read": 11}]},
        ],
    }
    snap = snapshot_of({"topics": [topic]})
    assert partition_produced(snap.topics[0]) == [12.0, 7.0, 9.0]
    points = partition_points(snap)
    assert ("partition_produced_total", "t/2", 9.0) in points


def test_skew_levels() -> None:
    assert skew([10.0, 10.0, 10.0]) == {
        "max": 10.0,
        "mean": 10.0,
        "ratio": 1.0,
        "partition": 0,
        "level": "even",
    }
    hot = skew([1.0, None, 9.0, 2.0])
    assert hot is not None
    assert (hot["partition"], hot["level"]) == (2, "hot")
    uneven = skew([6.0, 4.0, 2.0])
    assert uneven is not None
    assert uneven["level"] == "uneven"
    assert skew([5.0, None]) is None
    zero = skew([0.0, 0.0])
    assert zero is not None
    assert zero["ratio"] is None


def test_csv_lines_neutralise_formulas_and_quote() -> None:
    text = "".join(csv_lines(["a", "b"], [["=1+1", 'x,"y"'], ["@SUM", None], ["-2", 3]]))
    assert list(csv.reader(io.StringIO(text))) == [
        ["a", "b"],
        ["'=1+1", 'x,"y"'],
        ["'@SUM", ""],
        ["'-2", "3"],
    ]


def test_export_filename_keeps_safe_characters_and_names_the_limit() -> None:
    assert export_filename("pending", "orders", "g 1/../x", "csv", 10) == (
        "pending-orders-g_1_.._x-max10.csv"
    )
    assert export_filename("dlq", "o", None, "json", 5) == "dlq-o-max5.json"


def test_mark_skew_marks_the_hot_row_only() -> None:
    from mqcore.admin.partitions import mark_skew

    rows = [{"length": 90, "memory_bytes": 10}, {"length": 5, "memory_bytes": 9},
            {"length": 5, "memory_bytes": None}]  # fmt: skip
    skews = mark_skew(rows, ("length", "memory_bytes"))
    assert [(s or {}).get("level") for s in skews.values()] == ["hot", "even"]
    assert [r.get("hot_length") for r in rows] == [True, None, None]
    assert not any("hot_memory_bytes" in r for r in rows)


def test_cli_prints_control_characters_as_escapes() -> None:
    from mqcore.cli.common import human_bytes, plain, table

    text = "a\x1b[2Jb\nc\td\x07\x9b\u202ee\u2066f é ✓"
    assert plain(text) == "a\\x1b[2Jb\\nc\\td\\x07\\x9b\\u202ee\\u2066f é ✓"
    shown = table([{"key": text}], ["key"])
    assert not {"\x1b", "\u202e"} & set(shown)
    assert (human_bytes(None), human_bytes(680), human_bytes(10_124)) == ("-", "680 B", "9.9 KiB")
    assert human_bytes(3 * 2**30) == "3.0 GiB"
