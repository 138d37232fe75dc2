"""Silence, acknowledge and lift alerts (Admin only, audited).

Each write: permission check, validation (nothing is written on bad input),
audit intent row, one SET/DEL in the console store, audit outcome row. Where
and why silences are stored: :mod:`dashboard.alert_mutes`.

The ``silence`` permission is checked on the alert's topic (an Admin scoped to
``orders-*`` mutes the alerts of those topics only); an alert that names no topic
needs a grant without scope (:func:`dashboard.alert_mutes.mute_topic`). The check
comes before the answer "no such open alert", so it tells nothing of other topics.
"""

from __future__ import annotations

from typing import Any

from dashboard.alert_mutes import MUTE_KINDS, alert_of_id, duration_parse, mute_topic
from dashboard.clusters import cluster_names, console_store
from dashboard.models import AuditEventType
from dashboard.permissions import Action, require_action_somewhere
from dashboard.services.audit import Actor, audited, require_reason
from mqcore.clock import now_ms

__all__ = ["alert_mute", "alert_unmute"]

MAX_REASON = 500


def _alert_checked(actor: Actor, cluster: str, alert_id: str) -> dict[str, Any] | None:
    """The open alert ``alert_id`` of ``cluster`` (None when it is not open), once the
    actor may silence it: on its topic, or globally when it names none."""
    require_action_somewhere(actor.user, Action.SILENCE)
    if cluster not in cluster_names():
        raise ValueError(f"unknown cluster {str(cluster)[:100]!r}")
    alert_id = (alert_id or "").strip()
    if not alert_id:
        raise ValueError("name the alert (its id, rule:entity)")
    found = next(
        (a for a in console_store().alerts_list([cluster]) if a.get("id") == alert_id), None
    )
    about = found if found is not None else alert_of_id(alert_id)
    actor.at(cluster).require(Action.SILENCE, topic=mute_topic(about))
    return found


def alert_mute(
    actor: Actor, *, cluster: str, alert_id: str, kind: str, duration: str, reason: str
) -> dict[str, Any]:
    """Silence (``kind="silence"``) or acknowledge (``"ack"``) an open alert of ``cluster``
    (the actor's URL names none); returns the mute.

    A new silence or acknowledgement of the same alert replaces the previous one.
    """
    alert = _alert_checked(actor, cluster, alert_id)
    if kind not in MUTE_KINDS:
        raise ValueError(f"kind: one of {', '.join(MUTE_KINDS)}")
    seconds = duration_parse(duration)
    reason = require_reason(reason)[:MAX_REASON]
    if alert is None:
        raise ValueError(f"no open alert {alert_id.strip()[:200]!r} on cluster {cluster}")
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
    event = AuditEventType.ALERT_SILENCE if kind == "silence" else AuditEventType.ALERT_ACK
    detail = {"alert": alert["id"], "duration_s": seconds, "until_ms": mute["until_ms"]}
    with audited(actor.at(cluster), event, reason=reason, detail=detail) as audit:
        mute["by"] = audit.intent.actor
        console_store().mute_put(cluster, alert["id"], mute, seconds)
        audit.set("silenced" if kind == "silence" else "acknowledged")
    return mute


def alert_unmute(actor: Actor, *, cluster: str, alert_id: str, reason: str = "") -> None:
    """Lift the silence or acknowledgement of an alert (ValueError when it has none)."""
    _alert_checked(actor, cluster, alert_id)
    alert_id = alert_id.strip()
    store = console_store()
    mute = store.mutes_get(cluster, [alert_id]).get(alert_id)
    if mute is None:
        raise ValueError(f"alert {alert_id[:200]!r} is neither silenced nor acknowledged")
    with audited(
        actor.at(cluster),
        AuditEventType.ALERT_UNSILENCE,
        reason=(reason or "").strip()[:MAX_REASON],
        detail={"alert": alert_id, "kind": mute.get("kind"), "was_until_ms": mute.get("until_ms")},
    ) as audit:
        lifted = store.mute_delete(cluster, alert_id)
        audit.set("lifted" if lifted else "already expired")
