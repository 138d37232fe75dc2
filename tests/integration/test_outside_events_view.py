"""Actions taken outside the console (mqcore's event stream) on the timeline and the audit
view: merged, marked "outside the console", scoped, escaped, read with a bound."""

from __future__ import annotations

import pytest
import redis
from django.contrib.auth.models import Group
from django.test import Client

from dashboard.models import GroupTopicScope
from dashboard.selectors import outside as outside_sel
from dashboard.selectors.pages.timeline import TimelineFilter, timeline_events
from mqcore.config import MQConfig
from mqcore.outside_events import OutsideEvents
from tests.integration.pages_support import make_user
from tests.integration.test_xss_pages import EVIL, assert_inert

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def _record(mq_config: MQConfig) -> OutsideEvents:
    events = OutsideEvents(mq_config)
    events.record("dlq.purge", topic="secret", who="root", why="hidden from scoped users")
    events.record(
        "position.set",
        topic="orders-a",
        group="billing",
        who="sre-on-call",
        why="redo the last hour",
        what={"direction": "rewind", "redelivered": 80, "partitions": 2},
        source="mqcore-cli",
    )
    return events


def _scoped(name: str) -> Client:
    group = Group.objects.create(name=f"g-{name}")
    group.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=group, cluster="default", pattern="orders-*")
    user = make_user(name, "Viewer")
    user.groups.set([group])
    client = Client()
    client.force_login(user)
    return client


def test_cli_move_is_on_the_timeline_marked_outside(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    _record(mq_config)
    events, _ = timeline_events("default", TimelineFilter(topic="orders-a"))
    (moved,) = events
    assert (moved["kind"], moved["group"], moved["severity"]) == ("position", "billing", "warning")
    assert moved["text"].startswith("outside the console: sre-on-call moved a group's position")
    assert "rewind" in moved["text"]
    assert "why: redo the last hour" in moved["text"]
    assert moved["data"]["outside"] is True
    assert moved["data"]["who"] == "sre-on-call"
    assert timeline_events("default", TimelineFilter(topic="orders-a", kinds=("replay",)))[0] == []
    assert timeline_events("default", TimelineFilter(topic="orders-a", kinds=("dlq",)))[0] == []
    both, _ = timeline_events("default", TimelineFilter(kinds=("position", "operator")))
    assert [e["data"]["action"] for e in both] == ["position.set", "dlq.purge"]
    page, cursor = timeline_events(
        "default", TimelineFilter(kinds=("position", "operator")), limit=1
    )
    assert [e["data"]["action"] for e in page] == ["position.set"]
    assert cursor is not None
    rest, _ = timeline_events(
        "default", TimelineFilter(kinds=("position", "operator")), before=cursor
    )
    assert [e["data"]["action"] for e in rest] == ["dlq.purge"]


def test_the_read_is_bounded(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _record(mq_config)
    for i in range(5):
        events.record("dlq.replay", topic="orders-b", who=f"bot-{i}")
    counts: list[int] = []
    recent = OutsideEvents.recent

    def spy(self: OutsideEvents, limit: int = 100, **kw: object) -> object:
        counts.append(limit)
        return recent(self, limit, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(OutsideEvents, "recent", spy)
    monkeypatch.setattr(outside_sel, "MAX_READ", 4)
    read = outside_sel.outside_read("default", TimelineFilter(topic="orders-a"), limit=2)
    assert counts == [4]
    assert read.events == []  # the move is older than the 4 newest entries
    assert read.more


def test_scoped_user_and_hostile_text_on_pages_and_api(
    r: redis.Redis, mq_config: MQConfig, console_r: redis.Redis
) -> None:
    events = _record(mq_config)
    for evil in EVIL:
        events.record("dlq.replay", topic="orders-x", group=evil[:200], who=evil, why=evil)
    client = _scoped("scoped")
    for url in ("/clusters/default/timeline/", "/audit/"):
        response = client.get(url)
        assert response.status_code == 200
        body = response.content.decode()
        assert_inert(body)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert "sre-on-call" in body
        assert "outside the console" in body
        assert "hidden from scoped users" not in body
    api = client.get("/api/v1/audit").json()
    assert {e["who"] for e in api["outside"]} == {"sre-on-call", *EVIL}
    assert all(e["outside"] for e in api["outside"])
    only = client.get("/api/v1/audit?actor=sre-on-call").json()["outside"]
    assert [(e["action"], e["topic"], e["why"]) for e in only] == [
        ("position.set", "orders-a", "redo the last hour")
    ]
    assert client.get("/api/v1/audit?action=dlq.purge").json()["outside"] == []
    timeline = client.get("/api/v1/clusters/default/timeline").json()["events"]
    assert "secret" not in {e["topic"] for e in timeline}


def test_an_unreadable_cluster_leaves_the_pages_up(
    console_r: redis.Redis, settings: object, mq_config: MQConfig
) -> None:
    from dashboard.clusters import reset_caches

    settings.MQ_CLUSTERS = {"default": {"url": "redis://127.0.0.1:1/0"}}  # type: ignore[attr-defined]
    reset_caches()
    try:
        read = outside_sel.outside_read("default", limit=5)
        assert read.events == []
        assert read.error
        client = Client()
        client.force_login(make_user("admin", "Admin"))
        assert client.get("/audit/").status_code == 200
        assert client.get("/clusters/default/timeline/").status_code == 200
    finally:
        reset_caches()
