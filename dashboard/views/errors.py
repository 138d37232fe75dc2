"""The pages' guard: :func:`dashboard.guard.guard` answering expected errors with the
console's error page (``dashboard/error.html``: status, title and message, escaped)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from dashboard.errors import HttpError
from dashboard.guard import guard
from dashboard.permissions import Action

__all__ = ["page_guard"]

V = TypeVar("V", bound=Callable[..., HttpResponseBase])


def _error_page(request: HttpRequest, err: HttpError) -> HttpResponse:
    context = {"status": err.status, "title": err.title, "message": err.message}
    return render(request, "dashboard/error.html", context, status=err.status)


def page_guard(action: Action | None = None) -> Callable[[V], V]:
    """``action`` on the URL's cluster and topic, the cluster looked up, expected errors
    answered with the error page."""
    return guard(_error_page, action)
