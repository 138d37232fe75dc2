"""Collector health per cluster, as the collectors page and its API twin show it.

Whatever names a topic is cut to the topics the user may see: the Java probe's topic
lists, the groups a restart lost, and the slow log's key names (a key is named only when
it is a key of a visible topic; the others are counted). The slow log holds no arguments
at all (:mod:`mqcore.admin.probes` drops them when reading).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dashboard.clusters import cluster_config, cluster_names, console_store
from dashboard.permissions import cluster_visible, topic_visible

__all__ = ["collector_rows"]


def collector_rows(user: Any) -> list[dict[str, Any]]:
    """One row per cluster the user may see: the last pass, its timings and errors."""
    health = console_store().collector_health_get()
    rows = []
    for name in cluster_names():
        if not cluster_visible(user, name):
            continue
        h = health.get(name) or {}

        def visible(topic: str | None, cluster: str = name) -> bool:
            return bool(topic) and topic_visible(user, cluster, str(topic))

        rows.append(
            {
                "cluster": name,
                "seen": bool(h),
                "ok": bool(h.get("ok")),
                "last_run_ms": h.get("last_run_ms"),
                "last_success_ms": h.get("last_success_ms"),
                "duration_ms": h.get("duration_ms"),
                "snapshot_ms": h.get("snapshot_ms"),
                "runs": int(h.get("runs") or 0),
                "errors": int(h.get("errors") or 0),
                "consecutive_errors": int(h.get("consecutive_errors") or 0),
                "error": h.get("error") or "",
                "topics": h.get("topics"),
                "partitions": h.get("partitions"),
                "commands": h.get("commands"),
                "redis_run_id": str(h.get("redis_run_id") or "")[:12],
                "restarted_at_ms": h.get("restarted_at_ms"),
                "restart": _restart(h.get("redis_restart"), visible),
                "java": _java(h.get("java"), visible),
                "redis": _redis(h.get("redis"), visible, name),
                "replication": h.get("replication"),
                "replica": h.get("replica"),
                "master_change": _master_change(h.get("master_change"), visible),
            }
        )
    return rows


def _master_change(change: Any, visible: Callable[[str], bool]) -> dict[str, Any] | None:
    """The master change the collector holds: the groups it rewound and the entries it
    brought back of the topics the user may see named, the others counted."""
    if not isinstance(change, dict):
        return None
    rewound = [str(g) for g in change.get("rewound") or []]
    entries = [e for e in change.get("redelivered_entries") or [] if isinstance(e, dict)]
    shown = [e for e in entries if visible(str(e.get("topic") or ""))]
    return {
        **change,
        "rewound": [g for g in rewound if visible(g.split("/", 1)[0])],
        "hidden_rewound": sum(1 for g in rewound if not visible(g.split("/", 1)[0])),
        "redelivered_entries": shown,
        "hidden_entries": len(entries) - len(shown),
    }


def _java(probe: Any, visible: Callable[[str], bool]) -> dict[str, Any] | None:
    """What the last Java probe saw (on the topics the user may see), and whether the
    frontier encoding needs changing (from every topic: the cluster's setting)."""
    if not isinstance(probe, dict):
        return None
    dlq = [str(t) for t in probe.get("dlq") or []]
    frontier = [str(t) for t in probe.get("frontier") or []]
    configured = str(probe.get("configured") or "plain")
    seen = bool(dlq or frontier)
    return {
        "dlq": [t for t in dlq if visible(t)],
        "frontier": [t for t in frontier if visible(t)],
        "configured": configured,
        "seen": seen,
        "mismatch": seen and configured != "java-kryo",
    }


def _restart(restart: Any, visible: Callable[[str], bool]) -> dict[str, Any] | None:
    """A restart that lost groups: those of visible topics named (``topic/group``), the
    others counted (``hidden_groups``)."""
    if not isinstance(restart, dict):
        return None
    missing = [str(g) for g in restart.get("missing_groups") or []]
    shown = [g for g in missing if visible(g.partition("/")[0])]
    return {**restart, "missing_groups": shown, "hidden_groups": len(missing) - len(shown)}


def _redis(health: Any, visible: Callable[[str], bool], cluster: str) -> dict[str, Any] | None:
    """The Redis health reading with each slow-log entry's keys cut to visible topics'
    (on Redis Cluster, each node's)."""
    if not isinstance(health, dict):
        return None
    keys = cluster_config(cluster).keys
    out = {**health, "slowlog": _slowlog(health.get("slowlog"), visible, keys)}
    if isinstance(health.get("nodes"), list):
        out["nodes"] = [
            {**node, "slowlog": _slowlog(node.get("slowlog"), visible, keys)}
            for node in health["nodes"]
            if isinstance(node, dict)
        ]
    return out


def _slowlog(entries: Any, visible: Callable[[str], bool], keys: Any) -> list[dict[str, Any]]:
    slow = []
    for entry in entries or []:
        if not isinstance(entry, dict):
            continue
        named = [str(k) for k in entry.get("keys") or []] if "keys" in entry else []
        shown = [k for k in named if visible(keys.topic_of(k) or "")]
        command = str(entry.get("command") or "")
        slow.append(
            {
                "id": entry.get("id"),
                "at_s": entry.get("at_s"),
                "duration_us": entry.get("duration_us"),
                # a reading stored before arguments were dropped: its first word only
                "command": command if "keys" in entry else command.split(" ", 1)[0][:40],
                "keys": shown,
                "hidden_keys": len(named) - len(shown) + int(entry.get("cut_keys") or 0),
            }
        )
    return slow
