"""Alert rules over the stored snapshot and collector health, open/resolved states.

:func:`alert_conditions` and :func:`alert_transition` are pure: the collector
feeds them the enriched snapshot, the collector health and the previous alert
state, and stores what they return. An alert opens once its condition has held
for the rule's ``for`` time and resolves on the first pass where it no longer
holds. :func:`dashboard.collectors.notify.webhook_post` sends each open/close as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from dashboard.status import Status
from mqcore.admin.probes import MEMORY_SHARE_RISK, health_risks
from mqcore.clock import iso_from_ms
from mqcore.models import (
    ClusterSnapshot,
    GroupLag,
    PipelineSummary,
    RetentionRisk,
    TopicMemory,
    TopicSnapshot,
)

__all__ = [
    "RULES",
    "AlertThresholds",
    "AlertTransition",
    "Condition",
    "alert_conditions",
    "alert_scope",
    "alert_transition",
    "pass_alerts",
]

# rule -> what it watches (shown on the alerts page)
RULES = {
    "status": "a topic's group status not OK (WARN/STALL/STOP/ERR) for too long",
    "rewind": "a group's position went back (REWIND): at once, with what went back",
    "dlq_growth": "dead letters grew over the DLQ growth window",
    "oldest_pending": "the oldest pending entry is older than the limit",
    "checkpoint_age": "a pipeline's last completed checkpoint is too old",
    "checkpoint_failed": "a pipeline's latest checkpoint failed (none completed since)",
    "collector": "the collector failed on consecutive passes",
    "redis_restart": "Redis restarted without persistence: groups vanished",
    "retention_risk": "a retention rule that does not wait for a group is about to delete "
    "entries of its backlog (unread or pending)",
    "redis_eviction": "Redis may evict keys (maxmemory-policy not noeviction), or did",
    "redis_memory": f"Redis uses {MEMORY_SHARE_RISK:.0%} or more of its maxmemory",
    "memory_growth": "a topic's partition streams grew in memory (MEMORY USAGE) over the window",
    "master_change": "the MQ Redis's master changed (a failover): acked entries may be "
    "delivered again, positions may have gone back",
}
TOPIC_RULES = frozenset(
    {"status", "rewind", "dlq_growth", "oldest_pending", "retention_risk", "memory_growth"}
)  # entity: topic[/group]
CLUSTER_RULES = frozenset(
    {"collector", "redis_restart", "redis_eviction", "redis_memory", "master_change"}
)  # entity: the cluster's collector/Redis


def alert_scope(alert: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """What an alert row is about, for scope checks: ``("topic", name)``, ``("cluster",
    None)``, or None when the rule does not name a topic (pipelines: their topic is not
    in the alert; only users who see every topic see them)."""
    rule = str(alert.get("rule") or "")
    if rule in TOPIC_RULES:
        return "topic", str(alert.get("entity") or "").split("/", 1)[0]
    if rule in CLUSTER_RULES:
        return "cluster", None
    return None


# statuses the generic status rule alerts on: WARN and every worse one but REWIND,
# which has its own rule (at once, per partition that went back)
BAD_STATUSES = frozenset(
    s.value for s in Status if s.severity >= Status.WARN.severity and s is not Status.REWIND
)
_PIPELINE_IDLE = frozenset({Status.STOP, Status.STALL})


@dataclass(frozen=True, slots=True)
class AlertThresholds:
    status_for_ms: int = 300_000
    dlq_growth: int = 1  # letters gained over the window that open an alert
    oldest_pending_ms: int = 600_000
    checkpoint_age_ms: int = 900_000
    collector_failures: int = 3  # consecutive failed passes
    memory_growth_bytes: int = 256 * 2**20  # a topic's streams grew by this much ...
    memory_growth_share: float = 0.5  # ... and by this share of where they were


@dataclass(frozen=True, slots=True)
class Condition:
    """A rule that holds right now for one entity."""

    rule: str
    entity: str
    severity: str  # "warning" | "critical"
    message: str
    value: float | None = None

    @property
    def id(self) -> str:
        return f"{self.rule}:{self.entity}"


@dataclass
class AlertTransition:
    open: dict[str, dict[str, Any]]
    pending: dict[str, int]  # alert id -> since when its condition holds (not yet open)
    opened: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[dict[str, Any]] = field(default_factory=list)


def alert_conditions(
    snap: ClusterSnapshot | None, health: Mapping[str, Any], th: AlertThresholds
) -> list[Condition]:
    """Every condition that holds now; without a snapshot only collector/restart rules apply."""
    out: list[Condition] = []
    failures = int(health.get("consecutive_errors") or 0)
    if failures >= th.collector_failures:
        out.append(
            Condition(
                "collector",
                "collector",
                "critical",
                f"collector failed {failures} passes in a row: {health.get('error') or ''}",
                failures,
            )
        )
    restart = health.get("redis_restart")
    if restart:
        missing = restart.get("missing_groups") or []
        out.append(
            Condition(
                "redis_restart",
                "redis",
                "critical",
                # a count only: the alert reaches every viewer of the cluster and webhooks; the
                # groups are listed on the collectors page, filtered by what each viewer may see
                f"Redis restarted without persistence (run id changed); {len(missing)} groups "
                "missing (listed on the collectors page)",
                len(missing),
            )
        )
    out.extend(_redis_conditions(health.get("redis")))
    if snap is None:
        return out
    changed = _master_change_condition(snap)
    if changed is not None:
        out.append(changed)
    now = snap.taken_at_ms
    for topic in snap.topics:
        name = topic.topic
        for group in topic.groups:
            rewind = _rewind_condition(name, group)
            if rewind is not None:
                out.append(rewind)
            risk = group.retention_risk
            if risk:
                out.append(
                    Condition(
                        "retention_risk",
                        f"{name}/{group.group}",
                        "critical",
                        _risk_message(name, group.group, risk),
                        float(risk.lost_at_least),
                    )
                )
            status = group.status
            if status in BAD_STATUSES and not _pipeline_idle(group):
                out.append(
                    Condition(
                        "status",
                        f"{name}/{group.group}",
                        "critical" if status in ("STOP", "ERR") else "warning",
                        f"{name}/{group.group} is {status.value}: {group.status_reason}",
                    )
                )
        if topic.error and not topic.groups:
            out.append(
                Condition("status", name, "critical", f"{name} cannot be read: {topic.error}")
            )
        growth = topic.dlq_growth
        if growth is not None and growth >= th.dlq_growth:
            out.append(
                Condition(
                    "dlq_growth",
                    name,
                    "warning",
                    f"{name}: DLQ grew by {growth} (now {topic.dlq_length})",
                    float(growth),
                )
            )
        memory = topic.memory
        if memory is not None:
            grew = _memory_growth(name, memory, th)
            if grew is not None:
                out.append(grew)
        oldest = topic.oldest_pending_ms
        if oldest is not None and oldest > th.oldest_pending_ms:
            out.append(
                Condition(
                    "oldest_pending",
                    name,
                    "warning",
                    f"{name}: oldest pending entry idle {oldest // 1000} s "
                    f"(> {th.oldest_pending_ms // 1000} s)" + _oldest_pending_holder(topic),
                    float(oldest),
                )
            )
    for pipe in snap.pipelines:
        failed = _checkpoint_failed(pipe)
        if failed is not None:
            out.append(failed)
        last = pipe.last_completed_at_ms
        if last is None:
            continue
        age = now - int(last)
        if age > th.checkpoint_age_ms:
            out.append(
                Condition(
                    "checkpoint_age",
                    pipe.pipeline,
                    "warning",
                    f"pipeline {pipe.pipeline}: last completed checkpoint "
                    f"{age // 1000} s ago (> {th.checkpoint_age_ms // 1000} s)",
                    float(age),
                )
            )
    return out


def _redis_conditions(probe: Any) -> list[Condition]:
    """From the collector's last Redis health probe (once a minute)."""
    if isinstance(probe, Mapping) and probe.get("cluster"):
        return _cluster_node_conditions(probe)
    if not isinstance(probe, Mapping):
        return []
    out = []
    risks = health_risks(probe)
    policy, evicted = probe.get("maxmemory_policy"), int(probe.get("evicted_keys") or 0)
    if "eviction" in risks:
        out.append(
            Condition(
                "redis_eviction",
                "redis",
                "critical" if evicted else "warning",
                f"Redis maxmemory-policy is {policy}: streams can be evicted like any key"
                + (f"; {evicted} keys evicted since it started" if evicted else ""),
                float(evicted),
            )
        )
    share = probe.get("memory_share")
    if "memory" in risks and isinstance(share, int | float):
        out.append(
            Condition(
                "redis_memory",
                "redis",
                "critical",
                f"Redis uses {share:.0%} of its maxmemory",
                float(share),
            )
        )
    return out


def _cluster_node_conditions(probe: Mapping[str, Any]) -> list[Condition]:
    """The ``redis_eviction`` and ``redis_memory`` conditions of every Redis Cluster node
    (entity ``redis host:port``), by the rule of a single Redis."""
    out = []
    for node in probe.get("nodes") or []:
        if not isinstance(node, Mapping):
            continue
        name = str(node.get("node") or "?")
        for condition in _redis_conditions({**node, "cluster": False}):
            out.append(
                Condition(
                    condition.rule,
                    f"redis {name}",
                    condition.severity,
                    f"node {name}: {condition.message}",
                    condition.value,
                )
            )
    return out


def _memory_growth(topic: str, memory: TopicMemory, th: AlertThresholds) -> Condition | None:
    """A warning when the topic's streams grew by ``memory_growth_bytes`` and by
    ``memory_growth_share`` since the oldest sample of the growth window."""
    now, then = memory.bytes, memory.from_bytes
    grew = now - then
    if grew < th.memory_growth_bytes or grew < th.memory_growth_share * then:
        return None
    minutes = max(0, memory.at_ms - memory.from_ms) // 60_000
    return Condition(
        "memory_growth",
        topic,
        "warning",
        f"{topic}: partition streams grew by {grew / 2**20:.1f} MiB in {minutes} min "
        f"(now {now / 2**20:.1f} MiB)",
        float(grew),
    )


_NAME_MAX = 200  # a name in an alert's text is cut to this many characters


def _oldest_pending_holder(topic: TopicSnapshot) -> str:
    """Where the topic's oldest pending entry is: ``: entry <id> (group g, partition p),
    held by consumer <c>``; "" when the snapshot does not tell. Names are as Redis returned
    them (untrusted: pages escape them)."""
    found = None
    for group in topic.groups:
        for part in group.partitions:
            idle = part.oldest_pending_ms
            if idle is not None and (found is None or idle > found[0]):
                found = (idle, group.group, part)
    if found is None:
        return ""
    _, group_name, part = found
    entry, holder = part.oldest_pending_id, part.oldest_pending_consumer
    if not entry:
        return ""
    text = (
        f": entry {entry[:_NAME_MAX]} (group {group_name[:_NAME_MAX]}, partition {part.partition})"
    )
    if holder:
        text += f", held by consumer {holder[:_NAME_MAX]}"
    return text


def _pipeline_idle(group: GroupLag) -> bool:
    """A pipeline group that is STOP or STALL, or not moving while its window fills (WARN
    with windows not yet full: the rules' STALL before it is certain): no consumer holds it
    by design and the pipeline's checkpoint rules (age, failures) judge whether it is stuck."""
    if not group.pipeline:
        return False
    filling = group.status is Status.WARN and group.complete < 1.0
    return filling or group.status in _PIPELINE_IDLE


def _rewind_condition(topic: str, group: GroupLag) -> Condition | None:
    """A warning when any partition of ``group`` is REWIND, naming what went back."""
    rewind = Status.REWIND
    if group.status.severity < rewind.severity:  # the worst of its partitions: none went back
        return None
    back = [p for p in group.partitions if p.status is rewind]
    if not back:
        return None
    entity = f"{topic}/{group.group}"
    what = "; ".join(
        f"partition {p.partition}: {p.status_reason or 'position went back'}" for p in back[:5]
    )
    more = f" (and {len(back) - 5} more partitions)" if len(back) > 5 else ""
    return Condition(
        "rewind", entity, "warning", f"{entity} went back: {what}{more}", float(len(back))
    )


def _master_change_condition(snap: ClusterSnapshot) -> Condition | None:
    """While the collector holds a master change (``ALERT_RESTART_HOLD_S`` after it): what
    it undid, as counts (the groups and entries are listed on the collectors page)."""
    change = snap.master_change
    if not change:
        return None
    undone = []
    if change.rewound:
        undone.append(f"{len(change.rewound)} groups went back (REWIND)")
    if change.redelivered:
        some = "" if change.redelivered_exact else "at least "
        undone.append(f"{some}{change.redelivered} acked entries are pending again")
    return Condition(
        "master_change",
        "redis",
        "critical" if undone else "warning",
        f"the MQ Redis master changed ({change.reason})"
        + (f": {'; '.join(undone)}" if undone else ""),
        float(change.redelivered),
    )


def _checkpoint_failed(pipe: PipelineSummary) -> Condition | None:
    """A warning when the pipeline's latest checkpoint failed and none completed since."""
    failed_id, completed_id = pipe.last_failed_id, pipe.last_completed_id
    if failed_id is None:
        return None
    if completed_id is not None and completed_id >= failed_id:
        return None
    name = pipe.pipeline
    reason = pipe.last_failure_reason or "no reason recorded"
    return Condition(
        "checkpoint_failed",
        name,
        "warning",
        f"pipeline {name}: batch {failed_id} failed ({pipe.failed} failed "
        f"checkpoints in all): {reason}",
        float(failed_id),
    )


def pass_alerts(
    open_alerts: Mapping[str, dict[str, Any]],
    pending: Mapping[str, int],
    snap: ClusterSnapshot | None,
    health: Mapping[str, Any],
    th: AlertThresholds,
    *,
    cluster: str,
    now_ms: int,
    for_ms: Mapping[str, int],
    evaluated_rules: Iterable[str],
) -> AlertTransition:
    """One pass's alerts: the conditions that hold now (:func:`alert_conditions`) against
    the open ones (:func:`alert_transition`)."""
    return alert_transition(
        open_alerts,
        pending,
        alert_conditions(snap, health, th),
        cluster=cluster,
        now_ms=now_ms,
        for_ms=for_ms,
        evaluated_rules=evaluated_rules,
    )


def alert_transition(
    open_alerts: Mapping[str, dict[str, Any]],
    pending: Mapping[str, int],
    conditions: Iterable[Condition],
    *,
    cluster: str,
    now_ms: int,
    for_ms: Mapping[str, int],
    evaluated_rules: Iterable[str],
) -> AlertTransition:
    """Open alerts whose condition held ``for_ms[rule]``; resolve those no longer holding.

    Alerts of rules not in ``evaluated_rules`` are left as they are (a failed
    pass cannot tell whether a topic recovered).
    """
    rules = set(evaluated_rules)
    result = AlertTransition(open={}, pending={})
    holding = {c.id: c for c in conditions}
    for alert_id, alert in open_alerts.items():
        if alert["rule"] not in rules or alert_id in holding:
            current = dict(alert)
            if alert_id in holding:
                current["message"] = holding[alert_id].message
                current["value"] = holding[alert_id].value
                current["last_seen_ms"] = now_ms
            result.open[alert_id] = current
        else:
            done = {**alert, "state": "resolved", "resolved_at_ms": now_ms}
            result.resolved.append(done)
    for alert_id, since in pending.items():
        if alert_id.split(":", 1)[0] not in rules:
            result.pending[alert_id] = since
    for alert_id, cond in holding.items():
        if alert_id in result.open:
            continue
        since = int(pending.get(alert_id, now_ms))
        if now_ms - since >= for_ms.get(cond.rule, 0):
            alert = {
                "id": alert_id,
                "cluster": cluster,
                **asdict(cond),
                "state": "open",
                "since_ms": since,
                "opened_at_ms": now_ms,
                "last_seen_ms": now_ms,
                "resolved_at_ms": None,
            }
            result.open[alert_id] = alert
            result.opened.append(alert)
        else:
            result.pending[alert_id] = since
    return result


def _risk_message(topic: str, group: str, risk: RetentionRisk) -> str:
    """The ``retention_risk`` text of a group's mark (``dashboard.collectors.retention_risk``)."""
    by = ", ".join(risk.by)
    parts = ", ".join(str(p) for p in risk.partitions[:20])
    lost = risk.lost_at_least
    if lost:
        what = f"would delete at least {lost} unread entries (unread or pending)"
    else:
        verb = "may reach" if risk.may else "will reach"
        at = risk.first_loss_at_ms
        when = f" by {iso_from_ms(int(at))}" if at is not None else ""
        what = f"{verb} its oldest unread or pending entry{when}"
    return f"{topic}/{group}: {by} retention {what} on partitions {parts}"
