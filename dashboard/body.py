"""JSON request bodies of the ``/api/v1/`` writes: one object, typed fields, 400 otherwise."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest

from dashboard.api.auth import ApiParamError

__all__ = ["Body"]


class Body:
    """The request's JSON object (an empty body is ``{}``); each getter checks one field's type."""

    def __init__(self, request: HttpRequest) -> None:
        try:
            data = json.loads(request.body or b"{}")
        except ValueError as exc:
            raise ApiParamError("body must be a JSON object") from exc
        if not isinstance(data, dict):
            raise ApiParamError("body must be a JSON object")
        self.data: dict[str, Any] = data

    def text(self, name: str, default: str = "") -> str:
        value = self.data.get(name, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ApiParamError(f"{name} must be a string")
        return value

    def flag(self, name: str) -> bool:
        value = self.data.get(name, False)
        if not isinstance(value, bool):
            raise ApiParamError(f"{name} must be a boolean")
        return value

    def number(self, name: str) -> int | None:
        value = self.data.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ApiParamError(f"{name} must be an integer")
        return int(value)

    def texts(self, name: str) -> list[str]:
        value = self.data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ApiParamError(f"{name} must be a list of strings")
        return value
