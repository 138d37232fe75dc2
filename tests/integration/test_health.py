from collections.abc import Iterator

import pytest
from django.test import Client

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def test_healthz_needs_no_login(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.fixture(autouse=True)
def _fresh_readiness() -> Iterator[None]:
    from dashboard.selectors.health import reset_ready_cache

    reset_ready_cache()
    yield
    reset_ready_cache()


def test_readyz_checks_database_and_redis(client: Client, redis_url: str) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_unreachable_cluster_without_naming_it(
    client: Client, settings, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from dashboard.clusters import reset_caches
    from scripts.embedded import find_free_port

    settings.MQ_CLUSTERS = {"secret-eu": {"url": f"redis://127.0.0.1:{find_free_port()}/0"}}
    reset_caches()
    try:
        response = client.get("/readyz")
    finally:
        reset_caches()
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable"}
    assert "secret-eu" not in response.content.decode()
    assert "cluster secret-eu (" in caplog.text  # the operator finds it in the log


def test_readyz_answer_is_cached_for_a_few_seconds(
    client: Client, settings, redis_url: str
) -> None:
    from dashboard.clusters import reset_caches
    from scripts.embedded import find_free_port

    assert client.get("/readyz").status_code == 200
    settings.MQ_CLUSTERS = {"down": {"url": f"redis://127.0.0.1:{find_free_port()}/0"}}
    reset_caches()
    try:
        assert client.get("/readyz").status_code == 200  # cached: no ping per probe
        settings.READYZ_CACHE_S = 0
        assert client.get("/readyz").status_code == 503
    finally:
        reset_caches()


def test_pages_require_login(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
