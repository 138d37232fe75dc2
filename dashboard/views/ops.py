"""Operations: Prometheus ``/metrics``, collector health ``/collectors/``, alerts ``/alerts/``.

Pages read the console store only (dashboard.store), never MQ Redis. ``/metrics``
needs no session (Prometheus scrapes it) but, when settings.METRICS_BEARER_TOKEN
is set, requires ``Authorization: Bearer <token>``; production settings refuse to
start without a token unless ``METRICS_PUBLIC=1``.
"""

from __future__ import annotations

import hmac
import json

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.alert_mutes import DURATION_CHOICES, mute_topic
from dashboard.alerts import RULES
from dashboard.clusters import cluster_names, console_store
from dashboard.metrics_export import metrics_text
from dashboard.permissions import (
    Action,
    cluster_visible,
    has_action,
    has_action_somewhere,
)
from dashboard.selectors.alerts import alerts_get
from dashboard.selectors.collectors import collector_rows
from dashboard.views.errors import page_guard
from dashboard.views.htmx import HtmxHttpRequest, render_page

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _bearer_ok(request: HtmxHttpRequest) -> bool:
    token = str(settings.METRICS_BEARER_TOKEN or "")
    if not token:
        return True  # production refuses to start like this unless METRICS_PUBLIC=1
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    # Bytes: compare_digest on str raises TypeError for non-ASCII text.
    given_bytes = given.strip().encode("utf-8", "surrogateescape")
    return scheme.lower() == "bearer" and hmac.compare_digest(given_bytes, token.encode())


@require_GET
def metrics(request: HtmxHttpRequest) -> HttpResponse:
    if not _bearer_ok(request):
        response = HttpResponse("bearer token required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    names = cluster_names()
    body = metrics_text(
        {name: console_store().snapshot_get(name) for name in names},
        {k: v for k, v in console_store().collector_health_get().items() if k in names},
        alerts_get(user=None)["open"],
        max_partition_series=int(settings.METRICS_MAX_PARTITION_SERIES),
    )
    return HttpResponse(body, content_type=PROMETHEUS_CONTENT_TYPE)


@require_GET
@login_required
@page_guard(Action.VIEW)
def collectors(request: HtmxHttpRequest) -> HttpResponse:
    rows = collector_rows(request.user)
    context = {"rows": rows, "interval_s": settings.COLLECT_INTERVAL_S}
    return render_page(request, "dashboard/collectors.html", context, region="live")


@require_GET
@login_required
@page_guard(Action.VIEW)
def alerts(request: HtmxHttpRequest) -> HttpResponse:
    names = [n for n in cluster_names() if cluster_visible(request.user, n)]
    cluster = request.GET.get("cluster") or None
    if cluster not in names:
        cluster = None
    data = alerts_get(cluster, user=request.user, include_resolved=True)
    for alert in data["open"]:  # the silence form names an alert by cluster and id
        alert["target"] = json.dumps([alert.get("cluster"), alert.get("id")])
        alert["can_silence"] = has_action(  # on the alert's topic; none named: global
            request.user,
            Action.SILENCE,
            cluster=str(alert.get("cluster") or ""),
            topic=mute_topic(alert),
        )
    context = {
        "open_alerts": data["open"],
        "resolved_alerts": data["resolved"][:100],
        "rules": sorted(RULES.items()),
        "filter_cluster": cluster or "",
        "webhook": bool(settings.ALERT_WEBHOOK_URL),
        "can_silence": has_action_somewhere(request.user, Action.SILENCE),
        "silenceable": [a for a in data["open"] if a["can_silence"]],
        "durations": DURATION_CHOICES,
        "now_ms": data["now_ms"],
    }
    return render_page(request, "dashboard/alerts.html", context, region="live")


urlpatterns = [
    path("metrics", metrics, name="metrics"),
    path("collectors/", collectors, name="collectors"),
    path("alerts/", alerts, name="alerts"),
]
