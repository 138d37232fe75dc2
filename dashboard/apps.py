from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "MQ console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from dashboard import checks, signals  # models are loaded only now
        from dashboard.collectors import notify  # noqa: F401 (registers the webhooks check)
        from dashboard.sso import checks as sso_checks  # noqa: F401 (registers the SSO check)

        checks.register()

        signals.connect(self)
