"""Silence, acknowledge and lift alerts (Admin only, audited).

Each write: permission check, validation (nothing is written on bad input),
audit intent row, one SET/DEL in the console store, audit outcome row. Where
and why silences are stored: :mod:`dashboard.alert_mutes`.
"""

from __future__ import annotations

from typing import Any

from dashboard.alert_mutes import MUTE_KINDS, duration_parse
from dashboard.clusters import cluster_names
from dashboard.models import AuditEventType
from dashboard.permissions import Action, require_action
from dashboard.services.audit import (
    Origin,
    audit_begin,
    audit_complete,
    audit_failure,
    require_reason,
)
from dashboard.store import default_store
from mqcore.clock import now_ms

__all__ = ["alert_mute", "alert_unmute"]

MAX_REASON = 500


def _cluster_check(cluster: str) -> None:
    if cluster not in cluster_names():
        raise ValueError(f"unknown cluster {str(cluster)[:100]!r}")


def _open_alert(cluster: str, alert_id: str) -> dict[str, Any]:
    alert_id = (alert_id or "").strip()
    if not alert_id:
        raise ValueError("name the alert (its id, rule:entity)")
    for alert in default_store().alerts_list([cluster]):
        if alert.get("id") == alert_id:
            return alert
    raise ValueError(f"no open alert {alert_id[:200]!r} on cluster {cluster}")


def alert_mute(
    *,
    acting_user: Any,
    cluster: str,
    alert_id: str,
    kind: str,
    duration: str,
    reason: str,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """Silence (``kind="silence"``) or acknowledge (``"ack"``) an open alert; returns the mute.

    A new silence or acknowledgement of the same alert replaces the previous one.
    """
    require_action(acting_user, Action.SILENCE, cluster=cluster)
    _cluster_check(cluster)
    if kind not in MUTE_KINDS:
        raise ValueError(f"kind: one of {', '.join(MUTE_KINDS)}")
    seconds = duration_parse(duration)
    reason = require_reason(reason)[:MAX_REASON]
    alert = _open_alert(cluster, alert_id)
    at = now_ms()
    mute = {
        "alert_id": alert["id"],
        "cluster": cluster,
        "kind": kind,
        "by": "",
        "reason": reason,
        "at_ms": at,
        "until_ms": at + seconds * 1000,
        "duration_s": seconds,
        "opened_at_ms": alert.get("opened_at_ms"),
    }
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.ALERT_SILENCE if kind == "silence" else AuditEventType.ALERT_ACK,
        origin=origin,
        cluster=cluster,
        reason=reason,
        detail={"alert": alert["id"], "duration_s": seconds, "until_ms": mute["until_ms"]},
    )
    mute["by"] = intent.actor
    with audit_failure(intent):
        default_store().mute_put(cluster, alert["id"], mute, seconds)
    audit_complete(intent, outcome="silenced" if kind == "silence" else "acknowledged")
    return mute


def alert_unmute(
    *,
    acting_user: Any,
    cluster: str,
    alert_id: str,
    reason: str = "",
    origin: Origin | None = None,
) -> None:
    """Lift the silence or acknowledgement of an alert (ValueError when it has none)."""
    require_action(acting_user, Action.SILENCE, cluster=cluster)
    _cluster_check(cluster)
    alert_id = (alert_id or "").strip()
    if not alert_id:
        raise ValueError("name the alert (its id, rule:entity)")
    store = default_store()
    mute = store.mutes_get(cluster, [alert_id]).get(alert_id)
    if mute is None:
        raise ValueError(f"alert {alert_id[:200]!r} is neither silenced nor acknowledged")
    intent = audit_begin(
        acting_user=acting_user,
        event_type=AuditEventType.ALERT_UNSILENCE,
        origin=origin,
        cluster=cluster,
        reason=(reason or "").strip()[:MAX_REASON],
        detail={"alert": alert_id, "kind": mute.get("kind"), "was_until_ms": mute.get("until_ms")},
    )
    with audit_failure(intent):
        lifted = store.mute_delete(cluster, alert_id)
    audit_complete(intent, outcome="lifted" if lifted else "already expired")
