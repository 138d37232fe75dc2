"""The OpenAPI 3.1 document of ``/api/v1/``, served at ``/api/v1/openapi.json``.

Built from the declared operations (:mod:`dashboard.operations.registry`): the path and
its parameters from the URL pattern that routes, the query or body from the input struct
that validates (``msgspec.json.schema_components``), the role from the permission; nothing
in it is written by hand. Every answer is JSON (exports: CSV or JSON), errors are
``{"error": "<message>", "status": <code>}``. Authentication: the session cookie
(browser; writes need the CSRF token) or ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from django.urls import URLPattern

from dashboard.operations.declare import Api, Operation
from dashboard.operations.registry import OPERATIONS
from dashboard.permissions import Action

__all__ = ["document", "openapi_path", "page_twins", "urlpatterns"]

ERRORS = {
    "400": "bad parameter or body (nothing was written)",
    "401": "authentication required",
    "403": "the role does not allow it (or CSRF check failed)",
    "404": "unknown cluster, topic, group, letter or job",
    "429": "over a per-user rate limit (browse, DLQ list, retry browser, exports); see Retry-After",
    "503": "cluster unreachable",
}
STRING = {"type": "string"}
CONVERTERS = {"int": {"type": "integer"}, "uuid": STRING | {"format": "uuid"}}
ERROR_FIELDS = {"error": STRING, "status": {"type": "integer"}}
REF = "#/components/schemas/{name}"
ERROR = {"application/json": {"schema": {"$ref": REF.format(name="Error")}}}
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
_CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")


def openapi_path(route: str) -> str:
    """``api/v1/x/<str:cluster>`` or ``^api/v1/x/(?P<dlq_id>...)$`` -> ``/api/v1/x/{...}``."""
    route = _CONVERTER.sub(r"{\2}", _GROUP.sub(r"{\1}", route))
    return "/" + route.replace("^", "").replace("$", "")


def _path_params(route: str) -> list[dict[str, Any]]:
    """The path's parameters, typed by their converter (a regex group: a string)."""
    names = [(n, "") for n in _GROUP.findall(route)]
    names += [(n, conv) for conv, n in _CONVERTER.findall(_GROUP.sub("", route))]
    return [_param(n, "path", True, CONVERTERS.get(conv, STRING)) for n, conv in names]


def _param(name: str, where: str, required: bool, schema: dict[str, Any]) -> dict[str, Any]:
    described = {"description": schema["description"]} if "description" in schema else {}
    return {"name": name, "in": where, "required": required, "schema": schema} | described


def _responses(ok: str, csv: bool = False) -> dict[str, Any]:
    content: dict[str, Any] = {"application/json": {"schema": {"type": "object"}}}
    if csv:  # format=csv (the default) or json, streamed
        content = {"text/csv": {"schema": STRING}, **content}
    errors = {code: {"description": text, "content": ERROR} for code, text in ERRORS.items()}
    return {ok: {"description": "OK", "content": content}} | errors


def _declared(op: Operation, api: Api, schemas: dict[str, Any]) -> dict[str, Any]:
    """The entry of a declared operation: from its URL pattern and its input struct."""
    entry: dict[str, Any] = {"operationId": api.name, "summary": op.summary}
    entry |= {"description": f"Role: {op.role} or above.", "tags": [op.tag]}
    params, schema = _path_params(api.path), schemas[op.input.__name__]
    fields, required = schema.get("properties", {}), schema.get("required", [])
    if api.method == "GET":
        params += [_param(f, "query", f in required, s) for f, s in fields.items()]
    elif fields:
        body = {"application/json": {"schema": {"$ref": REF.format(name=op.input.__name__)}}}
        entry["requestBody"] = {"required": False, "content": body}
    return entry | {"parameters": params, "responses": _responses(str(api.status), api.csv)}


def document() -> dict[str, Any]:
    declared = [(op, op.api) for op in (*OPERATIONS, SELF) if op.api is not None]
    inputs = dict.fromkeys(op.input for op, _ in declared)
    _, schemas = msgspec.json.schema_components(inputs, ref_template=REF)
    paths: dict[str, dict[str, Any]] = {}
    for op, api in declared:
        entry = _declared(op, api, schemas)
        paths.setdefault(openapi_path(api.path), {})[api.method.lower()] = entry
    error = {"type": "object", "properties": ERROR_FIELDS, "required": list(ERROR_FIELDS)}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Operations console API", "version": "1", "description": __doc__ or ""},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}, {"session": []}],
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            },
            "schemas": {"Error": error, **schemas},
        },
        "paths": paths,
    }


def page_twins() -> dict[str, str]:
    """Page URL name -> its API twin's (the suite fails on a page missing here)."""
    return {p.name: op.api.name if op.api else op.twin for op in OPERATIONS for p in op.pages}


SELF = Operation(
    "This document",
    "meta",
    Action.VIEW,
    run=lambda c: document(),
    api=Api("api-openapi", "api/v1/openapi.json"),
)
urlpatterns: list[URLPattern] = SELF.urls()
