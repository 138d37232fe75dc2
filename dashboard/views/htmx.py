"""Views that answer htmx polls and swaps: their request type, and the render of a page
or of one of its regions.

django-htmx's middleware sets ``request.htmx`` on every request; it is truthy
when the request came from htmx (the ``HX-Request`` header).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.middleware import HtmxDetails

__all__ = ["HtmxHttpRequest", "render_page"]


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def render_page(
    request: HtmxHttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    region: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """Render the page, or only ``template#region`` for an htmx poll of that region."""
    name = f"{template}#{region}" if region and request.htmx else template
    return render(request, name, context, status=status)
