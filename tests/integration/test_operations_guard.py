"""The early permission check of a declared operation, on a global URL: ``early="somewhere"``
refuses (403, before the input is read) a role that holds the action on no scope."""

from __future__ import annotations

import msgspec
import pytest
from django.test import RequestFactory

from dashboard.operations.declare import Api, Operation
from dashboard.permissions import Action
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.django_db]


class Strict(msgspec.Struct):
    n: int


def test_somewhere_is_checked_before_the_input() -> None:
    op = Operation("t", "t", Action.SILENCE, Strict, lambda c: {"n": c.input.n},
                   api=Api("api-t", "api/v1/t"), early="somewhere")  # fmt: skip
    (pattern,) = op.urls()
    for role, status in (("Viewer", 403), ("Operator", 403), ("Admin", 400)):
        request = RequestFactory().get("/api/v1/t?n=x")
        request.user = role_user(role.lower(), role)
        assert pattern.callback(request).status_code == status, role
    request = RequestFactory().get("/api/v1/t?n=2")
    request.user = role_user("ada", "Admin")
    assert pattern.callback(request).status_code == 200
