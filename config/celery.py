"""The Celery app; the whole beat schedule lives in ``dashboard.schedule``."""

import logging
import os

from celery import Celery
from celery.signals import after_setup_logger

from mqcore.sentinel import is_sentinel_url

# Production unless told otherwise: it refuses to start without a real SECRET_KEY.
# Development sets DJANGO_SETTINGS_MODULE=config.settings.dev (`make demo` does).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.prod")

app = Celery("opsdash")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _install_beat_schedule(sender: Celery, **kwargs: object) -> None:
    """Install ``dashboard.schedule`` once settings are loaded (they import this package)."""
    from dashboard.schedule import beat_schedule

    sender.conf.beat_schedule = {**sender.conf.beat_schedule, **beat_schedule()}


@app.on_after_configure.connect
def _sentinel_broker_from_settings(sender: Celery, **kwargs: object) -> None:
    """Celery reads ``CELERY_BROKER_URL`` from the environment before its settings. A
    Sentinel URL there is one the settings turned into kombu's form, with the master's name
    in the transport options (mqcore.sentinel.kombu_broker): that form takes its place."""
    from django.conf import settings

    if is_sentinel_url(os.environ.get("CELERY_BROKER_URL", "")):
        os.environ["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL


# loggers of Celery's routine lines: a task received / succeeded, beat sending a due task
TASK_EVENT_LOGGERS = ("celery.app.trace", "celery.worker.strategy", "celery.beat")


@after_setup_logger.connect
def _task_event_log_level(**kwargs: object) -> None:
    """Apply settings.TASK_EVENT_LOG_LEVEL to Celery's per-task lines (after its own setup)."""
    from django.conf import settings

    for name in TASK_EVENT_LOGGERS:
        logging.getLogger(name).setLevel(settings.TASK_EVENT_LOG_LEVEL)
