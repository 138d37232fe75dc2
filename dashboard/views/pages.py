"""Read pages: overview, topic, pending, leases, message detail."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/overview.html", {})


urlpatterns = [
    path("", overview, name="overview"),
]
