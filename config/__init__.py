"""The project: settings (``config/settings/``), URLs, WSGI and the Celery app.

The Celery app (``config/celery.py``) is not imported with the package: a process that
queues and runs no task (``manage.py collect --once``, the CLI commands) does without
Celery's 20 MB. ``celery -A config`` finds it as ``config.celery``; code that queues a task
imports it (:mod:`dashboard.services.bulk_replay`); ``config.celery_app`` loads it on demand.
"""

from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from config.celery import app

        return app
    raise AttributeError(f"module 'config' has no attribute {name!r}")
