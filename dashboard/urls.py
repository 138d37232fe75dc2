"""URL map: each area's module owns its ``urlpatterns``; this file only joins them.

Paths (cluster-scoped pages live under /clusters/<cluster>/):
pages    /clusters/<c>/, /clusters/<c>/topics/<t>/ (+ pending/, leases/, messages/<p>/<id>/)
browse   /clusters/<c>/topics/<t>/messages/ (+ produce/)
dlq      /clusters/<c>/topics/<t>/dlq/ ...     audit  /audit/ ...
exports  /clusters/<c>/topics/<t>/lag/export/, pending/export/, dlq/export-all/
partitions /clusters/<c>/topics/<t>/partitions/<p>/hot-keys/ (the topic page's skew panel)
pending actions /clusters/<c>/topics/<t>/pending/claim/, pending/move-to-dlq/
timeline /clusters/<c>/timeline/, /clusters/<c>/topics/<t>/timeline/
position /clusters/<c>/topics/<t>/groups/<g>/position/ (+ plan/, move/)
retention /clusters/<c>/topics/<t>/retention/ (+ trim/)
retries  /clusters/<c>/retries/, /clusters/<c>/topics/<t>/retries/ (+ retry/, delete/)
access   /access/ (+ users/<u>/, role/, groups/, groups/delete/, members/, sensitive/)
pipelines /clusters/<c>/pipelines/ ...  ops /collectors/, /alerts/ (+ mute/, unmute/), /metrics
api      /api/v1/... twins of the above, described by /api/v1/openapi.json
"""

from dashboard.operations import openapi, registry
from dashboard.views import health

app_name = "dashboard"

urlpatterns = [
    *health.urlpatterns,
    *registry.urlpatterns,
    *openapi.urlpatterns,
]
