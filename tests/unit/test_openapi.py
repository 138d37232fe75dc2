"""The OpenAPI document: valid OpenAPI 3, every /api/v1 route in it, every page has an API twin."""

from __future__ import annotations

import re
from typing import Any

from django.urls import URLPattern, URLResolver
from openapi_spec_validator import validate

from config import urls as root_urls
from dashboard.operations.openapi import document, page_twins

# pages that are not console pages: sign-in, health probes, Prometheus, Django admin
NO_TWIN = {
    "login",
    "logout",
    "healthz",
    "readyz",
    "metrics",
    "oidc_authentication_init",
    "oidc_authentication_callback",
}


def patterns() -> list[tuple[str, URLPattern]]:
    """Every (route text, pattern) under the root URLconf, Django's admin left out."""
    found: list[tuple[str, URLPattern]] = []

    def walk(items: list[Any], prefix: str) -> None:
        for item in items:
            text = prefix + str(item.pattern)
            if isinstance(item, URLResolver):
                if getattr(item, "app_name", None) != "admin":
                    walk(item.url_patterns, text)
            else:
                found.append((text, item))

    walk(root_urls.urlpatterns, "")
    return found


def _named_groups(route: str) -> str:
    """``(?P<name>regex)`` -> ``{name}`` (the regex may hold brackets and nested groups)."""
    out, i = [], 0
    while (start := route.find("(?P<", i)) >= 0:
        end_name = route.index(">", start)
        out += [route[i:start], "{" + route[start + 4 : end_name] + "}"]
        depth, j, in_class = 1, end_name + 1, False
        while depth:
            ch = route[j]
            if ch == "\\":
                j += 1
            elif ch == "[":
                in_class = True
            elif ch == "]":
                in_class = False
            elif not in_class and ch in "()":
                depth += 1 if ch == "(" else -1
            j += 1
        i = j
    return "".join(out) + route[i:]


def openapi_path(route: str) -> str:
    """``api/v1/x/<str:cluster>`` or ``^api/v1/x/(?P<dlq_id>...)$`` -> ``/api/v1/x/{...}``."""
    route = _named_groups(route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
    return "/" + route.replace("^", "").replace("$", "")


def test_document_is_valid_openapi_3() -> None:
    validate(document())


def operations() -> dict[str, str]:
    """operationId -> its path, as the generated document has them."""
    doc = document()
    return {op["operationId"]: p for p, ops in doc["paths"].items() for op in ops.values()}


def test_every_api_route_is_documented() -> None:
    documented = operations()
    missing = []
    for route, pattern in patterns():
        if not route.lstrip("^").startswith("api/v1/"):
            continue
        if documented.get(pattern.name or "") != openapi_path(route):
            missing.append(f"{pattern.name}: {openapi_path(route)}")
    assert not missing, "routes missing from the OpenAPI document:\n" + "\n".join(missing)


def test_every_documented_route_exists() -> None:
    names = {p.name for _, p in patterns()}
    assert not [name for name in operations() if name not in names]


def test_every_page_has_an_api_twin() -> None:
    api_names = set(operations())
    missing = []
    for route, pattern in patterns():
        if route.lstrip("^").startswith("api/") or pattern.name in NO_TWIN:
            continue
        twin = page_twins().get(pattern.name or "")
        if twin not in api_names:
            missing.append(f"{pattern.name} ({route}) -> {twin}")
    assert not missing, "pages without an API twin:\n" + "\n".join(missing)


def test_topic_detail_documents_drain() -> None:
    op = document()["paths"]["/api/v1/clusters/{cluster}/topics/{topic}"]["get"]
    assert "drain" in op["summary"]
