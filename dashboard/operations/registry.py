"""Every declared operation: ``OPERATIONS`` of each area module of this package (every
module but the framework's), by module name. Their URL patterns join
:mod:`dashboard.urls`, their entries the OpenAPI document."""

from __future__ import annotations

import pkgutil
from importlib import import_module

from django.urls import URLPattern

from dashboard import operations
from dashboard.operations.declare import Operation

__all__ = ["AREAS", "OPERATIONS", "urlpatterns"]

FRAMEWORK = ("declare", "openapi", "registry")
AREAS = sorted(m.name for m in pkgutil.iter_modules(operations.__path__) if m.name not in FRAMEWORK)
OPERATIONS: tuple[Operation, ...] = tuple(
    op for area in AREAS for op in import_module(f"dashboard.operations.{area}").OPERATIONS
)
urlpatterns: list[URLPattern] = [url for op in OPERATIONS for url in op.urls()]
