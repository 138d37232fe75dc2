"""Reads of the alerts page, its JSON twin and /metrics: alerts with their silences.

Every open alert carries ``mute``: the silence or acknowledgement that applies to
it now (``kind``, ``by``, ``reason``, ``until_ms``...), or None
(:func:`dashboard.alert_mutes.mute_applies`).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from dashboard.alert_mutes import DURATION_CHOICES, mute_applies, mute_topic
from dashboard.alerts import RULES, alert_scope
from dashboard.clusters import cluster_names, console_store
from dashboard.permissions import (
    Action,
    cluster_visible,
    has_action,
    has_action_somewhere,
    row_visible,
    view_scopes,
)
from mqcore.clock import now_ms

__all__ = ["alert_visible", "alerts_get", "alerts_json", "alerts_page_get"]


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


def alerts_page_get(cluster: str, *, user: Any) -> dict[str, Any]:
    """The alerts page: the open alerts of ``cluster`` (one the user sees; else every one),
    each with the silence form's ``target`` and whether the user may silence it, the last
    100 resolved, the rules."""
    one = cluster if cluster in cluster_names() and cluster_visible(user, cluster) else None
    data = alerts_get(one, user=user, include_resolved=True)
    for alert in data["open"]:  # the silence form names an alert by cluster and id
        alert["target"] = json.dumps([alert.get("cluster"), alert.get("id")])
        alert["can_silence"] = has_action(  # on the alert's topic; none named: global
            user, Action.SILENCE, cluster=str(alert.get("cluster") or ""), topic=mute_topic(alert)
        )
    return {
        "open_alerts": data["open"],
        "resolved_alerts": data["resolved"][:100],
        "rules": sorted(RULES.items()),
        "filter_cluster": one or "",
        "webhook": bool(settings.ALERT_WEBHOOK_URL or settings.ALERT_WEBHOOKS),
        "durations": DURATION_CHOICES,
        "can_silence": has_action_somewhere(user, Action.SILENCE),
        "silenceable": [a for a in data["open"] if a["can_silence"]],
        "now_ms": data["now_ms"],
    }


def alerts_json(cluster: str, *, user: Any) -> dict[str, Any]:
    """The alerts API: the open alerts of ``cluster`` (empty: every cluster's)."""
    if cluster and cluster not in cluster_names():
        raise ValueError(f"unknown cluster {cluster[:100]!r}")
    data = alerts_get(cluster or None, user=user)
    return {"alerts": data["open"], "now_ms": data["now_ms"]}
