"""The retention view of a topic (a live, bounded read of the MQ Redis; nothing is written).

Per partition: each group's floor, unread entries and commit frontier, and what each
rule would delete next - the cluster's own housekeeper rules (or the ones typed on
the page, for a what-if) and the Java deployment's, when one shares the streams.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from dashboard import clusters
from dashboard.permissions import Action, require_action
from dashboard.selectors.pages.snapshot import topic_visible_require
from mqcore.clock import now_ms
from mqcore.retention import RetentionPolicy
from mqcore.retention.view import topic_retention

__all__ = ["PARTITIONS_PER_PAGE", "next_losses", "policy_from_form", "retention_get"]

PARTITIONS_PER_PAGE = 32  # each partition costs a few bounded reads


def policy_from_form(data: Mapping[str, Any]) -> RetentionPolicy | None:
    """The rules typed on the page or in an API body; None when none was given
    (InvalidArgumentError, a 400, when one is malformed)."""
    fields = ("maxlen", "max_age", "consumed", "ignore_groups")
    if not any(data.get(f) not in (None, "", [], False) for f in fields):
        return None
    groups = data.get("ignore_groups") or ()
    if isinstance(groups, str):
        groups = groups.replace(",", " ").split()
    consumed = data.get("consumed")
    return RetentionPolicy.build(
        maxlen=data.get("maxlen") or None,
        max_age=data.get("max_age") or None,
        consumed=consumed in (True, "1", "on", "true", "yes"),
        ignore_groups=groups,
    )


def next_losses(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group, the first time a rule deletes an entry of its backlog (unread or pending)
    on the partitions shown: the rule, the partition, when, what it loses then or how many
    writes are left; soonest first, groups no rule can reach left out."""
    first: dict[str, dict[str, Any]] = {}
    for p in rows:
        for rule in p["rules"]:
            for t in rule["threats"]:
                if t["at_ms"] is None:
                    continue
                known = first.get(t["group"])
                if known is None or t["at_ms"] < known["at_ms"]:
                    first[t["group"]] = {**t, "rule": rule["rule"], "by": rule["by"],
                                         "partition": p["partition"]}  # fmt: skip
    return sorted(first.values(), key=lambda t: (t["at_ms"], t["group"]))


def retention_get(
    *,
    user: Any,
    cluster: str,
    topic: str,
    policy: RetentionPolicy | None = None,
    page: int = 1,
) -> dict[str, Any]:
    """The view with the cluster's rules (or ``policy``), ``PARTITIONS_PER_PAGE`` partitions
    per ``page``."""
    require_action(user, Action.VIEW, cluster=cluster, topic=topic)
    topic_visible_require(user, cluster, topic)
    admin = clusters.admin(cluster)
    count = admin.partition_count(topic)
    configured = clusters.retention_policy(cluster)
    used = policy if policy is not None else configured
    java = clusters.java_retention(cluster)
    pages = max(1, -(-count // PARTITIONS_PER_PAGE))
    page = min(max(1, page), pages)
    first = (page - 1) * PARTITIONS_PER_PAGE
    shown = list(range(first, min(count, first + PARTITIONS_PER_PAGE)))
    # the housekeeper runs the cluster's rules on a schedule; typed rules only when trimmed
    every = float(settings.HOUSEKEEP_INTERVAL_S)
    scheduled = policy is None and configured.enabled and every > 0
    now = now_ms()
    parts = topic_retention(
        admin.client, admin.keys, topic, used, java, partitions=shown, at_ms=now,
        housekeep_interval_s=every if scheduled else None,
    )  # fmt: skip
    rows = [p.as_dict() for p in parts]
    at_risk: dict[str, int] = {}  # per group: summed over partitions, the worst rule of each
    for p in rows:
        worst: dict[str, int] = {}
        for rule in p["rules"]:
            for group, n in rule["at_risk"].items():
                worst[group] = max(n, worst.get(group, 0))
        for group, n in worst.items():
            at_risk[group] = at_risk.get(group, 0) + n
    return {
        "now_ms": now,
        "housekeep_interval_s": every if scheduled else None,
        "next_losses": next_losses(rows),
        "cluster": cluster,
        "topic": topic,
        "policy": used.as_dict(),
        "what_if": policy is not None,
        "configured": configured.as_dict(),
        "java": java.as_dict() if java else None,
        "partitions": rows,
        "partition_count": count,
        "page": page,
        "pages": pages,
        "at_risk_groups": dict(sorted(at_risk.items())),
        "at_risk_partitions": [p["partition"] for p in rows if p["at_risk"]],
    }
