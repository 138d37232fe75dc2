"""The OpenAPI 3 document of ``/api/v1/``, served at ``/api/v1/openapi.json``.

Built from :data:`routes.ROUTES`; every answer is JSON (exports: CSV or JSON), errors are
``{"error": "<message>", "status": <code>}``. Authentication: the session cookie
(browser; writes need the CSRF token) or ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path

from dashboard.api.auth import api_view
from dashboard.api.openapi.routes import ROUTES, Route
from dashboard.permissions import Action, require_action

__all__ = ["document", "urlpatterns"]

ERRORS = {
    "400": "bad parameter or body (nothing was written)",
    "401": "authentication required",
    "403": "the role does not allow it (or CSRF check failed)",
    "404": "unknown cluster, topic, group, letter or job",
    "429": "over a per-user rate limit (browse, DLQ list, retry browser, exports); see Retry-After",
    "503": "cluster unreachable",
}
PATH_TYPES = {"partition": "integer", "job_id": "string"}
ERROR_SCHEMA = {
    "type": "object",
    "properties": {"error": {"type": "string"}, "status": {"type": "integer"}},
    "required": ["error", "status"],
}


def _operation(route: Route) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": PATH_TYPES.get(name, "string")}
            | ({"format": "uuid"} if name == "job_id" else {}),
        }
        for name in re.findall(r"{(\w+)}", route.path)
    ]
    params += [
        {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
        | ({"description": text} if text else {})
        for name, text in route.query.items()
    ]
    ok = "201" if route.name == "api-dlq-bulk-preview" else "200"
    content: dict[str, Any] = {"application/json": {"schema": {"type": "object"}}}
    if route.tag == "exports":  # format=csv (the default) or json, streamed
        content = {"text/csv": {"schema": {"type": "string"}}, **content}
    responses: dict[str, Any] = {ok: {"description": "OK", "content": content}}
    for code, text in ERRORS.items():
        responses[code] = {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    op: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "description": f"Role: {route.role} or above.",
        "tags": [route.tag],
        "parameters": params,
        "responses": responses,
    }
    if route.method == "post":
        props = {
            name: {"type": kind, "description": text} for name, (kind, text) in route.body.items()
        }
        op["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": {"type": "object", "properties": props}}},
        }
    return op


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method] = _operation(route)
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Operations console API",
            "version": "1",
            "description": __doc__ or "",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}, {"session": []}],
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            },
            "schemas": {"Error": ERROR_SCHEMA},
        },
        "paths": paths,
    }


@api_view("GET")
def openapi_json(request: HttpRequest) -> HttpResponse:
    require_action(request.user, Action.VIEW)
    return JsonResponse(document())


urlpatterns: list[URLPattern] = [
    path("api/v1/openapi.json", openapi_json, name="api-openapi"),
]
