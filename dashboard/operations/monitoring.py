"""The collectors' health and the alerts, their silences and acknowledgements. The page
names an alert by ``target`` (``[cluster, id]``), a custom duration by ``duration_custom``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec
from django.conf import settings
from django.http import QueryDict

from dashboard.alert_mutes import DURATION_CHOICES, mute_topic
from dashboard.alerts import RULES
from dashboard.clusters import cluster_names
from dashboard.operations.clusters import visible
from dashboard.operations.declare import Api, Call, Operation, Page, Reason
from dashboard.permissions import Action, has_action, has_action_somewhere
from dashboard.selectors.alerts import alerts_get
from dashboard.selectors.collectors import collector_rows
from dashboard.services import alert_mutes as svc

__all__ = ["OPERATIONS"]

MUTED = {"silence": "Silenced", "ack": "Acknowledged"}
Cluster = Annotated[str, msgspec.Meta(description="cluster")]


class Alerts(msgspec.Struct):
    """One cluster's alerts (none: every cluster's)."""

    cluster: Cluster = ""


class AlertRef(Reason):
    """An open alert, and why."""

    cluster: Cluster = ""
    alert_id: Annotated[str, msgspec.Meta(description="alert id")] = msgspec.field(
        name="alert", default=""
    )


class Mute(AlertRef):
    """The alert, silence or acknowledgement, for how long, and why."""

    kind: Annotated[str, msgspec.Meta(description="silence or ack")] = "silence"
    duration: Annotated[str, msgspec.Meta(description="15m, 1h, ...")] = ""


def _alerts_page(c: Call[Alerts], _: None) -> dict[str, Any]:
    cluster = c.input.cluster if c.input.cluster in visible(c) else None
    data = alerts_get(cluster, user=c.user, include_resolved=True)
    for alert in data["open"]:  # the silence form names an alert by cluster and id
        alert["target"] = json.dumps([alert.get("cluster"), alert.get("id")])
        alert["can_silence"] = has_action(  # on the alert's topic; none named: global
            c.user, Action.SILENCE, cluster=str(alert.get("cluster") or ""), topic=mute_topic(alert)
        )
    return {"open_alerts": data["open"], "resolved_alerts": data["resolved"][:100],
            "rules": sorted(RULES.items()), "filter_cluster": cluster or "",
            "webhook": bool(settings.ALERT_WEBHOOK_URL), "durations": DURATION_CHOICES,
            "can_silence": has_action_somewhere(c.user, Action.SILENCE),
            "silenceable": [a for a in data["open"] if a["can_silence"]],
            "now_ms": data["now_ms"]}  # fmt: skip


def _alerts_json(c: Call[Alerts], _: None) -> dict[str, Any]:
    cluster = c.input.cluster or None
    if cluster is not None and cluster not in cluster_names():
        raise ValueError(f"unknown cluster {cluster[:100]!r}")
    data = alerts_get(cluster, user=c.user)
    return {"alerts": data["open"], "now_ms": data["now_ms"]}


def _mute_form(data: QueryDict, read: dict[str, Any]) -> dict[str, Any]:
    """``target`` and a custom duration read into the JSON's fields."""
    if raw := data.get("target", ""):
        try:
            cluster, alert = msgspec.json.decode(raw, type=tuple[str, str])
        except msgspec.DecodeError:  # also a ValidationError: not [cluster, id]
            raise ValueError("choose an open alert") from None
        read |= {"cluster": cluster, "alert": alert}
    if data.get("duration") == "custom":
        read["duration"] = data.get("duration_custom", "")
    return read


def _collectors(key: str) -> Any:
    return lambda c, rows: {key: rows, "interval_s": settings.COLLECT_INTERVAL_S}


OPERATIONS = (
    Operation(
        "Collector health: the last pass per visible cluster", "ops", Action.VIEW,
        run=lambda c: collector_rows(c.user),
        pages=(Page("collectors", "collectors/", template="dashboard/collectors.html",
                    region="live", context=_collectors("rows")),),
        api=Api("api-collectors", "api/v1/collectors", answer=_collectors("collectors")),
    ),
    Operation(
        "Open alerts", "alerts", Action.VIEW, Alerts,
        pages=(Page("alerts", "alerts/", template="dashboard/alerts.html", region="live",
                    context=_alerts_page),),
        api=Api("api-alerts", "api/v1/alerts", answer=_alerts_json),
    ),
    Operation(
        "Silence or acknowledge an alert", "alerts", Action.SILENCE, Mute, early="somewhere",
        run=lambda c: svc.alert_mute(**c.write()),
        pages=(Page("alert-mute", "alerts/mute/", "POST", form=_mute_form,
                    answer=lambda c, mute: c.back(f"{MUTED[c.input.kind]} {mute['alert_id']}.",
                                                  "alerts")),),
        api=Api("api-alert-mute", "api/v1/alerts/mute", "POST",
                answer=lambda c, mute: {"mute": mute}),
    ),
    Operation(
        "Lift a silence or acknowledgement", "alerts", Action.SILENCE, AlertRef,
        early="somewhere", run=lambda c: svc.alert_unmute(**c.write()),
        pages=(Page("alert-unmute", "alerts/unmute/", "POST",
                    answer=lambda c, _: c.back(f"Lifted the silence of {c.input.alert_id}.",
                                               "alerts")),),
        api=Api("api-alert-unmute", "api/v1/alerts/unmute", "POST",
                answer=lambda c, _: {"lifted": c.input.alert_id}),
    ),
)  # fmt: skip
