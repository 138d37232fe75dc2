"""One masking policy: a Viewer on a sensitive topic sees no payload and no header value
anywhere (DLQ list, letter page, DLQ API, export, message page), and cannot probe a
masked payload through the text filter (real Redis, Django test client)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.masking import MASK
from dashboard.models import SensitiveTopic
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

BASE = "/clusters/default/topics/payments/dlq/"
API = "/api/v1/clusters/default/topics/payments/dlq"
CARD = "4111111111111111"
SECRET_HEADER = "tok-7c1e9"


@pytest.fixture
def letters(r, mq_config) -> list[str]:
    make_topic(mq_config, "payments")
    ids = add_letters(
        r,
        mq_config,
        "payments",
        3,
        payload=lambda i: json.dumps({"card": CARD, "n": i}),
        headers=lambda i: {"x-auth": SECRET_HEADER},
    )
    SensitiveTopic.objects.create(pattern="payments")
    return ids


def _client(role: str, name: str) -> Client:
    client = Client()
    client.force_login(role_user(name, role))
    return client


def test_viewer_sees_header_names_but_no_values_on_every_dlq_read(letters) -> None:
    viewer = _client("Viewer", "v1")
    listing = viewer.get(BASE).content.decode()
    letter = viewer.get(f"{BASE}{letters[0]}/").content.decode()
    api = viewer.get(API).json()
    export = json.loads(viewer.post(f"{BASE}export/", {"ids": [letters[0]]}).content)
    for text in (listing, letter, json.dumps(api), json.dumps(export)):
        assert SECRET_HEADER not in text
        assert "boom 0" not in text  # the error header's value is data too
        assert CARD not in text
    assert "x-auth" in letter
    assert api["letters"][0]["headers"]["x-auth"] == MASK
    assert export["letters"][0]["headers"]["x-auth"] == MASK
    assert export["letters"][0]["headers"]["x-runtime-error-message"] == MASK


def test_operator_with_payload_permission_still_sees_everything(letters) -> None:
    admin = _client("Admin", "a1")
    api = admin.get(API).json()
    assert api["letters"][0]["headers"]["x-auth"] == SECRET_HEADER
    assert CARD in admin.get(f"{BASE}{letters[0]}/").content.decode()


def test_text_filter_cannot_probe_a_masked_payload(letters) -> None:
    viewer = _client("Viewer", "v2")
    hit, miss = viewer.get(f"{API}?text=4111"), viewer.get(f"{API}?text=9999")
    assert hit.status_code == miss.status_code == 400
    assert hit.json() == miss.json()
    assert "sensitive" in hit.json()["error"]
    assert viewer.get(f"{BASE}?text=4111").status_code == 400
    # filters over what the viewer can see still work
    assert len(viewer.get(f"{API}?partition=0").json()["letters"]) == 2


def test_message_page_masks_with_the_same_text(r, mq_config, letters) -> None:
    from mqcore.producer import Producer

    sent = Producer(mq_config).send(
        "payments", json.dumps({"card": CARD}), key="c1", headers={"x-auth": SECRET_HEADER}
    )
    viewer = _client("Viewer", "v3")
    page = viewer.get(
        f"/clusters/default/topics/payments/messages/{sent.partition}/{sent.id}/"
    ).content.decode()
    assert CARD not in page
    assert SECRET_HEADER not in page
    assert "x-auth" in page
    assert "masked (sensitive topic)" in page
