"""JSON API (/api/v1/) of this area; it owns its urlpatterns (joined in dashboard/urls.py)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
