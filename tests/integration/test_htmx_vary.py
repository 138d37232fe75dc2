"""``Vary: HX-Request`` is set in one place, the console's htmx middleware: on every response
whose view asked whether the request came from htmx, full page and partial alike, and on no
other; no view patches Vary itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

import dashboard
from dashboard.models import ReplayJob, ReplayJobStatus
from tests.integration.dlq_support import role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]
HTMX = {"HX-Request": "true"}


@pytest.fixture
def viewer(client: Client, redis_url: str, console_r: object) -> Client:
    client.force_login(role_user("vary-viewer", "Viewer"))
    return client


def _vary(response: object) -> set[str]:
    raw = response.headers.get("Vary", "")  # type: ignore[attr-defined]
    return {v.strip().lower() for v in raw.split(",") if v.strip()}


@pytest.mark.parametrize("url", ["/clusters/default/", "/collectors/", "/alerts/"])
def test_pages_with_a_polled_region_vary_on_hx_request(viewer: Client, url: str) -> None:
    full, partial = viewer.get(url), viewer.get(url, headers=HTMX)
    assert full.status_code == partial.status_code == 200
    assert "hx-request" in _vary(full)
    assert "hx-request" in _vary(partial)
    assert full.content != partial.content


def test_a_view_that_asks_htmx_for_its_status_varies_too(viewer: Client) -> None:
    job = ReplayJob.objects.create(
        cluster="default", topic="orders", reason="", frozen_ids="1-0", frozen_hash="0" * 64,
        total=1, first_id="1-0", last_id="1-0", status=ReplayJobStatus.COMPLETED,
    )  # fmt: skip
    url = f"/clusters/default/topics/orders/dlq/jobs/{job.pk}/progress/"
    assert viewer.get(url, headers=HTMX).status_code == 286  # htmx: stop polling
    response = viewer.get(url)
    assert response.status_code == 200
    assert "hx-request" in _vary(response)


def test_json_api_does_not_vary_on_hx_request(viewer: Client) -> None:
    response = viewer.get("/api/v1/clusters")
    assert response.status_code == 200
    assert "hx-request" not in _vary(response)


def test_no_view_sets_vary_itself() -> None:
    root = Path(dashboard.__file__).parent
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "patch_vary_headers" in p.read_text() and p.name != "middleware.py"
    ]
    assert offenders == []
