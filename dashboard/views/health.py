"""What machines call, without a session: the liveness and readiness probes (load
balancers, orchestrators) and Prometheus' ``/metrics``.

``/metrics`` reads the console store, and the consumer metrics of the groups it lists from
their clusters (one small hash a group, bounded: ``dashboard/consumer_metrics_export.py``);
when settings.METRICS_BEARER_TOKEN is set it
requires ``Authorization: Bearer <token>`` (production settings refuse to start without
a token unless ``METRICS_PUBLIC=1``).
"""

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

from dashboard.clusters import cluster_names, console_store
from dashboard.consumer_metrics_export import consumer_metrics_text
from dashboard.metrics_export import metrics_text
from dashboard.selectors.alerts import alerts_get
from dashboard.selectors.health import ready_now
from dashboard.selectors.pages.consumer_metrics import scrape_rows

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database, the console store and every MQ deployment answer, else 503
    (what failed goes to the log); cached a few seconds, so probes cannot flood the clusters."""
    ok = ready_now()
    return JsonResponse({"status": "ok" if ok else "unavailable"}, status=200 if ok else 503)


def _bearer_ok(request: HttpRequest) -> bool:
    token = str(settings.METRICS_BEARER_TOKEN or "")
    if not token:
        return True  # production refuses to start like this unless METRICS_PUBLIC=1
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    # Bytes: compare_digest on str raises TypeError for non-ASCII text.
    given_bytes = given.strip().encode("utf-8", "surrogateescape")
    return scheme.lower() == "bearer" and hmac.compare_digest(given_bytes, token.encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _bearer_ok(request):
        challenge = {"WWW-Authenticate": 'Bearer realm="metrics"'}
        text = "bearer token required\n"
        return HttpResponse(text, status=401, headers=challenge, content_type="text/plain")
    names, store = cluster_names(), console_store()
    snapshots = {name: store.snapshot_get(name) for name in names}
    health = {k: v for k, v in store.collector_health_get().items() if k in names}
    body = metrics_text(
        snapshots,
        health,
        alerts_get(user=None)["open"],
        max_partition_series=int(settings.METRICS_MAX_PARTITION_SERIES),
    )
    body += consumer_metrics_text(*scrape_rows(snapshots, health))
    return HttpResponse(body, content_type=PROMETHEUS_CONTENT_TYPE)


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
]
