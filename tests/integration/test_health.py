import pytest
from django.test import Client

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def test_healthz_needs_no_login(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_checks_database_and_redis(client: Client, redis_url: str) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {
        "database": "ok", "console_redis": "ok", "cluster:default": "ok",
    }  # fmt: skip


def test_readyz_reports_unreachable_cluster(client: Client, settings, redis_url: str) -> None:
    from dashboard.clusters import reset_caches
    from scripts.embedded import find_free_port

    settings.MQ_CLUSTERS = {"down": {"url": f"redis://127.0.0.1:{find_free_port()}/0"}}
    reset_caches()
    try:
        response = client.get("/readyz")
    finally:
        reset_caches()
    assert response.status_code == 503
    assert response.json()["checks"]["cluster:down"].startswith("error")


def test_pages_require_login(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
