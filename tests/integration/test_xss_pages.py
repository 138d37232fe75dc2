"""Hostile payloads, headers, keys and consumer names are rendered inert on every page."""

from html.parser import HTMLParser

import pytest
from django.test import Client

from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.pages_support import collect, make_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

EVIL = [
    "<script>alert(1)</script>",
    '" onmouseover="alert(2)" x="',
    "' onfocus='alert(3)' autofocus='",
    '<div hx-get="/evil" hx-trigger="load">x</div>',
    "<img src=x onerror=alert(4)>",
]


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def assert_inert(html: str) -> None:
    parser = TagCollector()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag != "img", attrs
        if tag == "script":
            assert attrs.get("src") or attrs.get("type") == "application/json", attrs
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, attrs)
            assert name != "autofocus" or tag == "input", (tag, attrs)
            if name.startswith("hx-"):
                assert "/evil" not in (value or ""), (tag, attrs)
    assert "<script>alert" not in html


@pytest.fixture
def hostile(client: Client, redis_url: str, console_r, mq_config, r) -> tuple[Client, list[str]]:
    Topics(mq_config).create("hostile", 1, groups=["g"])
    producer = Producer(mq_config)
    ids = [
        producer.send("hostile", evil, key=evil, headers={"x-error": evil, "x-note": evil}).id
        for evil in EVIL
    ]
    stream = mq_config.keys.partition("hostile", 0)
    r.xreadgroup("g", EVIL[4], {stream: ">"}, count=2)
    r.xreadgroup("g", EVIL[1], {stream: ">"}, count=2)
    collect()
    client.force_login(make_user("op", "Operator"))
    return client, ids


def test_message_pages_render_hostile_data_inert(hostile) -> None:
    client, ids = hostile
    for entry_id in ids:
        response = client.get(f"/clusters/default/topics/hostile/messages/0/{entry_id}/?group=g")
        assert response.status_code == 200
        html = response.content.decode()
        assert_inert(html)
    first = client.get(f"/clusters/default/topics/hostile/messages/0/{ids[0]}/").content.decode()
    assert first.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3  # payload, key, headers


def test_pending_leases_overview_topic_render_hostile_data_inert(hostile) -> None:
    client, _ = hostile
    pending = client.get("/clusters/default/topics/hostile/pending/?group=g").content.decode()
    assert "&lt;img src=x onerror=alert(4)&gt;" in pending  # consumer name shown, escaped
    for html in (
        pending,
        client.get(
            "/clusters/default/topics/hostile/pending/?group=g&consumer=%3Cscript%3E"
        ).content.decode(),
        client.get("/clusters/default/topics/hostile/leases/").content.decode(),
        client.get("/clusters/default/topics/hostile/").content.decode(),
        client.get("/clusters/default/?q=%22+onmouseover%3D%22alert(1)").content.decode(),
    ):
        assert_inert(html)


def test_csp_header_forbids_inline_script(hostile) -> None:
    client, ids = hostile
    response = client.get(f"/clusters/default/topics/hostile/messages/0/{ids[0]}/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
