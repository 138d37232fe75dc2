"""The console's error page, and the pages' guard that answers expected errors with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from dashboard.errors import HttpError
from dashboard.guard import guard
from dashboard.permissions import Action

__all__ = ["error_page", "page_guard"]

V = TypeVar("V", bound=Callable[..., HttpResponseBase])


def error_page(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    """``dashboard/error.html`` with ``status``, ``title`` and ``message`` (escaped text)."""
    return render(
        request,
        "dashboard/error.html",
        {"status": status, "title": title, "message": message},
        status=status,
    )


def _answer(request: HttpRequest, err: HttpError) -> HttpResponse:
    return error_page(request, err.status, err.title, err.message)


def page_guard(action: Action | None = None) -> Callable[[V], V]:
    """:func:`dashboard.guard.guard` for pages: ``action`` on the URL's cluster and topic,
    the cluster looked up, expected errors answered with the error page."""
    return guard(_answer, action)
