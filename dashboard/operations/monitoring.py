"""The collectors' health and the alerts, their silences and acknowledgements. The page
names an alert by ``target`` (``[cluster, id]``), a custom duration by ``duration_custom``."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from django.conf import settings
from django.http import QueryDict

from dashboard.operations.declare import Api, Operation, Page, Reason
from dashboard.permissions import Action
from dashboard.selectors.alerts import alerts_json, alerts_page_get
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
        "Collector health: the last pass per visible cluster",
        "ops",
        Action.VIEW,
        run=lambda c: collector_rows(c.user),
        pages=(
            Page(
                "collectors",
                "collectors/",
                template="dashboard/collectors.html",
                region="live",
                context=_collectors("rows"),
            ),
        ),
        api=Api("api-collectors", "api/v1/collectors", answer=_collectors("collectors")),
    ),
    Operation(
        "Open alerts",
        "alerts",
        Action.VIEW,
        Alerts,
        pages=(
            Page(
                "alerts",
                "alerts/",
                template="dashboard/alerts.html",
                region="live",
                context=lambda c, _: alerts_page_get(c.input.cluster, user=c.user),
            ),
        ),
        api=Api(
            "api-alerts",
            "api/v1/alerts",
            answer=lambda c, _: alerts_json(c.input.cluster, user=c.user),
        ),
    ),
    Operation(
        "Silence or acknowledge an alert",
        "alerts",
        Action.SILENCE,
        Mute,
        early="somewhere",
        run=lambda c: svc.alert_mute(**c.write()),
        pages=(
            Page(
                "alert-mute",
                "alerts/mute/",
                "POST",
                form=_mute_form,
                answer=lambda c, mute: c.back(
                    f"{MUTED[c.input.kind]} {mute['alert_id']}.", "alerts"
                ),
            ),
        ),
        api=Api(
            "api-alert-mute", "api/v1/alerts/mute", "POST", answer=lambda c, mute: {"mute": mute}
        ),
    ),
    Operation(
        "Lift a silence or acknowledgement",
        "alerts",
        Action.SILENCE,
        AlertRef,
        early="somewhere",
        run=lambda c: svc.alert_unmute(**c.write()),
        pages=(
            Page(
                "alert-unmute",
                "alerts/unmute/",
                "POST",
                answer=lambda c, _: c.back(f"Lifted the silence of {c.input.alert_id}.", "alerts"),
            ),
        ),
        api=Api(
            "api-alert-unmute",
            "api/v1/alerts/unmute",
            "POST",
            answer=lambda c, _: {"lifted": c.input.alert_id},
        ),
    ),
)
