"""The console store (its own Redis): latest snapshot, time series, lease timeline, health, alerts.

Pages read it through the module functions (``snapshot_get``, ``series_get`` ...),
the collector writes it through :class:`ConsoleStore`. One collector pass is one
MULTI/EXEC, so a worker killed mid-pass leaves the previous pass intact and the
next pass restores everything.

Time series: one Redis string per (cluster, tier, metric, entity) of packed
points, APPENDed each pass: gauges take 8 bytes (``<If``: uint32 epoch seconds,
float32 value), ``*_total`` counters 12 (``<Id``: float64, exact to 2^53).
Tiers: ``raw`` (every pass), ``1m`` and ``10m``: when a bucket closes, the pass
rolls the raw points of that bucket up into one point stamped with the bucket
start - the MAX for gauges (peaks matter), the LAST value for counters. A series
longer than its retention by 10% is rewritten with only the points inside the
retention, so bytes per series per day are the point size x points per day and
the total is bounded by retention x series (see ``series_bytes``); series of
vanished entities are deleted after the longest retention.
"""

from __future__ import annotations

import json
import math
import struct
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

from dashboard.clusters import cluster_names, console_keys, console_redis
from mqcore.keys import ConsoleKeys

__all__ = [
    "COUNTER",
    "GAUGE",
    "POINT",
    "TIERS",
    "ConsoleStore",
    "Tier",
    "alerts_list",
    "collector_health_get",
    "lease_timeline_get",
    "point_struct",
    "rollup_value",
    "series_bytes",
    "series_get",
    "series_many",
    "snapshot_get",
]

GAUGE = struct.Struct("<If")  # uint32 epoch seconds, float32 value
COUNTER = struct.Struct("<Id")  # uint32 epoch seconds, float64 value: exact counts
POINT = GAUGE  # the common case; counters use COUNTER (see point_struct)
_F32_MAX = 3.4028234663852886e38
_SEP = "\x1f"
APPEND_BATCH = 500
_APPEND_LUA = (Path(__file__).parent / "scripts" / "append_points.lua").read_text()


def point_struct(metric: str) -> struct.Struct:
    """How points of ``metric`` are packed: float64 for ``*_total`` counters, else float32."""
    return COUNTER if metric.endswith("_total") else GAUGE


def _pack(point: struct.Struct, stamp_s: int, value: float) -> bytes:
    if point is GAUGE and not -_F32_MAX <= value <= _F32_MAX:
        value = math.copysign(_F32_MAX, value)
    return point.pack(stamp_s, value)


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


# per store client and key prefix: series key strings per (cluster, tier), clusters indexed
_CLIENT_CACHES: weakref.WeakKeyDictionary[Any, dict[str, tuple[dict[Any, Any], set[str]]]] = (
    weakref.WeakKeyDictionary()
)


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
    # check_circular off: our values are trees (a third faster on a 2 MB snapshot)
    return json.dumps(value, separators=(",", ":"), default=str, check_circular=False)


def decode_points(data: bytes | None, point: struct.Struct = POINT) -> list[tuple[int, float]]:
    """(epoch ms, value) pairs of a stored series; a torn tail is ignored."""
    if not data:
        return []
    usable = len(data) - len(data) % point.size
    return [(ts * 1000, value) for ts, value in point.iter_unpack(data[:usable])]


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


def encode_points(points: Iterable[tuple[int, float]], point: struct.Struct = POINT) -> bytes:
    return b"".join(_pack(point, ts_ms // 1000, value) for ts_ms, value in points)


def series_bytes(all_tiers: Sequence[Tier], interval_s: int, metric: str) -> dict[str, int]:
    """Steady-state bytes of one series per tier (retention / cadence x point size)."""
    size = point_struct(metric).size
    return {t.name: t.retention_s // (t.bucket_s or interval_s) * size for t in all_tiers}


def rollup_value(metric: str, values: Sequence[float]) -> float:
    """One coarse point for a bucket's raw values: MAX of a gauge, LAST of a counter."""
    return values[-1] if point_struct(metric) is COUNTER else max(values)


class ConsoleStore:
    """Reads and writes of the console store for one Redis client and key prefix."""

    def __init__(self, client: redis.Redis, keys: ConsoleKeys) -> None:
        self.r: Any = client  # bytes replies
        self._append_script = client.register_script(_APPEND_LUA)
        self.keys = keys
        # per client, not per store: the collector makes a store per pass
        per_client = _CLIENT_CACHES.get(client)
        if per_client is None:
            per_client = _CLIENT_CACHES[client] = {}
        caches = per_client.setdefault(keys.prefix, ({}, set()))
        self._series_keys: dict[tuple[str, str], dict[tuple[str, str], str]] = caches[0]
        self._indexed: set[str] = caches[1]  # clusters whose series index was refreshed

    # --- reads --------------------------------------------------------------
    def snapshot_get(self, cluster: str) -> dict[str, Any] | None:
        value: dict[str, Any] | None = _loads(self.r.get(self.keys.snapshot(cluster)))
        return value

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
        until = until_ms if until_ms is not None else now + 3_600_000
        got = self._series_read(cluster, metric, [entity], since_ms, now)[0]
        return [(t, v) for t, v in got if t <= until]

    def series_many(
        self, cluster: str, metric: str, entities: Sequence[str], *, since_ms: int
    ) -> dict[str, list[tuple[int, float]]]:
        now = int(time.time() * 1000)
        got = self._series_read(cluster, metric, entities, since_ms, now)
        return dict(zip(entities, got, strict=True))

    def _series_read(
        self, cluster: str, metric: str, entities: Sequence[str], since_ms: int, now: int
    ) -> list[list[tuple[int, float]]]:
        """Points since ``since_ms`` from the finest tier covering it.

        A coarse tier only has the buckets that closed; the raw points after its
        last bucket (the open one) are appended, so charts reach the present.
        """
        all_tiers = tiers()
        tier = tier_for(since_ms, now, all_tiers)
        point = point_struct(metric)
        pipe = self.r.pipeline(transaction=False)
        tail = 0
        if tier.bucket_s:
            interval = max(1, int(settings.COLLECT_INTERVAL_S))
            tail = (2 * tier.bucket_s // interval + 2) * point.size
        for entity in entities:
            pipe.get(self.keys.series(cluster, tier.name, metric, entity))
            if tail:
                pipe.getrange(self.keys.series(cluster, "raw", metric, entity), -tail, -1)
        replies = pipe.execute()
        out = []
        step = 2 if tail else 1
        for i in range(0, len(replies), step):
            pts = decode_points(replies[i], point)
            if tail:
                after = pts[-1][0] + tier.bucket_s * 1000 if pts else -1
                pts += [(t, v) for t, v in decode_points(replies[i + 1], point) if t >= after]
            out.append([(t, v) for t, v in pts if t >= since_ms])
        return out

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
        rollups: Mapping[str, int] | None = None,
    ) -> None:
        """Write one pass: series points first, then everything else in one MULTI/EXEC.

        ``points`` maps a tier name to (metric, entity, value) triples for this pass.
        ``rollups`` maps a coarse tier to the bucket (index) that closed with this
        pass: the raw points of that bucket of every series in ``points["raw"]``
        become one point of the tier (see :func:`rollup_value`).
        A worker killed in between leaves at most this pass's points without its
        snapshot; the claim is marked done only with the snapshot.
        """
        keys = self.keys
        timeline_max = int(settings.LEASE_TIMELINE_MAX)
        history_max = int(settings.ALERT_HISTORY_MAX)
        index = bool(rollups) or cluster not in self._indexed
        # the points go out first; the store runs them while this process encodes
        appending = self._append_points(cluster, points, now_ms, index=index)
        try:
            snapshot_raw = _dumps(snapshot) if snapshot is not None else None
            state_raw = _dumps(state).encode()
            lease_raw = _dumps(lease_state).encode() if lease_state is not None else b""
            lengths = appending.finish()  # applied before the transaction below
        except BaseException:
            appending.abandon()
            raise
        if rollups:
            raw = points.get("raw") or ()
            lengths.update(self._rollup(cluster, [(m, e) for m, e, _ in raw], rollups))
        pipe = self.r.pipeline(transaction=True)
        if snapshot_raw is not None:
            pipe.set(keys.snapshot(cluster), snapshot_raw)
        pipe.set(keys.collector_state(cluster), state_raw)
        if lease_state is not None:
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

    def _series_key(self, cluster: str, tier: str, metric: str, entity: str) -> str:
        cache = self._series_keys.setdefault((cluster, tier), {})
        key = cache.get((metric, entity))
        if key is None:
            key = cache[metric, entity] = self.keys.series(cluster, tier, metric, entity)
        return key

    def _append_points(
        self,
        cluster: str,
        points: Mapping[str, Sequence[tuple[str, str, float]]],
        now_ms: int,
        *,
        index: bool = True,
    ) -> _Appending:
        """Send this pass's APPENDs (Lua, 500 series per call); ``.finish()`` -> the series
        near their cap: key -> (bytes, tier, format).

        ``index``: also refresh the series index (last write per metric/entity);
        once a minute is plenty for a 90-day horizon.
        """
        tier_map = {t.name: t for t in tiers()}
        stamp = now_ms // 1000
        series_keys: list[str] = []
        series_tiers: list[tuple[Tier, struct.Struct]] = []
        packed: list[bytes] = []
        members: list[str] = []
        formats: dict[str, tuple[struct.Struct, Any]] = {}
        for tier_name, triples in points.items():
            tier = tier_map[tier_name]
            cache = self._series_keys.setdefault((cluster, tier_name), {})
            if len(cache) > 200_000:
                cache.clear()
            for metric, entity, value in triples:
                if value is None or value != value:  # NaN
                    continue
                fmt = formats.get(metric)
                if fmt is None:
                    point = point_struct(metric)
                    fmt = formats[metric] = (point, point.pack)
                key = cache.get((metric, entity))
                if key is None:
                    key = cache[metric, entity] = self.keys.series(
                        cluster, tier_name, metric, entity
                    )
                series_keys.append(key)
                series_tiers.append((tier, fmt[0]))
                try:
                    packed.append(fmt[1](stamp, value))
                except (OverflowError, struct.error):
                    packed.append(_pack(fmt[0], stamp, float(value)))
                if index:
                    members.append(f"{metric}{_SEP}{entity}")
        return self._append_packed(cluster, series_keys, series_tiers, packed, members, now_ms)

    def _append_packed(
        self,
        cluster: str,
        series_keys: list[str],
        series_tiers: list[tuple[Tier, struct.Struct]],
        packed: list[bytes],
        members: list[str],
        now_ms: int,
    ) -> _Appending:
        from mqcore.snapshot import send_commands

        script = self._append_script
        cmds: list[tuple[Any, ...]] = []
        for start in range(0, len(series_keys), APPEND_BATCH):
            end = start + APPEND_BATCH
            # scripts/append_points.lua: KEYS = series keys, ARGV = one packed point each
            keys = series_keys[start:end]
            cmds.append(("EVALSHA", script.sha, len(keys), *keys, *packed[start:end]))
        if members:
            index: list[Any] = ["ZADD", self.keys.series_index(cluster)]
            for member in dict.fromkeys(members):
                index.append(now_ms)
                index.append(member)
            cmds.append(tuple(index))
            self._indexed.add(cluster)
        sent = send_commands(self.r, cmds, what="console store") if cmds else None
        return _Appending(self, sent, cmds, series_keys, series_tiers, bool(members))

    def _rollup(
        self, cluster: str, series: Sequence[tuple[str, str]], closed: Mapping[str, int]
    ) -> dict[str, tuple[int, Tier, struct.Struct]]:
        """One point per series for each closed bucket, from the raw points inside it."""
        from mqcore.snapshot import run_commands

        tier_map = {t.name: t for t in tiers()}
        interval = max(1, int(settings.COLLECT_INTERVAL_S))
        series = list(dict.fromkeys(series))
        if not series:
            return {}
        longest = max(tier_map[name].bucket_s for name in closed)
        n = longest // interval + 2  # raw points that can fall into the longest bucket
        cmds: list[tuple[Any, ...]] = []
        for metric, entity in series:
            size = point_struct(metric).size
            key = self._series_key(cluster, "raw", metric, entity)
            cmds.append(("GETRANGE", key, -n * size, -1))
        tails = run_commands(self.r, cmds, what="console store")
        series_keys: list[str] = []
        series_tiers: list[tuple[Tier, struct.Struct]] = []
        packed: list[bytes] = []
        for name, bucket in closed.items():
            tier = tier_map[name]
            lo, hi = bucket * tier.bucket_s * 1000, (bucket + 1) * tier.bucket_s * 1000
            for (metric, entity), tail in zip(series, tails, strict=True):
                if isinstance(tail, Exception) or not tail:
                    continue
                point = point_struct(metric)
                values = [v for t, v in decode_points(tail, point) if lo <= t < hi]
                if values:
                    series_keys.append(self._series_key(cluster, name, metric, entity))
                    series_tiers.append((tier, point))
                    packed.append(_pack(point, lo // 1000, rollup_value(metric, values)))
        return self._append_packed(cluster, series_keys, series_tiers, packed, [], 0).finish()

    @staticmethod
    def _limits(tier: Tier, point: struct.Struct) -> tuple[int, int]:
        """(points kept, bytes at which a series is rewritten) for one tier and point size."""
        interval = max(1, int(settings.COLLECT_INTERVAL_S))
        max_points = tier.retention_s // (tier.bucket_s or interval) + 1
        slack = max(2, max_points // 10)
        return max_points, (max_points + slack + 1) * point.size

    def _trim(self, lengths: Mapping[str, tuple[int, Tier, struct.Struct]], now_ms: int) -> None:
        """Rewrite the series (of ``lengths``: key -> bytes, tier, format) past their cap."""
        limits: dict[tuple[Tier, struct.Struct], tuple[int, int]] = {}
        over: list[tuple[str, Tier, int, struct.Struct]] = []
        for key, (length, tier, point) in lengths.items():
            limit = limits.get((tier, point))
            if limit is None:
                limit = limits[tier, point] = self._limits(tier, point)
            if length >= limit[1]:
                over.append((key, tier, limit[0], point))
        if not over:
            return
        pipe = self.r.pipeline(transaction=False)
        for key, _, _, _ in over:
            pipe.get(key)
        datas = pipe.execute()
        pipe = self.r.pipeline(transaction=False)
        for (key, tier, max_points, point), data in zip(over, datas, strict=True):
            pts = decode_points(data, point)
            kept = trim_points(pts, now_ms, tier.retention_s, max_points)
            pipe.set(key, encode_points(kept, point))
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


class _Appending:
    """Series APPENDs sent to the store; :meth:`finish` reads the new lengths."""

    def __init__(
        self,
        store: ConsoleStore,
        sent: Any,
        cmds: list[tuple[Any, ...]],
        series_keys: list[str],
        series_tiers: list[tuple[Tier, struct.Struct]],
        indexed: bool,
    ) -> None:
        self.store, self.sent, self.cmds = store, sent, cmds
        self.series_keys, self.series_tiers, self.indexed = series_keys, series_tiers, indexed

    def abandon(self) -> None:
        if self.sent is not None:
            self.sent.abandon()

    def finish(self) -> dict[str, tuple[int, Tier, struct.Struct]]:
        """key -> (bytes, tier, format) of the series near their cap (see ``_trim``)."""
        from mqcore.snapshot import run_commands

        if self.sent is None:
            return {}
        r = self.store.r
        replies = list(self.sent.result())
        for pos, reply in enumerate(replies):
            if isinstance(reply, redis.ResponseError) and "NOSCRIPT" in str(reply):
                r.script_load(_APPEND_LUA)  # the store was restarted or flushed
                replies[pos] = run_commands(r, [self.cmds[pos]], what="console store")[0]
            if isinstance(replies[pos], Exception):
                raise replies[pos]
        sizes = [n for reply in replies[: len(replies) - self.indexed] for n in reply]
        if not sizes:
            return {}
        # only series near their cap matter to _trim: skip the rest in one C-speed pass
        tiers_ = self.series_tiers
        floor = min(self.store._limits(t, p)[1] for t, p in set(tiers_))
        keys = self.series_keys
        return {
            keys[i]: (sizes[i], *tiers_[i]) for i in [i for i, n in enumerate(sizes) if n >= floor]
        }


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
