"""The Celery app; the whole beat schedule lives in ``dashboard.schedule``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

app = Celery("opsdash")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _install_beat_schedule(sender: Celery, **kwargs: object) -> None:
    """Install ``dashboard.schedule`` once settings are loaded (they import this package)."""
    from dashboard.schedule import beat_schedule

    sender.conf.beat_schedule = {**sender.conf.beat_schedule, **beat_schedule()}
