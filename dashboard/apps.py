from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "MQ console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from dashboard import signals  # models are loaded only now
        from dashboard.sso import checks  # noqa: F401 (registers the SSO settings check)

        signals.connect()
