"""/metrics keeps its cardinality bounded: per-partition series stop at a budget."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from dashboard.metrics_export import PARTITION_FAMILIES, metrics_text
from mqcore.models import GroupLag
from tests.snapshot_parts import group, part, snapshot, topic

PARTITION_METRICS = {
    "redis_streaming_mq_console_lag",
    "redis_streaming_mq_console_lag_seconds",
    "redis_streaming_mq_console_pending",
    "redis_streaming_mq_console_oldest_pending_seconds",
    "redis_streaming_mq_console_partition_status",
}


def _group(name: str, status: str, partitions: int) -> GroupLag:
    parts = [
        part(p, 1, lag_ms=10, pending=0, oldest_pending_ms=5, status=status)
        for p in range(partitions)
    ]
    return group(name, parts, status=status)


def _series(text: str) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(dict(sample.labels))
    return out


def test_partition_series_stop_at_the_bound_worst_groups_first() -> None:
    snap = snapshot([topic("t", [
        _group("a-ok", "OK", 4), _group("b-stall", "STALL", 4), _group("c-warn", "WARN", 4),
    ], status="STALL")])  # fmt: skip
    budget = PARTITION_FAMILIES * 8  # room for two groups of four partitions
    series = _series(metrics_text({"c": snap}, {}, max_partition_series=budget).decode())
    per_partition = [s for name in PARTITION_METRICS for s in series.get(name, [])]
    assert len(per_partition) == budget
    assert {s["group"] for s in per_partition} == {"b-stall", "c-warn"}  # the OK one goes
    # group-level status stays for every group, so alerting on STALL/STOP never loses one
    statuses = series["redis_streaming_mq_console_group_status"]
    assert {s["group"] for s in statuses} == {"a-ok", "b-stall", "c-warn"}
    (dropped,) = series["opsdash_metrics_partition_series_dropped"]
    assert dropped == {"cluster": "c"}
    text = metrics_text({"c": snap}, {}, max_partition_series=budget).decode()
    assert f'opsdash_metrics_partition_series_dropped{{cluster="c"}} {4 * 5}.0' in text


def test_nothing_dropped_under_the_bound() -> None:
    snap = snapshot([topic("t", [_group("g", "OK", 3)])])
    text = metrics_text({"c": snap}, {}).decode()
    assert 'opsdash_metrics_partition_series_dropped{cluster="c"} 0.0' in text
    assert len(_series(text)["redis_streaming_mq_console_lag"]) == 3
