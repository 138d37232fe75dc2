"""The one reader of request input: a write's JSON body (the API) or its form (the pages).

Each getter reads one field into its type and raises ``ValueError`` (400 through
:data:`dashboard.errors.ERROR_TABLE`) when it is not of that type, so a page and its API
twin read the same field the same way.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, QueryDict

__all__ = ["FORM_TRUE", "Body"]

FORM_TRUE = frozenset({"1", "on", "true", "yes"})  # a checked box, in a form or a query


class Body:
    """The request's JSON object (an empty body is ``{}``), or with :meth:`form` its
    POST form; each getter checks one field's type."""

    def __init__(self, request: HttpRequest) -> None:
        self.form_data: QueryDict | None = None
        try:
            data = json.loads(request.body or b"{}")
        except ValueError as exc:
            raise ValueError("body must be a JSON object") from exc
        if not isinstance(data, dict):
            raise ValueError("body must be a JSON object")
        self.data: dict[str, Any] = data

    @classmethod
    def form(cls, request: HttpRequest) -> Body:
        """The POST form of a page's write, read by the same getters."""
        body = cls.__new__(cls)
        body.form_data = request.POST
        body.data = request.POST.dict()
        return body

    def text(self, name: str, default: str = "") -> str:
        value = self.data.get(name, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string")
        return value

    def flag(self, name: str) -> bool:
        value = self.data.get(name, False)
        if self.form_data is not None:
            return value in FORM_TRUE
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be a boolean")
        return value

    def number(self, name: str) -> int | None:
        value = self.data.get(name)
        if self.form_data is not None:  # a form field: digits, or empty for none
            value = str(value or "").strip()
            if not value:
                return None
            if not value.isdigit():
                raise ValueError(f"{name.replace('_', ' ')}: a number >= 0")
            return int(value)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer")
        return int(value)

    def texts(self, name: str) -> list[str]:
        if self.form_data is not None:
            return self.form_data.getlist(name)
        value = self.data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{name} must be a list of strings")
        return value
