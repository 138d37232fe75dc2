"""The console's error page, and the decorator that answers expected errors with it."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from dashboard.errors import http_error
from dashboard.services.audit import audit_denied

__all__ = ["error_page", "html_errors"]

R = TypeVar("R", bound=HttpResponseBase)


def error_page(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    """``dashboard/error.html`` with ``status``, ``title`` and ``message`` (escaped text)."""
    return render(
        request,
        "dashboard/error.html",
        {"status": status, "title": title, "message": message},
        status=status,
    )


def html_errors(view: Callable[..., R]) -> Callable[..., R | HttpResponse]:
    """Answer the errors of :data:`dashboard.errors.ERROR_TABLE` with the error page (a
    refused write is audited as ``denied``)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> R | HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except Exception as exc:
            err = http_error(exc, cluster=str(kwargs.get("cluster", "")))
            if err is None:
                raise
            audit_denied(request, exc, cluster=str(kwargs.get("cluster", "")),
                         topic=str(kwargs.get("topic", "")))  # fmt: skip
            response = error_page(request, err.status, err.title, err.message)
            if err.retry_after is not None:
                response["Retry-After"] = str(err.retry_after)
            return response

    return wrapper
