"""Sessions end 8 hours after login and after an idle timeout; live polling is not activity."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.integration.pages_support import make_user

pytestmark = pytest.mark.django_db


def _logged_in(settings) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(make_user("viewer"))
    return client


def _age(client: Client, key: str, seconds: int) -> None:
    session = client.session
    session[key] = session[key] - seconds
    session.save()


def test_session_cookie_lasts_about_eight_hours(settings) -> None:
    assert settings.SESSION_COOKIE_AGE == 8 * 3600
    assert settings.SESSION_IDLE_TIMEOUT_S <= 3600


def test_idle_session_is_logged_out(settings, console_r) -> None:
    client = _logged_in(settings)
    assert client.get("/collectors/").status_code == 200
    _age(client, "_seen_at", settings.SESSION_IDLE_TIMEOUT_S + 1)
    _age(client, "_login_at", settings.SESSION_IDLE_TIMEOUT_S + 1)
    response = client.get("/collectors/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_session_ends_after_the_maximum_age_despite_activity(settings, console_r) -> None:
    client = _logged_in(settings)
    assert client.get("/collectors/").status_code == 200
    _age(client, "_login_at", settings.SESSION_MAX_AGE_S + 1)
    assert client.get("/collectors/").status_code == 302


def test_htmx_polling_does_not_keep_a_session_alive(settings, console_r) -> None:
    client = _logged_in(settings)
    assert client.get("/collectors/").status_code == 200
    _age(client, "_seen_at", settings.SESSION_IDLE_TIMEOUT_S - 30)
    client.get("/collectors/", HTTP_HX_REQUEST="true")
    _age(client, "_seen_at", 31)
    assert client.get("/collectors/").status_code == 302
