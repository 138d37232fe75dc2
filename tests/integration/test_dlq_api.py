"""The dead-letter and audit JSON API: same permissions as the pages, CLI-shaped answers."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import ApiToken, AuditEvent
from tests.integration.dlq_support import add_letters, make_topic, partition_len, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

API = "/api/v1/clusters/default/topics/orders/dlq"


@pytest.fixture
def letters(r, mq_config) -> list[str]:
    make_topic(mq_config)
    return add_letters(r, mq_config, "orders", 5)


def bearer(role: str) -> dict[str, str]:
    _, token = ApiToken.issue(role_user(role.lower(), role), read_only=False)
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_list_with_filters_and_cursor(letters) -> None:
    auth = bearer("Viewer")
    c = Client()
    body = c.get(f"{API}?limit=2", **auth).json()
    assert body["depth"] == 5
    assert [x["id"] for x in body["letters"]] == letters[::-1][:2]
    assert body["letters"][0]["headers"]["x-runtime-error-message"] == "boom 4"
    more = c.get(f"{API}?limit=2&before={body['next_cursor']}", **auth).json()
    assert [x["id"] for x in more["letters"]] == letters[::-1][2:4]
    assert [x["id"] for x in c.get(f"{API}?partition=1", **auth).json()["letters"]] == [
        letters[3],
        letters[1],
    ]
    assert c.get(f"{API}?limit=0", **auth).status_code == 400
    assert c.get(f"{API}?before=nonsense", **auth).status_code == 400
    assert c.get("/api/v1/clusters/nope/topics/orders/dlq", **auth).status_code == 404
    assert Client().get(API).status_code == 401


def test_replay_answers_like_the_cli(r, mq_config, letters) -> None:
    auth = bearer("Operator")
    c = Client()
    url = f"{API}/{letters[0]}/replay"
    first = c.post(url, {"reason": "INC-9"}, content_type="application/json", **auth)
    assert first.status_code == 200
    data = first.json()
    assert set(data) == {"replayed", "new_id", "topic", "partition", "reason"}
    assert data["replayed"] is True
    assert data["topic"] == "orders"
    assert data["partition"] == 0
    again = c.post(url, {}, content_type="application/json", **auth).json()
    assert again["replayed"] is False
    assert again["reason"] == "already-replayed"
    assert partition_len(r, mq_config, "orders") == 1
    forced = c.post(url, {"force": True, "reason": "x"}, content_type="application/json", **auth)
    assert forced.status_code == 403
    assert AuditEvent.objects.filter(reason="INC-9", event_type="dlq.replay").count() == 1


def test_replay_bad_input_and_admin_force(r, mq_config, letters) -> None:
    admin = bearer("Admin")
    c = Client()
    url = f"{API}/{letters[1]}/replay"
    assert c.post(url, "[1]", content_type="application/json", **admin).status_code == 400
    assert c.post(url, "{bad", content_type="application/json", **admin).status_code == 400
    bad_force = c.post(url, {"force": "yes"}, content_type="application/json", **admin)
    assert bad_force.status_code == 400
    missing = c.post(f"{API}/1-1/replay", {}, content_type="application/json", **admin)
    assert missing.status_code == 404
    c.post(url, {}, content_type="application/json", **admin)
    no_reason = c.post(url, {"force": True}, content_type="application/json", **admin)
    assert no_reason.status_code == 400
    forced = c.post(url, {"force": True, "reason": "r"}, content_type="application/json", **admin)
    assert forced.json()["replayed"] is True
    assert forced.json()["reason"] == "forced"
    target = c.post(
        url,
        {"target_partition": 1, "force": True, "reason": "r"},
        content_type="application/json",
        **admin,
    ).json()
    assert target["partition"] == 1
    assert partition_len(r, mq_config, "orders") == 3
    assert (
        Client().get("/api/v1/audit", **admin).json()["events"][0]["action"] == "dlq.replay_target"
    )


def test_unknown_topic_and_partition_are_clear_errors(letters) -> None:
    auth = bearer("Admin")
    c = Client()
    assert c.get("/api/v1/clusters/default/topics/nope/dlq", **auth).status_code == 404
    assert c.get("/clusters/default/topics/nope/dlq/", **auth).status_code in (302, 404)
    resp = c.post(
        f"{API}/{letters[0]}/replay",
        {"target_partition": 9, "reason": "r"},
        content_type="application/json",
        **auth,
    )
    assert resp.status_code == 400
    assert "partitions 0..1" in resp.json()["error"]
    page = Client()
    page.force_login(role_user("viewer2", "Viewer"))
    assert page.get("/clusters/default/topics/nope/dlq/").status_code == 404
