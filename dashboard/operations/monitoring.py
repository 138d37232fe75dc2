"""The collectors' health and the alerts, their silences and acknowledgements. The page
names an alert by ``target`` (``[cluster, id]``), a custom duration by ``duration_custom``."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.conf import settings
from django.http import HttpResponse, QueryDict

from dashboard.operations.declare import Api, Call, Operation, Page, Reason, doc
from dashboard.permissions import Action
from dashboard.selectors.alerts import alerts_json, alerts_page_get
from dashboard.selectors.collectors import collector_rows
from dashboard.services import alert_mutes as svc

__all__ = ["OPERATIONS"]

MUTED = {"silence": "Silenced", "ack": "Acknowledged"}
Cluster = Annotated[str, doc("cluster")]


class Alerts(msgspec.Struct):
    """One cluster's alerts (none: every cluster's)."""

    cluster: Cluster = ""


class AlertRef(Reason):
    """An open alert, and why."""

    cluster: Cluster = ""
    alert_id: Annotated[str, doc("alert id")] = msgspec.field(name="alert", default="")


class Mute(AlertRef):
    """The alert, silence or acknowledgement, for how long, and why."""

    kind: Annotated[str, doc("silence or ack")] = "silence"
    duration: Annotated[str, doc("15m, 1h, ...")] = ""


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


def _muted(c: Call[Mute], mute: dict[str, Any]) -> HttpResponse:
    return c.back(f"{MUTED[c.input.kind]} {mute['alert_id']}.", "alerts")


def _unmuted(c: Call[AlertRef], _: None) -> HttpResponse:
    return c.back(f"Lifted the silence of {c.input.alert_id}.", "alerts")


def _collectors(key: str) -> Any:
    return lambda c, rows: {key: rows, "interval_s": settings.COLLECT_INTERVAL_S}


OPERATIONS = (
    Operation(
        "Collector health: the last pass per visible cluster",
        "ops",
        Action.VIEW,
        run=lambda c: collector_rows(c.user),
        page=Page(
            "collectors",
            "collectors/",
            template="dashboard/collectors.html#live",
            context=_collectors("rows"),
        ),
        api=Api(answer=_collectors("collectors")),
    ),
    Operation(
        "Open alerts",
        "alerts",
        Action.VIEW,
        Alerts,
        page=Page(
            "alerts",
            "alerts/",
            template="dashboard/alerts.html#live",
            context=lambda c, _: alerts_page_get(c.input.cluster, user=c.user),
        ),
        api=Api(answer=lambda c, _: alerts_json(c.input.cluster, user=c.user)),
    ),
    Operation(
        "Silence or acknowledge an alert",
        "alerts",
        Action.SILENCE,
        Mute,
        lambda c: svc.alert_mute(**c.write()),
        page=Page("alert-mute", "alerts/mute/", "POST", form=_mute_form, answer=_muted),
        api=Api(answer=lambda c, mute: {"mute": mute}),
        early="somewhere",
    ),
    Operation(
        "Lift a silence or acknowledgement",
        "alerts",
        Action.SILENCE,
        AlertRef,
        lambda c: svc.alert_unmute(**c.write()),
        page=Page("alert-unmute", "alerts/unmute/", "POST", answer=_unmuted),
        api=Api(answer=lambda c, _: {"lifted": c.input.alert_id}),
        early="somewhere",
    ),
)
