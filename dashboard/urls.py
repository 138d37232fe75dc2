"""URL map: each area's view module owns its ``urlpatterns``; this file only joins them."""

from dashboard.views import health, pages

app_name = "dashboard"

urlpatterns = [
    *health.urlpatterns,
    *pages.urlpatterns,
]
