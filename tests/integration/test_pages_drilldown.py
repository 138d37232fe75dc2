"""Pending, leases and message detail pages: live reads through mqcore."""

import re

import pytest
from django.test import Client

from mqcore.producer import Producer
from mqcore.topics import Topics
from tests.integration.pages_support import collect, make_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def viewer_client(client: Client, redis_url: str, console_r) -> Client:
    client.force_login(make_user())
    return client


@pytest.fixture
def pel(mq_config, r) -> list[str]:
    """Topic "jobs" (2 partitions, group "workers") with 3 pending entries of known idle/count."""
    Topics(mq_config).create("jobs", 2, groups=["workers"])
    producer = Producer(mq_config)
    ids = [producer.send("jobs", f'{{"n": {i}}}', partition=0).id for i in range(3)]
    stream = mq_config.keys.partition("jobs", 0)
    r.xreadgroup("workers", "c1", {stream: ">"}, count=3)
    # (idle ms, deliveries) per entry: the idle order and the count order differ.
    shape = {ids[0]: (50_000, 1), ids[1]: (10_000, 7), ids[2]: (90_000, 2)}
    for entry_id, (idle, count) in shape.items():
        r.xclaim(stream, "workers", "c1", 0, [entry_id], idle=idle, retrycount=count)
    collect()
    return ids


def _row_ids(html: str) -> list[str]:
    return re.findall(r"/messages/\d+/([0-9]+-[0-9]+)/", html)


def test_pending_sorts_by_idle_and_count_and_highlights_poison(viewer_client, pel) -> None:
    base = "/clusters/default/topics/jobs/pending/?group=workers"
    by_idle = viewer_client.get(base).content.decode()
    assert _row_ids(by_idle) == [pel[2], pel[0], pel[1]]
    assert re.search(r"Scanned 3 entries in [0-9.]+ ms", by_idle)
    by_count = viewer_client.get(base + "&sort=count&order=desc").content.decode()
    assert _row_ids(by_count) == [pel[1], pel[2], pel[0]]
    assert by_count.count('class="poison"') == 1
    asc = viewer_client.get(base + "&sort=idle&order=asc").content.decode()
    assert _row_ids(asc) == [pel[1], pel[0], pel[2]]
    filtered = viewer_client.get(base + "&min_deliveries=2").content.decode()
    assert sorted(_row_ids(filtered)) == sorted([pel[1], pel[2]])
    assert _row_ids(viewer_client.get(base + "&partition=1").content.decode()) == []


def test_pending_viewer_gets_no_checkboxes_operator_does(client, pel) -> None:
    url = "/clusters/default/topics/jobs/pending/?group=workers"
    client.force_login(make_user("v2"))
    assert 'name="entry"' not in client.get(url).content.decode()
    client.force_login(make_user("op", "Operator"))
    assert client.get(url).content.decode().count('name="entry"') == 3


def test_pending_unknown_group_404_and_bad_filter_400(viewer_client, pel) -> None:
    base = "/clusters/default/topics/jobs/pending/"
    assert viewer_client.get(base + "?group=ghost").status_code == 404
    assert viewer_client.get(base + "?group=workers&sort=random").status_code == 400
    assert viewer_client.get(base + "?group=workers&min_idle_s=-1").status_code == 400
    assert viewer_client.get("/clusters/default/topics/ghost/pending/").status_code == 404


def test_leases_page_flags_unowned_and_shows_countdown(viewer_client, pel, mq_config, r) -> None:
    r.set(mq_config.keys.lease("jobs", "workers", 0), "consumer-a", px=30_000)
    r.set(mq_config.keys.lease_epoch("jobs", "workers", 0), 4)
    html = viewer_client.get("/clusters/default/topics/jobs/leases/").content.decode()
    assert "consumer-a" in html
    assert re.search(r'data-countdown-ms="(2\d{4}|30000)"', html)
    assert "1 unowned" in html
    assert viewer_client.get("/clusters/default/topics/jobs/leases/?group=nope").status_code == 404


def test_leases_consumer_without_heartbeat_is_not_called_foreign(viewer_client, pel) -> None:
    # c1 is known to XINFO CONSUMERS (it read entries) but sends no mqcore heartbeat:
    # it may just have stopped cleanly, so the page says both and shows when it was active.
    html = viewer_client.get("/clusters/default/topics/jobs/leases/").content.decode()
    row = html.split('<th scope="row">c1</th>', 1)[1].split("</tr>", 1)[0]
    assert "no heartbeat (stopped, or not an mqcore consumer)" in row
    assert re.search(r"last active <time datetime=\"[^\"]+\" title=\"[^\"]+\" data-relative>", row)
    assert 'title="not an mqcore consumer' not in html


def test_pending_poison_threshold_comes_from_settings(viewer_client, pel, settings) -> None:
    url = "/clusters/default/topics/jobs/pending/?group=workers"
    assert settings.CONSOLE_POISON_DELIVERIES == 4  # the default
    settings.CONSOLE_POISON_DELIVERIES = 2  # deliveries 7 and 2 are poison now
    html = viewer_client.get(url).content.decode()
    assert html.count('class="poison"') == 2
    assert "poison = 2+ deliveries" in html


def test_nothing_pending_has_an_empty_state(viewer_client, pel) -> None:
    url = "/clusters/default/topics/jobs/pending/?group=workers&partition=1"
    assert "No pending entries" in viewer_client.get(url).content.decode()


def test_live_pages_show_the_live_toggle_message_page_does_not(viewer_client, pel) -> None:
    for url in (
        "/clusters/default/topics/jobs/pending/?group=workers",
        "/clusters/default/topics/jobs/leases/",
    ):
        html = viewer_client.get(url).content.decode()
        assert "data-live " in html
        assert "data-pause-live" in html, url
    detail = viewer_client.get(f"/clusters/default/topics/jobs/messages/0/{pel[0]}/")
    assert detail.status_code == 200
    assert "data-pause-live" not in detail.content.decode()


def test_message_detail_pretty_prints_json_and_links_context(viewer_client, pel) -> None:
    response = viewer_client.get(
        f"/clusters/default/topics/jobs/messages/0/{pel[0]}/?group=workers"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "JSON, pretty-printed" in html
    assert "{\n  &quot;n&quot;: 0\n}" in html
    assert "/clusters/default/topics/jobs/pending/?group=workers&amp;partition=0" in html


def test_message_detail_hex_for_binary_and_truncation(viewer_client, mq_config, r) -> None:
    Topics(mq_config).create("blobs", 1)
    producer = Producer(mq_config)
    binary_id = producer.send("blobs", b"\xff\x00\xfe<script>").id
    big_id = producer.send("blobs", "x" * (70 * 1024)).id
    html = viewer_client.get(
        f"/clusters/default/topics/blobs/messages/0/{binary_id}/"
    ).content.decode()
    assert "Binary payload, 11 bytes" in html
    assert "ff 00 fe 3c 73 63" in html
    big = viewer_client.get(f"/clusters/default/topics/blobs/messages/0/{big_id}/").content.decode()
    assert "Show all" in big
    assert big.count("x" * 1000) == 65  # 64 KiB shown
    full = viewer_client.get(f"/clusters/default/topics/blobs/messages/0/{big_id}/?full=1")
    assert "Show all" not in full.content.decode()


def test_message_unknown_and_bad_ids(viewer_client, pel) -> None:
    base = "/clusters/default/topics/jobs/messages"
    assert viewer_client.get(f"{base}/0/1-1/").status_code == 404
    assert viewer_client.get(f"{base}/9/{pel[0]}/").status_code == 404
    assert viewer_client.get(f"{base}/0/not-an-id/").status_code == 400


def test_viewer_sees_masked_payload_of_sensitive_topic(client, pel) -> None:
    from dashboard.models import SensitiveTopic

    SensitiveTopic.objects.create(pattern="jo*")
    url = f"/clusters/default/topics/jobs/messages/0/{pel[0]}/"
    client.force_login(make_user("masked"))
    html = client.get(url).content.decode()
    assert "masked (sensitive topic)" in html
    assert "&quot;n&quot;: 0" not in html
    client.force_login(make_user("op2", "Operator"))
    assert "&quot;n&quot;: 0" in client.get(url).content.decode()


def test_pending_offset_is_bounded_with_a_clear_400(viewer_client, pel) -> None:
    base = "/clusters/default/topics/jobs/pending/?group=workers"
    deep = viewer_client.get(f"{base}&page=100000")
    assert deep.status_code == 400
    assert "offset must be between 0 and 10000" in deep.content.decode()
    api = viewer_client.get(
        "/api/v1/clusters/default/topics/jobs/pending?group=workers&offset=10001"
    )
    assert api.status_code == 400
    assert "narrow the list" in api.json()["error"]
    ok = viewer_client.get(
        "/api/v1/clusters/default/topics/jobs/pending?group=workers&offset=10000"
    )
    assert ok.status_code == 200


def test_pending_scan_is_bounded(viewer_client, mq_config, r, settings) -> None:
    Topics(mq_config).create("bulk", 1, groups=["g"])
    producer = Producer(mq_config)
    for i in range(1100):  # more than one XPENDING page (1000)
        producer.send("bulk", str(i), partition=0)
    r.xreadgroup("g", "c1", {mq_config.keys.partition("bulk", 0): ">"}, count=2000)
    collect()
    url = "/clusters/default/topics/bulk/pending/?group=g"
    assert "scan stopped at its bound" not in viewer_client.get(url).content.decode()
    settings.PENDING_MAX_SCAN = 1000
    html = viewer_client.get(url).content.decode()
    assert "scan stopped at its bound" in html
