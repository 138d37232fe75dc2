"""The layout of the console's own store (its own Redis / DB number): every key name, and
how its JSON values are packed, here and nowhere else.

The store of the console, not of the queues: snapshots, series, the incident timeline,
collector state and health, alerts, replay jobs and Django caches, all under one prefix
(``CONSOLE_KEY_PREFIX``, ``opsdash`` by default). The queues' keys are ``mqcore.keys``.
A pass takes the key names it uses in one value per concern (:meth:`ConsoleKeys.latest`,
:meth:`ConsoleKeys.series_keys`).

Values other than the snapshot (collector state, health, alerts, incident events) are
JSON packed by orjson (:func:`dumps`, :func:`loads`); the snapshot is msgspec's
(:func:`mqcore.models.snapshot_encode`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["DEFAULT_CONSOLE_PREFIX", "ConsoleKeys", "LatestKeys", "SeriesKeys", "dumps", "loads"]

DEFAULT_CONSOLE_PREFIX = "opsdash"
MEMBER_SEPARATOR = "\x1f"  # between the metric and the entity of a series index member


@dataclass(frozen=True, slots=True)
class ConsoleKeys:
    """Keys of the console's own store (its own Redis / DB number)."""

    prefix: str = DEFAULT_CONSOLE_PREFIX

    def snapshot(self, cluster: str) -> str:
        return f"{self.prefix}:snapshot:{cluster}"

    def snapshot_version(self, cluster: str) -> str:
        """A few bytes that change with every stored snapshot (readers cache the decoded one)."""
        return f"{self.prefix}:snapshot-version:{cluster}"

    def latest(self, cluster: str, slot: int | None = None) -> LatestKeys:
        """Every key name of ``cluster``'s latest values in one value (a pass's open and
        write take them once), with the claim of ``slot`` when one is given."""
        return LatestKeys(
            snapshot=self.snapshot(cluster),
            snapshot_version=self.snapshot_version(cluster),
            state=self.collector_state(cluster),
            lease_state=self.lease_state(cluster),
            state_version=self.collector_state_version(cluster),
            health=self.collector_health(),
            alerts=self.alerts(cluster),
            alert_history=self.alert_history(cluster),
            alert_mute=self.alert_mute(cluster, ""),
            slot_claim=self.slot_claim(cluster, slot) if slot is not None else "",
        )

    def series(self, cluster: str, tier: str, metric: str, entity: str) -> str:
        return f"{self.prefix}:ts:{cluster}:{tier}:{metric}:{entity}"

    def series_prefix(self, cluster: str, tier: str, metric: str) -> str:
        """The series keys of ``metric`` are this followed by the entity (a pass makes a
        quarter of a million of them: one concatenation each)."""
        return self.series(cluster, tier, metric, "")

    def series_entry(self, cluster: str, tier: str, key: str) -> tuple[str, str]:
        """(metric, entity) of a key :meth:`series` made (a metric name holds no colon)."""
        metric, _, entity = key[len(self.series(cluster, tier, "", "")) - 1 :].partition(":")
        return metric, entity

    def series_keys(self, cluster: str, tiers: Iterable[str], metrics: Iterable[str]) -> SeriesKeys:
        """Every key name a series write of ``cluster`` uses, in one value (the writer fills
        a quarter of a million keys a pass: it completes these prefixes with the entity)."""
        tiers, metrics = list(tiers), list(dict.fromkeys(metrics))
        return SeriesKeys(
            index=self.series_index(cluster),
            prefix={(t, m): self.series_prefix(cluster, t, m) for t in tiers for m in metrics},
            member={m: self.series_member(m, "") for m in metrics},
            metric_at={t: len(self.series_prefix(cluster, t, "")) - 1 for t in tiers},
            separator=MEMBER_SEPARATOR,
        )

    def series_index(self, cluster: str) -> str:
        """The series index: members :meth:`series_member`, scored by their last write (the
        series script indexes keys itself, from the key after the tier:
        ``dashboard/scripts/append_points.lua``)."""
        return f"{self.prefix}:ts-index:{cluster}"

    @staticmethod
    def series_member(metric: str, entity: str) -> str:
        """The series index member of (metric, entity)."""
        return f"{metric}{MEMBER_SEPARATOR}{entity}"

    def slot_claim(self, cluster: str, slot: int) -> str:
        return f"{self.prefix}:slot:{cluster}:{slot}"

    def incidents(self, cluster: str) -> str:
        """The incident timeline of a cluster: a sorted set of events scored by time."""
        return f"{self.prefix}:incidents:{cluster}"

    def incidents_topic(self, cluster: str, topic: str) -> str:
        """The same events of one topic (an index, so a topic's timeline reads only its own)."""
        return f"{self.prefix}:incidents-topic:{cluster}:{topic}"

    def lease_state(self, cluster: str) -> str:
        return f"{self.prefix}:lease-state:{cluster}"

    def denied_audit(self, user: str, minute: int) -> str:
        """Refused writes of ``user`` in one minute (epoch s // 60): the audit rows'
        rate limit (``dashboard.services.audit.denied``)."""
        return f"{self.prefix}:denied-audit:{minute}:{user}"

    def collector_state(self, cluster: str) -> str:
        """Collector memory between passes: status windows, DLQ history, tiers, run id."""
        return f"{self.prefix}:collector-state:{cluster}"

    def collector_state_version(self, cluster: str) -> str:
        """Changes with every write of the collector and lease state (read in pieces)."""
        return f"{self.prefix}:collector-state-version:{cluster}"

    def collector_health(self) -> str:
        return f"{self.prefix}:collector-health"

    def alerts(self, cluster: str) -> str:
        return f"{self.prefix}:alerts:{cluster}"

    def alert_history(self, cluster: str) -> str:
        return f"{self.prefix}:alert-history:{cluster}"

    def alert_mute(self, cluster: str, alert_id: str) -> str:
        """A silence or acknowledgement of one alert id; it expires with its duration."""
        return f"{self.prefix}:alert-mute:{cluster}:{alert_id}"

    def beat_leader(self) -> str:
        """The lock the leading beat holds (its token, with a TTL; dashboard.beat)."""
        return f"{self.prefix}:beat-leader"

    def replay_job(self, job_id: str) -> str:
        return f"{self.prefix}:replay-job:{job_id}"

    def cache_prefix(self, name: str) -> str:
        """The key prefix of a Django cache kept in the console store (Django appends
        ``:<version>:<key>``), e.g. the rate limits' counters."""
        return f"{self.prefix}:cache:{name}"


@dataclass(frozen=True, slots=True)
class SeriesKeys:
    """The key names of one cluster's series writes (:meth:`ConsoleKeys.series_keys`), as
    prefixes completed with an entity: ``prefix[tier, metric] + entity`` is the series key
    (:meth:`ConsoleKeys.series`), ``member[metric] + entity`` its index member."""

    index: str  # the series index of the cluster
    prefix: dict[tuple[str, str], str]  # (tier, metric) -> its series keys up to the entity
    member: dict[str, str]  # metric -> its index members up to the entity
    metric_at: dict[str, int]  # tier -> where the metric starts in its keys (the script indexes)
    separator: str  # between the metric and the entity of an index member


@dataclass(frozen=True, slots=True)
class LatestKeys:
    """The key names of one cluster's latest values (:meth:`ConsoleKeys.latest`):
    ``alert_mute + alert_id`` is the key of an alert's silence (:meth:`ConsoleKeys.alert_mute`)."""

    snapshot: str
    snapshot_version: str
    state: str  # the collector state
    lease_state: str
    state_version: str  # of the collector and lease state, written together
    health: str  # the collector health of every cluster (a hash; this cluster's field)
    alerts: str
    alert_history: str
    alert_mute: str  # the silences' keys up to the alert id
    slot_claim: str  # the claim of the pass's slot ("": none asked for)


def loads(raw: bytes | None) -> Any:
    """The decoded value, None for a missing key."""
    return orjson.loads(raw) if raw else None


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; non-string keys as strings, other values JSON cannot hold as
    their ``str``.

    orjson's non-string-key option costs a third more on a value whose keys are all
    strings: it is only used when a key is not one (same bytes either way)."""
    try:
        return orjson.dumps(value, default=str)
    except orjson.JSONEncodeError:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
