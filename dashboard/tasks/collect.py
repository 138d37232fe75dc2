"""Celery tasks of this area (thin: they call services)."""
