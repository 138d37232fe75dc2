"""Celery tasks, one module per area (Celery's autodiscovery imports this package)."""

from dashboard.tasks import collect, housekeep, replay

__all__ = ["collect", "housekeep", "replay"]
