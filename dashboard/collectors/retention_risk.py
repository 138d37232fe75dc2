"""Unread entries a retention rule would delete, seen from the snapshot (no extra reads).

A rule that does not wait for a group - the Java deployment's length and age rules,
or mqcore's for a group an operator opted out - puts that group's unread entries at
risk. From the snapshot, a partition's unread entries are at least its lag plus its
pending count, and the first unread one is at least ``lag_ms`` old: enough for a
sound alarm (the retention tab counts exactly, and shows the Java frontier trim,
which needs the frontier hashes and leases).
"""

from __future__ import annotations

from typing import Any

from mqcore.retention import JavaRetention, RetentionPolicy

__all__ = ["retention_risk_mark"]


def _rules_for(
    group: str, policy: RetentionPolicy, java: JavaRetention | None
) -> list[tuple[str, int | None, int | None]]:
    """(rule, keep at most N, delete older than ms) of the rules that do not wait for ``group``."""
    out: list[tuple[str, int | None, int | None]] = []
    if java is not None and (java.maxlen is not None or java.retention_ms is not None):
        out.append(("java", java.maxlen, java.retention_ms))
    if group in policy.ignore_groups and (policy.maxlen or policy.max_age_ms):
        out.append(("mqcore (group opted out)", policy.maxlen, policy.max_age_ms))
    return out


def retention_risk_mark(
    snap: dict[str, Any], policy: RetentionPolicy, java: JavaRetention | None
) -> None:
    """Set ``group["retention_risk"]`` (partitions, entries lost at least, by which rules)
    on each group a rule would take unread entries from; clear it on the others."""
    for topic in snap.get("topics") or []:
        for group in topic.get("groups") or []:
            group.pop("retention_risk", None)
            rules = _rules_for(str(group.get("group")), policy, java)
            if not rules:
                continue
            parts: list[int] = []
            lost = 0
            by: set[str] = set()
            for p in group.get("partitions") or []:
                unread = int(p.get("lag") or 0) + int(p.get("pending") or 0)
                age = p.get("lag_ms")
                hit = 0
                for name, maxlen, max_age in rules:
                    n = unread - maxlen if maxlen is not None and unread > maxlen else 0
                    old = max_age is not None and isinstance(age, int) and age > max_age
                    if n > 0 or old:
                        hit = max(hit, n, 1)
                        by.add(name)
                if hit:
                    parts.append(int(p["partition"]))
                    lost += hit
            if parts:
                group["retention_risk"] = {
                    "partitions": parts,
                    "lost_at_least": lost,
                    "by": sorted(by),
                }
