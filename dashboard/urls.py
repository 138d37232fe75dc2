"""The console's URLs: the probes and ``/metrics`` (:mod:`dashboard.views.health`), then
every declared operation's page and ``/api/v1/`` twin (``dashboard/operations/<area>.py``;
``/api/v1/openapi.json`` lists the API)."""

from dashboard.operations import openapi, registry
from dashboard.views import health

app_name = "dashboard"

urlpatterns = [*health.urlpatterns, *registry.urlpatterns, *openapi.urlpatterns]
