"""The console store against real Redis: one pass written atomically, read by the page contract."""

from __future__ import annotations

import json
import time

import pytest
import redis
from django.test import override_settings

from dashboard.clusters import cluster_names, console_keys, console_redis, console_store
from dashboard.collectors.incidents import event, lease_events
from dashboard.collectors.passes import collect_cluster
from dashboard.store import POINT, ConsoleStore
from mqcore.config import MQConfig
from mqcore.models import ClusterSnapshot
from mqcore.producer import Producer
from mqcore.topics import Topics

pytestmark = [pytest.mark.redis]


@pytest.fixture
def cs(console_r: redis.Redis) -> ConsoleStore:
    return ConsoleStore(console_redis(), console_keys())


def _write(cs: ConsoleStore, now_ms: int, value: float, **extra: object) -> None:
    kwargs: dict = {
        "snapshot": ClusterSnapshot(taken_at_ms=now_ms, topics=[]),
        "state": {},
        "lease_state": None,
        "incidents": [],
        "points": {"raw": [("lag", "orders", value)]},
        "health": {"ok": True},
        "alerts_open": {},
        "alerts_resolved": [],
        "slot": None,
    }
    kwargs.update(extra)
    cs.pass_write("c1", now_ms=now_ms, **kwargs)


def test_series_round_trip_and_tier_choice(cs: ConsoleStore) -> None:
    now = int(time.time()) * 1000
    for i in range(5):
        _write(cs, now - (4 - i) * 1000, float(i))
    got = console_store().series_get("c1", "lag", "orders", since_ms=now - 10_000)
    assert got == [(now - (4 - i) * 1000, float(i)) for i in range(5)]
    assert console_store().series_get(
        "c1", "lag", "orders", since_ms=now - 2000, until_ms=now - 1000
    ) == [
        (now - 2000, 2.0),
        (now - 1000, 3.0),
    ]
    many = console_store().series_many("c1", "lag", ["orders", "absent"], since_ms=now - 1000)
    assert many == {"orders": [(now - 1000, 3.0), (now, 4.0)], "absent": []}
    # older than the raw retention: answered from the 1-min tier (no bucket closed yet),
    # followed by the raw points of the open bucket
    assert console_store().series_get("c1", "lag", "orders", since_ms=now - 2 * 86_400_000) == got


@override_settings(SERIES_RAW_RETENTION_S=10, COLLECT_INTERVAL_S=1)
def test_retention_trims_stored_bytes(cs: ConsoleStore, console_r: redis.Redis) -> None:
    now = int(time.time()) * 1000
    for i in range(40):
        _write(cs, now - (39 - i) * 1000, float(i))
    raw = console_r.get(console_keys().series("c1", "raw", "lag", "orders"))
    assert raw is not None
    # 11 points fit the retention, + slack of 2 before a rewrite
    assert len(raw) // POINT.size <= 13
    assert console_store().series_get("c1", "lag", "orders", since_ms=now - 5000)[-1] == (now, 39.0)


@override_settings(COLLECT_INTERVAL_S=10)
def test_closed_bucket_rolls_up_gauge_max_and_counter_last(
    cs: ConsoleStore, console_r: redis.Redis
) -> None:
    minute = (int(time.time()) // 60 - 3) * 60_000  # a closed 1-min bucket, 3 minutes ago
    for i, (lag, total) in enumerate([(3.0, 100.0), (9.0, 2.0**53), (4.0, 2.0**53 + 2)]):
        points = {"raw": [("lag", "orders", lag), ("produced_total", "orders", total)]}
        _write(cs, minute + i * 10_000, lag, points=points)
    later = {"raw": [("lag", "orders", 1.0), ("produced_total", "orders", 7.0)]}
    _write(cs, minute + 60_000, 1.0, points=later, rollups={"1m": minute // 60_000})
    one_min = console_keys().series("c1", "1m", "lag", "orders")
    assert len(console_r.get(one_min)) == POINT.size  # one point for the closed bucket
    since = minute - 2 * 86_400_000  # older than raw: the 1-min tier, then the open bucket
    assert console_store().series_get("c1", "lag", "orders", since_ms=since) == [
        (minute, 9.0),
        (minute + 60_000, 1.0),
    ]
    assert console_store().series_get("c1", "produced_total", "orders", since_ms=since) == [
        (minute, 2.0**53 + 2),  # counters: the last value, exact
        (minute + 60_000, 7.0),
    ]


def test_slot_claim_once_per_slot_but_same_token_may_redo(cs: ConsoleStore) -> None:
    assert cs.slot_claim("c1", 42, "task-a", 30)
    assert not cs.slot_claim("c1", 42, "task-b", 30)
    assert cs.slot_claim("c1", 42, "task-a", 30)  # a re-delivered task may redo its slot
    _write(cs, int(time.time() * 1000), 1.0, slot=42)
    assert not cs.slot_claim("c1", 42, "task-a", 30)  # once written, nobody writes it again


def test_lease_timeline_newest_first_and_capped(cs: ConsoleStore) -> None:
    now = int(time.time() * 1000)
    with override_settings(INCIDENT_TIMELINE_MAX=3):
        for i in range(5):
            change = {"at_ms": now + i, "group": "g", "partition": 0, "event": "acquired",
                      "owner": f"c{i}", "previous_owner": None, "epoch": i}  # fmt: skip
            _write(cs, now + i, 1.0, incidents=lease_events({"orders": [change]}))
    rows = console_store().lease_timeline_get("c1", "orders")
    assert [r["owner"] for r in rows] == ["c4", "c3", "c2"]
    assert console_store().lease_timeline_get("c1", "orders", limit=1)[0]["epoch"] == 4


def test_incidents_bounded_by_retention_and_paged_by_cursor(
    cs: ConsoleStore, console_r: redis.Redis
) -> None:
    now = int(time.time() * 1000)
    old = event(now - 48 * 3600 * 1000, "dlq", "ancient", topic="orders")
    batch = [event(now, "status", f"s{i}", topic="orders" if i % 2 else "") for i in range(7)]
    with override_settings(SERIES_1M_RETENTION_S=3600, SERIES_10M_RETENTION_S=3600,
                           SERIES_RAW_RETENTION_S=3600):  # fmt: skip
        _write(cs, now, 1.0, incidents=[old, *batch])
        ttl = console_r.ttl(console_keys().incidents_topic("c1", "orders"))
    assert 0 < ttl <= 3600
    first = cs.incidents_get("c1", limit=4)
    assert [e["text"] for e in first.events] == ["s6", "s5", "s4", "s3"]  # same ms: by sequence
    rest = cs.incidents_get("c1", limit=4, before=first.next_before)
    assert [e["text"] for e in rest.events] == ["s2", "s1", "s0"]
    assert rest.next_before is None
    topic = cs.incidents_get("c1", topic="orders", limit=10)
    assert [e["text"] for e in topic.events] == ["s5", "s3", "s1"]
    assert cs.incidents_get("c1", match=lambda e: e["text"] == "s0").events[0]["id"]


def test_collect_pass_writes_contract_fields(mq_config: MQConfig, console_r: redis.Redis) -> None:
    Topics(mq_config).create("orders", 2, groups=["billing", "audit"])
    producer = Producer(mq_config)
    for i in range(5):
        producer.send("orders", f"m{i}", key=str(i))
    result = collect_cluster("default")
    assert result.stored
    assert console_store().snapshot_get("default") is not None
    snap = json.loads(console_r.get(console_keys().snapshot("default")))  # the stored fields
    assert snap["cluster"] == "default"
    assert {"taken_at_ms", "elapsed_ms", "topics", "pipelines", "redis_run_id"} <= set(snap)
    topic = snap["topics"][0]
    for field in ("status", "status_reason", "lag", "lag_ms", "pending", "oldest_pending_ms",
                  "dlq_growth"):  # fmt: skip
        assert field in topic
    assert topic["lag"] == 10  # 5 entries x 2 groups
    for group in topic["groups"]:
        assert group["status"] in {"OK", "WARN", "STALL", "STOP", "ERR", "UNKNOWN"}
        assert all("status_reason" in p for p in group["partitions"])
    health = console_store().collector_health_get()["default"]
    assert health["ok"] is True
    assert health["runs"] == 1
    assert health["redis_run_id"] == snap["redis_run_id"]
    assert console_store().series_get(
        "default", "lag", "orders/billing", since_ms=0
    )  # group series
    assert console_store().alerts_list(cluster_names()) == []
    # a second run in the same slot is refused (R17); a forced one (no claim) goes through
    assert not collect_cluster("default").stored
    assert collect_cluster("default", claim=False).stored


@pytest.mark.parametrize(
    ("waits_in", "metric", "entity", "fails_in"),
    [
        # the topic and group points go with the statuses: in the store while leases are diffed
        ("lease_diff", "length", "orders", "incident_diff"),
        # the minute's partition sample goes with the snapshot: before statuses are evaluated
        ("snapshot_enrich", "partition_lag", "orders/billing/0", "snapshot_enrich"),
    ],
)
def test_points_are_appended_while_the_pass_runs_on(
    mq_config: MQConfig,
    console_r: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    waits_in: str,
    metric: str,
    entity: str,
    fails_in: str,
) -> None:
    """The store appends a pass's points while the pass goes on; a pass that fails after
    sending them leaves the store connection clean (replies read)."""
    import dashboard.collectors.derive as passes  # the pass's derive stage

    Topics(mq_config).create("orders", 2, groups=["billing"])
    Producer(mq_config).send("orders", "m", key="k")
    key = console_keys().series("default", "raw", metric, entity)
    seen: list[bool] = []
    step = getattr(passes, waits_in)

    def waiting(*args, **kwargs):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 5
        while not console_r.exists(key) and time.monotonic() < deadline:
            time.sleep(0.005)
        seen.append(bool(console_r.exists(key)))
        return step(*args, **kwargs)

    monkeypatch.setattr(passes, waits_in, waiting)
    assert collect_cluster("default", claim=False).stored
    assert seen == [True]
    assert console_store().series_get("default", metric, entity, since_ms=0)
    monkeypatch.setattr(passes, waits_in, step)

    def broken(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    console_r.flushdb()  # a fresh store: the next pass samples the partitions again
    original = getattr(passes, fails_in)
    monkeypatch.setattr(passes, fails_in, broken)
    with pytest.raises(RuntimeError, match="boom"):
        collect_cluster("default", claim=False)
    assert console_r.exists(key)  # sent before the failure, its replies read
    monkeypatch.setattr(passes, fails_in, original)
    assert collect_cluster("default", claim=False).stored


def test_redis_restart_without_persistence_is_reported(
    mq_config: MQConfig, r: redis.Redis, console_r: redis.Redis
) -> None:
    Topics(mq_config).create("orders", 1)
    assert collect_cluster("default", claim=False).stored
    state_key = console_keys().collector_state("default")
    import json

    state = json.loads(console_r.get(state_key))
    state["run_id"] = "0" * 40  # as if the last pass saw another server instance
    console_r.set(state_key, json.dumps(state))
    console_r.set(console_keys().collector_state_version("default"), "1:edited")  # as writers do
    r.flushdb()  # the restarted server came back empty: groups are gone
    assert collect_cluster("default", claim=False).stored
    health = console_store().collector_health_get()["default"]
    assert health["redis_restart"]["missing_groups"] == ["orders/default-group"]
    alerts = console_store().alerts_list(["default"])
    assert [a["rule"] for a in alerts] == ["redis_restart"]
    assert not r.exists(mq_config.keys.partition("orders", 0))  # never recreated


def test_window_reads_only_its_tail_and_falls_back_when_passes_came_early(
    cs: ConsoleStore, console_r: redis.Redis, settings
) -> None:
    from dashboard.store.points import GAUGE, pack_point

    settings.COLLECT_INTERVAL_S = 10
    now_s = int(time.time())
    key = console_keys().series("c1", "raw", "lag", "orders")
    # five and a half hours at the collector's cadence, then a burst of early passes
    steady = [(now_s - 20_000 + 10 * i, float(i)) for i in range(1990)]
    burst = [(now_s - 60 + i, 5000.0 + i) for i in range(61)]
    console_r.set(key, b"".join(pack_point(GAUGE, t, v) for t, v in steady + burst))
    hour = console_store().series_get("c1", "lag", "orders", since_ms=(now_s - 3600) * 1000)
    expected = [(t * 1000, v) for t, v in steady + burst if t >= now_s - 3600]
    assert hour == expected  # the burst needed the whole-series fallback
    minute = console_store().series_get("c1", "lag", "orders", since_ms=(now_s - 30) * 1000)
    assert minute == [(t * 1000, v) for t, v in burst if t >= now_s - 30]


def test_snapshot_decoded_once_per_version(cs: ConsoleStore) -> None:
    now = int(time.time()) * 1000
    _write(cs, now, 1.0)
    first = cs.snapshot_get("c1")
    assert first == ClusterSnapshot(taken_at_ms=now, topics=[])
    assert cs.snapshot_get("c1") is first  # same version: the decoded snapshot is reused
    _write(cs, now + 1000, 2.0)
    second = cs.snapshot_get("c1")
    assert second == ClusterSnapshot(taken_at_ms=now + 1000, topics=[])
    assert second is not first
