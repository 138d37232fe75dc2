"""Reads of the alerts page, its JSON twin and /metrics: alerts with their silences.

Every open alert carries ``mute``: the silence or acknowledgement that applies to
it now (``kind``, ``by``, ``reason``, ``until_ms``...), or None
(:func:`dashboard.alert_mutes.mute_applies`).
"""

from __future__ import annotations

from typing import Any

from dashboard.alert_mutes import mute_applies
from dashboard.alerts import alert_scope
from dashboard.clusters import cluster_names, console_store
from dashboard.permissions import row_visible, view_scopes
from mqcore.clock import now_ms

__all__ = ["alert_visible", "alerts_get"]


def alert_visible(user: Any, alert: dict[str, Any]) -> bool:
    """Whether ``user``'s topic scopes reach the alert's topic (or its cluster)."""
    if view_scopes(user) is None:
        return True
    about = alert_scope(alert)
    if about is None:
        return False
    return row_visible(user, str(alert.get("cluster") or ""), about[1])


def alerts_get(
    cluster: str | None = None, *, user: Any, include_resolved: bool = False
) -> dict[str, Any]:
    """``open`` (each with ``mute``) and ``resolved`` alerts of ``cluster`` (None: all)
    that ``user`` may see (None: every alert, for the /metrics exporter)."""
    rows = console_store().alerts_list(
        [cluster] if cluster is not None else cluster_names(), include_resolved=include_resolved
    )
    if user is not None:
        rows = [r for r in rows if alert_visible(user, r)]
    open_alerts = [dict(r) for r in rows if r.get("state") == "open"]
    by_cluster: dict[str, list[str]] = {}
    for alert in open_alerts:
        by_cluster.setdefault(str(alert.get("cluster")), []).append(str(alert.get("id")))
    known = set(cluster_names())
    mutes = {
        (name, alert_id): mute
        for name, ids in by_cluster.items()
        if name in known
        for alert_id, mute in console_store().mutes_get(name, ids).items()
    }
    now = now_ms()
    for alert in open_alerts:
        mute = mutes.get((str(alert.get("cluster")), str(alert.get("id"))))
        alert["mute"] = mute if mute_applies(mute, alert, now) else None
    return {
        "open": open_alerts,
        "resolved": [r for r in rows if r.get("state") == "resolved"],
        "now_ms": now,
    }
