"""Celery tasks, one module per area (Celery's autodiscovery imports this package)."""

from dashboard.tasks import collect, replay

__all__ = ["collect", "replay"]
