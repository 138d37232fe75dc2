"""The console store (its own Redis): latest snapshot, time series, lease timeline, health, alerts.

Pages read it through the module functions (``snapshot_get``, ``series_get`` ...),
the collector writes it through :class:`ConsoleStore`. One collector pass is one
MULTI/EXEC, so a worker killed mid-pass leaves the previous pass intact and the
next pass restores everything.

Time series: one Redis string per (cluster, tier, metric, entity) of packed
12-byte points (``<Id``: uint32 epoch seconds, float64 value), APPENDed each
pass. Tiers: ``raw`` (every pass), ``1m`` and ``10m`` (the first sample of each
bucket: counters stay exact, gauges are sampled). A series longer than its
retention by 10% is rewritten with only the points inside the retention, so
bytes per series per day are 12 x points per day and the total is bounded by
retention x series; series of vanished entities are deleted after the longest
retention.
"""

from __future__ import annotations

import json
import math
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

from dashboard.clusters import cluster_names, console_keys, console_redis
from mqcore.keys import ConsoleKeys

__all__ = [
    "POINT",
    "TIERS",
    "ConsoleStore",
    "Tier",
    "alerts_list",
    "collector_health_get",
    "lease_timeline_get",
    "series_get",
    "series_many",
    "snapshot_get",
]

POINT = struct.Struct("<Id")
_SEP = "\x1f"
APPEND_BATCH = 500
_APPEND_LUA = (Path(__file__).parent / "scripts" / "append_points.lua").read_text()


@dataclass(frozen=True, slots=True)
class Tier:
    name: str
    bucket_s: int  # 0: every pass
    retention_s: int


def tiers() -> tuple[Tier, ...]:
    return (
        Tier("raw", 0, int(settings.SERIES_RAW_RETENTION_S)),
        Tier("1m", 60, int(settings.SERIES_1M_RETENTION_S)),
        Tier("10m", 600, int(settings.SERIES_10M_RETENTION_S)),
    )


TIERS = ("raw", "1m", "10m")


def _loads(raw: bytes | None) -> Any:
    return json.loads(raw) if raw else None


_DECODED: dict[tuple[str, str], tuple[bytes, Any]] = {}


def _loads_cached(slot: tuple[str, str], raw: bytes | None) -> Any:
    """Decode collector state once per value: the same worker usually wrote it last pass.

    Callers must treat the result as read-only below its top level.
    """
    if not raw:
        return None
    hit = _DECODED.get(slot)
    if hit is not None and hit[0] == raw:
        return hit[1]
    value = json.loads(raw)
    _DECODED[slot] = (raw, value)
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def decode_points(data: bytes | None) -> list[tuple[int, float]]:
    if not data:
        return []
    usable = len(data) - len(data) % POINT.size
    return [(ts * 1000, value) for ts, value in POINT.iter_unpack(data[:usable])]


def trim_points(
    points: Sequence[tuple[int, float]], now_ms: int, retention_s: int, max_points: int
) -> list[tuple[int, float]]:
    """The points inside the retention, at most ``max_points`` (newest kept)."""
    cutoff = now_ms - retention_s * 1000
    return [(t, v) for t, v in points if t >= cutoff][-max_points:]


def tier_for(since_ms: int, now_ms: int, all_tiers: Sequence[Tier]) -> Tier:
    """The finest tier whose retention still covers ``since_ms``."""
    for tier in all_tiers:
        if since_ms >= now_ms - tier.retention_s * 1000:
            return tier
    return all_tiers[-1]


def encode_points(points: Iterable[tuple[int, float]]) -> bytes:
    return b"".join(POINT.pack(ts_ms // 1000, value) for ts_ms, value in points)


class ConsoleStore:
    """Reads and writes of the console store for one Redis client and key prefix."""

    def __init__(self, client: redis.Redis, keys: ConsoleKeys) -> None:
        self.r: Any = client  # bytes replies
        self._append_script = client.register_script(_APPEND_LUA)
        self.keys = keys

    # --- reads --------------------------------------------------------------
    def snapshot_get(self, cluster: str) -> dict[str, Any] | None:
        value: dict[str, Any] | None = _loads(self.r.get(self.keys.snapshot(cluster)))
        return value

    def _tier_for(self, since_ms: int, now_ms: int) -> Tier:
        return tier_for(since_ms, now_ms, tiers())

    def series_get(
        self,
        cluster: str,
        metric: str,
        entity: str,
        *,
        since_ms: int,
        until_ms: int | None = None,
    ) -> list[tuple[int, float]]:
        now = int(time.time() * 1000)
        tier = self._tier_for(since_ms, now)
        data = self.r.get(self.keys.series(cluster, tier.name, metric, entity))
        until = until_ms if until_ms is not None else now + 3_600_000
        return [(t, v) for t, v in decode_points(data) if since_ms <= t <= until]

    def series_many(
        self, cluster: str, metric: str, entities: Sequence[str], *, since_ms: int
    ) -> dict[str, list[tuple[int, float]]]:
        now = int(time.time() * 1000)
        tier = self._tier_for(since_ms, now)
        pipe = self.r.pipeline(transaction=False)
        for entity in entities:
            pipe.get(self.keys.series(cluster, tier.name, metric, entity))
        replies = pipe.execute()
        return {
            entity: [(t, v) for t, v in decode_points(data) if t >= since_ms]
            for entity, data in zip(entities, replies, strict=True)
        }

    def lease_timeline_get(
        self, cluster: str, topic: str, *, limit: int = 200
    ) -> list[dict[str, Any]]:
        rows = self.r.lrange(self.keys.lease_timeline(cluster, topic), 0, max(0, limit - 1))
        return [json.loads(row) for row in rows]

    def collector_health_get(self) -> dict[str, dict[str, Any]]:
        raw = self.r.hgetall(self.keys.collector_health())
        return {k.decode(): json.loads(v) for k, v in raw.items()}

    def alerts_list(
        self, clusters: Sequence[str], *, include_resolved: bool = False
    ) -> list[dict[str, Any]]:
        pipe = self.r.pipeline(transaction=False)
        for cluster in clusters:
            pipe.hvals(self.keys.alerts(cluster))
            if include_resolved:
                pipe.lrange(self.keys.alert_history(cluster), 0, -1)
        replies = pipe.execute()
        open_alerts: list[dict[str, Any]] = []
        resolved: list[dict[str, Any]] = []
        step = 2 if include_resolved else 1
        for i in range(0, len(replies), step):
            open_alerts.extend(json.loads(v) for v in replies[i])
            if include_resolved:
                resolved.extend(json.loads(v) for v in replies[i + 1])
        open_alerts.sort(key=lambda a: (a["severity"] != "critical", -int(a["opened_at_ms"])))
        resolved.sort(key=lambda a: -int(a.get("resolved_at_ms") or 0))
        return open_alerts + resolved

    # --- collector side -----------------------------------------------------
    def slot_claim(self, cluster: str, slot: int, token: str, ttl_s: int) -> bool:
        """Claim (cluster, slot) for ``token``; True also when ``token`` already holds it.

        A re-run of the same task (same token) may proceed; once the pass has
        written, the claim says ``done`` and nobody writes that slot again.
        """
        key = self.keys.slot_claim(cluster, slot)
        if self.r.set(key, token, nx=True, ex=ttl_s):
            return True
        holder = self.r.get(key)
        return holder is not None and holder.decode() == token

    def state_get(self, cluster: str) -> dict[str, Any]:
        """Everything a pass needs from the previous one, in one round trip."""
        pipe = self.r.pipeline(transaction=False)
        pipe.get(self.keys.collector_state(cluster))
        pipe.get(self.keys.lease_state(cluster))
        pipe.hget(self.keys.collector_health(), cluster)
        pipe.hgetall(self.keys.alerts(cluster))
        state, lease_state, health, alerts = pipe.execute()
        return {
            "state": dict(_loads_cached(("state", cluster), state) or {}),
            "lease_state": _loads_cached(("lease", cluster), lease_state),
            "health": _loads(health) or {},
            "alerts": {k.decode(): json.loads(v) for k, v in alerts.items()},
        }

    def pass_write(
        self,
        cluster: str,
        *,
        now_ms: int,
        snapshot: Mapping[str, Any] | None,
        state: Mapping[str, Any],
        lease_state: Mapping[str, Any] | None,
        lease_events: Mapping[str, list[dict[str, Any]]],
        points: Mapping[str, Sequence[tuple[str, str, float]]],
        health: Mapping[str, Any],
        alerts_open: Mapping[str, dict[str, Any]],
        alerts_resolved: Sequence[dict[str, Any]],
        slot: int | None,
    ) -> None:
        """Write one pass: series points first, then everything else in one MULTI/EXEC.

        ``points`` maps a tier name to (metric, entity, value) triples for this pass.
        A worker killed in between leaves at most this pass's points without its
        snapshot; the claim is marked done only with the snapshot.
        """
        keys = self.keys
        timeline_max = int(settings.LEASE_TIMELINE_MAX)
        history_max = int(settings.ALERT_HISTORY_MAX)
        lengths = self._append_points(cluster, points, now_ms)
        pipe = self.r.pipeline(transaction=True)
        if snapshot is not None:
            pipe.set(keys.snapshot(cluster), _dumps(snapshot))
        state_raw = _dumps(state).encode()
        pipe.set(keys.collector_state(cluster), state_raw)
        if lease_state is not None:
            lease_raw = _dumps(lease_state).encode()
            pipe.set(keys.lease_state(cluster), lease_raw)
        for topic, events in lease_events.items():
            if events:
                key = keys.lease_timeline(cluster, topic)
                pipe.lpush(key, *[_dumps(e) for e in events])
                pipe.ltrim(key, 0, timeline_max - 1)
        pipe.hset(keys.collector_health(), cluster, _dumps(health))
        alerts_key = keys.alerts(cluster)
        pipe.delete(alerts_key)
        if alerts_open:
            pipe.hset(alerts_key, mapping={k: _dumps(v) for k, v in alerts_open.items()})
        if alerts_resolved:
            pipe.lpush(keys.alert_history(cluster), *[_dumps(a) for a in alerts_resolved])
            pipe.ltrim(keys.alert_history(cluster), 0, history_max - 1)
        if slot is not None:
            pipe.set(keys.slot_claim(cluster, slot), "done", xx=True, keepttl=True)
        pipe.execute()
        _DECODED[("state", cluster)] = (state_raw, state)
        if lease_state is not None:
            _DECODED[("lease", cluster)] = (lease_raw, lease_state)
        self._trim(lengths, now_ms)
        self._forget_vanished(cluster, now_ms)

    def _append_points(
        self, cluster: str, points: Mapping[str, Sequence[tuple[str, str, float]]], now_ms: int
    ) -> dict[str, tuple[int, Tier]]:
        """APPEND this pass's points (Lua, 500 series per call); returns key -> (bytes, tier)."""
        tier_map = {t.name: t for t in tiers()}
        stamp = now_ms // 1000
        index: dict[str, float] = {}
        series_keys: list[str] = []
        series_tiers: list[Tier] = []
        packed: list[bytes] = []
        for tier_name, triples in points.items():
            for metric, entity, value in triples:
                if value is None or math.isnan(value):
                    continue
                series_keys.append(self.keys.series(cluster, tier_name, metric, entity))
                series_tiers.append(tier_map[tier_name])
                packed.append(POINT.pack(stamp, float(value)))
                index[f"{metric}{_SEP}{entity}"] = now_ms
        if not series_keys:
            return {}
        pipe = self.r.pipeline(transaction=False)
        for start in range(0, len(series_keys), APPEND_BATCH):
            end = start + APPEND_BATCH
            # scripts/append_points.lua: KEYS = series keys, ARGV = one packed point each
            self._append_script(keys=series_keys[start:end], args=packed[start:end], client=pipe)
        pipe.zadd(self.keys.series_index(cluster), index)
        replies = pipe.execute()
        sizes = [int(n) for reply in replies[:-1] for n in reply]
        return {
            key: (size, tier)
            for key, size, tier in zip(series_keys, sizes, series_tiers, strict=True)
        }

    def _trim(self, lengths: Mapping[str, tuple[int, Tier]], now_ms: int) -> None:
        interval = max(1, int(settings.COLLECT_INTERVAL_S))
        over: list[tuple[str, Tier, int]] = []
        for key, (length, tier) in lengths.items():
            cadence = tier.bucket_s or interval
            max_points = tier.retention_s // cadence + 1
            slack = max(2, max_points // 10)
            if length // POINT.size > max_points + slack:
                over.append((key, tier, max_points))
        if not over:
            return
        pipe = self.r.pipeline(transaction=False)
        for key, _, _ in over:
            pipe.get(key)
        datas = pipe.execute()
        pipe = self.r.pipeline(transaction=False)
        for (key, tier, max_points), data in zip(over, datas, strict=True):
            kept = trim_points(decode_points(data), now_ms, tier.retention_s, max_points)
            pipe.set(key, encode_points(kept))
        pipe.execute()

    def _forget_vanished(self, cluster: str, now_ms: int) -> None:
        """Drop series (all tiers) of entities not written for longer than the longest retention."""
        horizon = now_ms - max(t.retention_s for t in tiers()) * 1000
        index_key = self.keys.series_index(cluster)
        stale = self.r.zrangebyscore(index_key, "-inf", horizon, start=0, num=500)
        if not stale:
            return
        pipe = self.r.pipeline(transaction=True)
        for member in stale:
            metric, entity = member.decode().split(_SEP, 1)
            for tier in TIERS:
                pipe.delete(self.keys.series(cluster, tier, metric, entity))
        pipe.zrem(index_key, *stale)
        pipe.execute()

    def health_write(self, cluster: str, health: Mapping[str, Any]) -> None:
        self.r.hset(self.keys.collector_health(), cluster, _dumps(health))

    def alerts_write(
        self,
        cluster: str,
        alerts_open: Mapping[str, dict[str, Any]],
        alerts_resolved: Sequence[dict[str, Any]],
        state: Mapping[str, Any],
    ) -> None:
        """Alert state of a failed pass (no snapshot), in one transaction."""
        pipe = self.r.pipeline(transaction=True)
        pipe.delete(self.keys.alerts(cluster))
        if alerts_open:
            pipe.hset(
                self.keys.alerts(cluster), mapping={k: _dumps(v) for k, v in alerts_open.items()}
            )
        if alerts_resolved:
            pipe.lpush(self.keys.alert_history(cluster), *[_dumps(a) for a in alerts_resolved])
            pipe.ltrim(self.keys.alert_history(cluster), 0, int(settings.ALERT_HISTORY_MAX) - 1)
        pipe.set(self.keys.collector_state(cluster), _dumps(state))
        pipe.execute()


def default_store() -> ConsoleStore:
    return ConsoleStore(console_redis(), console_keys())


# --- the read contract pages code against --------------------------------------


def snapshot_get(cluster: str) -> dict[str, Any] | None:
    return default_store().snapshot_get(cluster)


def series_get(
    cluster: str, metric: str, entity: str, *, since_ms: int, until_ms: int | None = None
) -> list[tuple[int, float]]:
    return default_store().series_get(cluster, metric, entity, since_ms=since_ms, until_ms=until_ms)


def series_many(
    cluster: str, metric: str, entities: Sequence[str], *, since_ms: int
) -> dict[str, list[tuple[int, float]]]:
    return default_store().series_many(cluster, metric, entities, since_ms=since_ms)


def lease_timeline_get(cluster: str, topic: str, *, limit: int = 200) -> list[dict[str, Any]]:
    return default_store().lease_timeline_get(cluster, topic, limit=limit)


def collector_health_get() -> dict[str, dict[str, Any]]:
    return default_store().collector_health_get()


def alerts_list(
    cluster: str | None = None, *, include_resolved: bool = False
) -> list[dict[str, Any]]:
    clusters = [cluster] if cluster is not None else cluster_names()
    return default_store().alerts_list(clusters, include_resolved=include_resolved)
