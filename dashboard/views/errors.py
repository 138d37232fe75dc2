"""The console's error page (400/403/404/503), shared by the HTML views."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

__all__ = ["error_page"]


def error_page(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    """``dashboard/error.html`` with ``status``, ``title`` and ``message`` (escaped text)."""
    return render(
        request,
        "dashboard/error.html",
        {"status": status, "title": title, "message": message},
        status=status,
    )
