"""The one guard of every page and API view: permission, cluster lookup, error answer.

``guard(answer, action)`` wraps a view so that, in this order:

1. with an ``action``, the user must hold it on the URL's ``cluster`` and ``topic``
   (:func:`dashboard.permissions.require_action`: scope, read-only clusters);
2. a URL naming a ``cluster`` names a configured one (404 otherwise);
3. every error of :data:`dashboard.errors.ERROR_TABLE` the view raises (or 1. and 2.)
   becomes ``answer(request, error)``: the error page for pages
   (:func:`page_guard`), JSON for the API
   (:func:`dashboard.api.auth.api_view`); a refused write is audited as ``denied``.

Services stay the authority on permissions; the guard's ``action`` only refuses early
(a 403 before the input is read) what the service would refuse anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from dashboard.clusters import cluster_config
from dashboard.errors import HttpError, http_error
from dashboard.permissions import Action, require_action
from dashboard.services.audit import audit_denied

__all__ = ["ErrorAnswer", "guard", "page_guard"]

V = TypeVar("V", bound=Callable[..., HttpResponseBase])
ErrorAnswer = Callable[[HttpRequest, HttpError], HttpResponse]


def guard(answer: ErrorAnswer, action: Action | None = None) -> Callable[[V], V]:
    """Check ``action`` (None: no permission of its own) on the URL's cluster and topic,
    look the cluster up, and answer expected errors with ``answer`` (see the module doc)."""

    def decorator(view: V) -> V:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            cluster, topic = kwargs.get("cluster"), kwargs.get("topic")
            try:
                if action is not None:
                    require_action(request.user, action, cluster=cluster, topic=topic)
                if cluster is not None:
                    cluster_config(str(cluster))
                return view(request, *args, **kwargs)
            except Exception as exc:
                err = http_error(exc, cluster=str(cluster or ""))
                if err is None:
                    raise
                audit_denied(request, exc, cluster=str(cluster or ""), topic=str(topic or ""))
                response = answer(request, err)
                if err.retry_after is not None:
                    response["Retry-After"] = str(err.retry_after)
                return response

        return cast(V, wrapper)

    return decorator


def _error_page(request: HttpRequest, err: HttpError) -> HttpResponse:
    context = {"status": err.status, "title": err.title, "message": err.message}
    return render(request, "dashboard/error.html", context, status=err.status)


def page_guard(action: Action | None = None) -> Callable[[V], V]:
    """The guard of a page: expected errors answered with the console's error page."""
    return guard(_error_page, action)
