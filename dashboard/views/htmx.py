"""The request type of views that answer htmx polls and swaps.

django-htmx's middleware sets ``request.htmx`` on every request; it is truthy
when the request came from htmx (the ``HX-Request`` header).
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

__all__ = ["HtmxHttpRequest"]


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails
