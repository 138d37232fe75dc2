"""Client addresses come from X-Forwarded-For only behind a trusted proxy; request ids are checked.

Real Django test client and django-axes: a lockout is charged to the client a trusted
proxy names, never to the proxy, and a header from anyone else is ignored.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

from dashboard.services.audit import origin_from_request

PROXY = "10.0.0.1"


@pytest.fixture
def behind_proxy(settings) -> None:
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]


def _request(remote: str, forwarded: str = "", request_id: str = ""):  # type: ignore[no-untyped-def]
    headers = {}
    if forwarded:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    if request_id:
        headers["HTTP_X_REQUEST_ID"] = request_id
    return RequestFactory().get("/", REMOTE_ADDR=remote, **headers)


@pytest.mark.usefixtures("behind_proxy")
def test_audit_origin_is_the_client_a_trusted_proxy_names() -> None:
    origin = origin_from_request(_request(PROXY, "198.51.100.7, 10.0.0.2"))
    assert origin.client_addr == "198.51.100.7"


@pytest.mark.usefixtures("behind_proxy")
def test_forwarded_for_from_an_untrusted_peer_is_ignored() -> None:
    origin = origin_from_request(_request("203.0.113.9", "198.51.100.7"))
    assert origin.client_addr == "203.0.113.9"
    spoofed = origin_from_request(_request(PROXY, "1.2.3.4, 203.0.113.9"))
    assert spoofed.client_addr == "203.0.113.9"  # the right-most untrusted hop


def test_without_trusted_proxies_the_peer_is_the_client(settings) -> None:
    settings.TRUSTED_PROXIES = []
    assert origin_from_request(_request(PROXY, "198.51.100.7")).client_addr == PROXY


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("req-42.a:b_c", True),
        ("x" * 65, False),
        ("evil\u00e9id", False),
        ("a b", False),
        ("<script>", False),
    ],
)
def test_request_id_is_kept_only_when_well_formed(given: str, kept: bool) -> None:
    rid = origin_from_request(_request(PROXY, request_id=given)).request_id
    assert (rid == given) is kept
    assert 1 <= len(rid) <= 64


@pytest.mark.django_db
@pytest.mark.usefixtures("behind_proxy")
def test_lockout_behind_the_proxy_is_per_client(settings) -> None:
    User.objects.create_user("target", password="right-password-123")
    attacker = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.66")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        attacker.post("/login/", {"username": "target", "password": "wrong"})
    locked = attacker.post("/login/", {"username": "target", "password": "right-password-123"})
    assert locked.status_code in (403, 429)
    owner = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.7")
    ok = owner.post("/login/", {"username": "target", "password": "right-password-123"})
    assert ok.status_code == 302


@pytest.mark.django_db
def test_forged_forwarded_for_does_not_escape_a_lockout(settings) -> None:
    settings.TRUSTED_PROXIES = []
    User.objects.create_user("target", password="right-password-123")
    for n in range(settings.AXES_FAILURE_LIMIT):
        Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").post(
            "/login/", {"username": "target", "password": "wrong"}
        )
    again = Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.200")
    locked = again.post("/login/", {"username": "target", "password": "right-password-123"})
    assert locked.status_code in (403, 429)
