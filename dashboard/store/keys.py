"""Every key name of the console's own store (its own Redis / DB number), and nowhere else.

The store of the console, not of the queues: snapshots, series, the incident timeline,
collector state and health, alerts, replay jobs and Django caches, all under one prefix
(``CONSOLE_KEY_PREFIX``, ``opsdash`` by default). The queues' keys are ``mqcore.keys``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DEFAULT_CONSOLE_PREFIX", "ConsoleKeys", "SeriesKeys"]

DEFAULT_CONSOLE_PREFIX = "opsdash"


@dataclass(frozen=True, slots=True)
class ConsoleKeys:
    """Keys of the console's own store (its own Redis / DB number)."""

    prefix: str = DEFAULT_CONSOLE_PREFIX

    def snapshot(self, cluster: str) -> str:
        return f"{self.prefix}:snapshot:{cluster}"

    def snapshot_version(self, cluster: str) -> str:
        """A few bytes that change with every stored snapshot (readers cache the decoded one)."""
        return f"{self.prefix}:snapshot-version:{cluster}"

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
        )

    def series_index(self, cluster: str) -> str:
        """The series index: members :meth:`series_member`, scored by their last write (the
        series script indexes keys itself, from the key after the tier:
        ``dashboard/scripts/append_points.lua``)."""
        return f"{self.prefix}:ts-index:{cluster}"

    @staticmethod
    def series_member(metric: str, entity: str) -> str:
        """The series index member of (metric, entity)."""
        return f"{metric}\x1f{entity}"

    @staticmethod
    def series_of_member(member: bytes) -> tuple[str, str]:
        """(metric, entity) of a series index member."""
        metric, entity = member.decode().split("\x1f", 1)
        return metric, entity

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
