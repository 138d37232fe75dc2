"""Issue 17's pages and APIs on odd data and bad parameters (real redis-server): entries
with non-UTF-8 or missing fields, JSON headers of the wrong shape, huge values, retry
items of the wrong types, junk DLQ letters; cursors, ids and numbers that are not what
they should be. Every answer is an answer (< 500), never a server error."""

from __future__ import annotations

import base64
import json

import pytest
import redis
from django.test import Client

from mqcore.config import MQConfig
from tests.integration.dlq_support import make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

T = "/clusters/default/topics/odd"
A = "/api/v1/clusters/default/topics/odd"
BAD = b"\xff\xfe\x80 not utf-8"
ESC = "\x1b[2J\x1b]0;title\x07\u202e<b>x"


@pytest.fixture
def odd(r: redis.Redis, mq_config: MQConfig) -> dict[str, str]:
    make_topic(mq_config, "odd", 2)
    ks = mq_config.keys
    p0, p1 = ks.partition("odd", 0), ks.partition("odd", 1)
    ids = {
        "bad": r.xadd(p0, {"payload": BAD, "key": BAD, "headers": BAD, "timestamp": BAD}),
        "list": r.xadd(p0, {"payload": "[1,2]", "headers": "[1, 2]", "key": "k"}),
        "types": r.xadd(
            p0, {"payload": "{}", "headers": json.dumps({"a": 1, "b": None, "c": {"x": [1]}})}
        ),
        "bare": r.xadd(p1, {"junk": "1"}),
        "huge": r.xadd(p1, {"payload": "x" * (2 * 1024 * 1024), "key": "h" * 5000}),
        "deep": r.xadd(p1, {"payload": "[" * 100_000, "headers": "{" * 50_000}),
        "esc": r.xadd(p0, {"payload": ESC, "key": ESC, "headers": json.dumps({ESC: ESC})}),
    }
    r.xgroup_create(p0, "g1", id="0")
    r.xreadgroup("g1", "c\u202e<b>x", {p0: ">"}, count=10)
    zset = ks.retry_zset("odd")
    prefix = ks.retry_item("odd", "")
    r.zadd(zset, {"garbage-member": 1, prefix + "missing": 2, BAD: 3})
    item = ks.retry_item("odd", "weird")
    r.hset(
        item,
        mapping={
            "payload": BAD,
            "headers": "[",
            "retryCount": "x",
            "maxRetries": "-1",
            "partitionId": "-5",
            "key": BAD,
            "originalMessageId": BAD,
        },
    )
    r.zadd(zset, {item: 4})
    r.rpush(ks.retry_item("odd", "listy"), "not a hash")
    r.zadd(zset, {ks.retry_item("odd", "listy"): 7})
    esc = ks.retry_item("odd", "esc")
    r.hset(esc, mapping={"payload": ESC, "key": ESC, "headers": json.dumps({ESC: ESC})})
    r.zadd(zset, {esc: 5})
    r.zadd(zset, {ks.retry_item("odd", "inf"): float("inf")})
    r.hset(ks.retry_item("odd", "inf"), mapping={"payload": "p"})
    dlq = ks.dlq("odd")
    r.xadd(dlq, {"payload": BAD, "headers": BAD, "key": BAD, "partitionId": "x"})
    r.xadd(dlq, {"junk": "1"})
    letter = r.xadd(dlq, {"payload": ESC, "key": ESC, "headers": json.dumps({ESC: ESC})})
    r.xadd(dlq, {"payload": "p", "headers": "[1]", "retryCount": "nan", "failedAt": "soon"})
    return {**{k: v.decode() for k, v in ids.items()}, "letter": letter.decode()}


def _cursor(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


BAD_CURSORS = ["!!!", "e30", _cursor({"x": 1}), _cursor([1, "a"]), _cursor(["-1", 5]), "A" * 900]


def _urls(ids: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    urls: list[tuple[str, dict[str, str]]] = []
    for base in (f"{T}/messages/", f"{A}/messages"):
        urls.append((base, {}))
        urls.append((base, {"order": "oldest", "max_bytes": "65536"}))
        urls += [(base, {"cursor": c}) for c in BAD_CURSORS]
        urls += [(base, {"cursor": c, "order": "oldest"}) for c in BAD_CURSORS]
        for name, value in [
            ("partition", "9"), ("partition", "-1"), ("partition", "x"), ("limit", "0"),
            ("limit", "99999999999999999999"), ("max_scan", "-3"), ("from_id", "abc"),
            ("from_id", "99999999999999999999999-1"), ("from_time", "garbage"),
            ("from_time", "99999-01-01T00:00"), ("from_time", "-5"), ("where", "(((("),
            ("where", "payload." + "a." * 500 + "b == 1"), ("where", 'headers.a == "1"'),
            ("where", "payload[0] == 1 and key == 'k'"), ("header", "="), ("header", "a=1"),
            ("text", "x"), ("key", "\x00"), ("max_bytes", "0"), ("order", "sideways"),
        ]:  # fmt: skip
            urls.append((base, {name: value}))
    for eid in [*ids.values(), "abc", "1-x", "99999999999999999999999-0", "0-0"]:
        urls.append((f"{T}/messages/0/{eid}/", {}))
        urls.append((f"{T}/messages/1/{eid}/", {}))
        urls.append((f"{A}/messages/0/{eid}", {}))
    for base in (f"{T}/retries/", f"{A}/retries"):
        urls.append((base, {}))
        for params in [
            {"order": "desc"}, {"state": "due"}, {"state": "scheduled", "order": "desc"},
            {"text": "x"}, {"key": "k"}, {"partition": "-1"}, {"partition": "x"},
            {"offset": "-1"}, {"offset": "99999999999999999999"}, {"offset": "1"},
            {"limit": "0"}, {"limit": "x"}, {"state": "x"},
            *({"cursor": c} for c in BAD_CURSORS),
            *({"cursor": c, "order": "desc"} for c in BAD_CURSORS),
        ]:  # fmt: skip
            urls.append((base, params))
    urls += [("/clusters/default/retries/", {}), ("/api/v1/clusters/default/retries", {})]
    for base in (T, A):
        sep = "/" if base == T else ""
        for params in [
            {}, {"format": "json"}, {"format": "x"}, {"max_rows": "-1"}, {"max_rows": "x"},
            {"group": "g1"}, {"group": "g1", "format": "json"}, {"group": "nope"},
            {"group": "g1", "partition": "-1"}, {"group": "g1", "partition": "7"},
            {"group": "g1", "min_idle_s": "x"}, {"group": "\x00"}, {"text": "x"},
            {"partition": "-1"}, {"key": "k"},
        ]:  # fmt: skip
            for kind in ("lag/export", "pending/export", "dlq/export-all"):
                urls.append((f"{base}/{kind}{sep}", params))
    for base, sep in ((f"{T}/partitions", "/"), (f"{A}/partitions", "")):
        for p in ("0", "1", "2", "999999999999"):
            for params in [{}, {"count": "0"}, {"count": "x"}, {"count": "10000000"}]:
                urls.append((f"{base}/{p}/hot-keys{sep}", params))
    urls += [(f"{A}/partitions", {}), (f"{T}/", {}), ("/collectors/", {})]
    return urls


def _get(client: Client, url: str, params: dict[str, str]) -> int:
    resp = client.get(url, params)
    if getattr(resp, "streaming", False):
        b"".join(resp.streaming_content)  # a streamed export fails while streaming, if at all
    return int(resp.status_code)


@pytest.mark.parametrize("role", ["Viewer", "Operator"])
def test_issue17_pages_never_500(odd: dict[str, str], role: str) -> None:
    client = Client(raise_request_exception=True)
    client.force_login(role_user(role.lower(), role))
    failures = []
    for url, params in _urls(odd):
        try:
            status = _get(client, url, params)
        except Exception as exc:  # every crash listed, not just the first
            failures.append(f"{url} {params}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        if status >= 500:
            failures.append(f"{url} {params}: {status}")
    assert not failures, "\n".join(failures)


def test_issue17_cli_on_odd_data(
    odd: dict[str, str], redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line twins on the same data: an answer or exit 2, never a traceback;
    the human text carries no raw control characters of the data."""
    from mqcore.cli import main

    runs = [
        ["browse", "odd"], ["browse", "odd", "--oldest"], ["browse", "odd", "--cursor", "!!!"],
        ["browse", "odd", "--where", "(((("], ["browse", "odd", "--from-id", "abc"],
        *(["message", "odd", p, i] for p in ("0", "1") for i in odd.values() if i != odd["letter"]),
        ["message", "odd", "0", "1-x"], ["retries", "list", "odd"],
        ["retries", "list", "odd", "--order", "desc"], ["retries", "list", "odd", "--text", "x"],
        ["retries", "list", "odd", "--cursor", "!!!"], ["retries", "get", "odd", "weird"],
        ["retries", "get", "odd", "esc"], ["retries", "get", "odd", "../x"],
        ["retries", "get", "odd", "listy"], ["retries", "retry", "odd", "listy"],
        ["dlq", "get", "odd", odd["letter"]], ["topic", "partitions", "odd"],
        ["topic", "partitions", "odd", "--hot-keys", "0"], ["health"],
    ]  # fmt: skip
    for args in runs:
        for json_flag in ([], ["--json"]):
            code = main(["--redis-url", redis_url, *json_flag, *args])
            out, err = capsys.readouterr()
            assert code in (0, 1, 2), (args, code, err)
            assert "Traceback" not in err, (args, err)
            if not json_flag:
                assert "\x1b" not in out, (args, out[:300])
                assert "\u202e" not in out, (args, out[:300])


def test_issue17_topic_scope_on_every_new_url(odd: dict[str, str], mq_config: MQConfig) -> None:
    """An Operator scoped to other topics reaches none of this topic's new pages, APIs,
    exports or actions (403 or 404, and nothing is written)."""
    from django.contrib.auth.models import Group

    from dashboard.models import GroupTopicScope

    make_topic(mq_config, "payments", 1)
    scoped = Group.objects.create(name="payments-operators")
    scoped.permissions.set(Group.objects.get(name="Operator").permissions.all())
    GroupTopicScope.objects.create(group=scoped, cluster="default", pattern="payments*")
    user = role_user("scoped", None)
    user.groups.add(scoped)
    client = Client(raise_request_exception=True)
    client.force_login(user)
    leaked = []
    for url, params in _urls(odd):
        if "/odd" not in url:
            continue
        status = _get(client, url, params)
        if status not in (400, 403, 404):
            leaked.append(f"GET {url} {params}: {status}")
    posts = [
        (f"{T}/messages/produce/", {"payload": "x"}),
        (f"{T}/retries/retry/", {"one": "weird", "reason": "r"}),
        (f"{T}/retries/delete/", {"one": "weird", "reason": "r"}),
    ]
    for url, data in posts:
        status = client.post(url, data).status_code
        if status not in (400, 403, 404):
            leaked.append(f"POST {url}: {status}")
    api_posts = [
        (f"{A}/messages/produce", {"payload": "x"}),
        (f"{A}/retries/retry", {"ids": ["weird"], "reason": "r"}),
        (f"{A}/retries/delete", {"ids": ["weird"], "reason": "r"}),
    ]
    for url, body in api_posts:
        status = client.post(url, json.dumps(body), content_type="application/json").status_code
        if status not in (400, 403, 404):
            leaked.append(f"POST {url}: {status}")
    index = client.get("/api/v1/clusters/default/retries").json()
    assert "odd" not in json.dumps(index)
    assert not leaked, "\n".join(leaked)


def test_issue17_masking_on_every_new_read_path(
    odd: dict[str, str], r: redis.Redis, mq_config: MQConfig
) -> None:
    """A Viewer of a sensitive topic never sees a payload or header value: not on the
    browser, the message page and its trace, the retry browser, the exports or hot keys
    (keys stay visible: the policy masks payloads and header values only)."""
    from dashboard.models import SensitiveTopic

    secret = "4111-1111-SECRET"
    ks = mq_config.keys
    data = {"payload": f'{{"card": "{secret}"}}', "headers": json.dumps({"x-card": secret})}
    sid = r.xadd(ks.partition("odd", 0), {**data, "key": "k-visible"}).decode()
    item = ks.retry_item("odd", "secret")
    r.hset(item, mapping={**data, "key": "k-visible", "partitionId": "0", "retryCount": "1"})
    r.zadd(ks.retry_zset("odd"), {item: 6})
    r.xadd(ks.dlq("odd"), {**data, "key": "k-visible", "partitionId": "0"})
    SensitiveTopic.objects.create(cluster="default", pattern="odd")
    client = Client(raise_request_exception=True)
    client.force_login(role_user("viewer", "Viewer"))
    urls = [*_urls(odd), (f"{T}/messages/0/{sid}/", {}), (f"{A}/messages/0/{sid}", {})]
    for base, sep in ((T, "/"), (A, "")):
        urls += [(f"{base}/dlq/export-all{sep}", {"format": f}) for f in ("csv", "json")]
    leaks = []
    for url, params in urls:
        resp = client.get(url, params)
        body = (
            b"".join(resp.streaming_content) if getattr(resp, "streaming", False) else resp.content
        )
        if secret.encode() in body:
            leaks.append(f"{url} {params}")
    assert not leaks, "\n".join(leaks)


def test_issue17_pages_on_keys_of_the_wrong_type(r: redis.Redis, mq_config: MQConfig) -> None:
    """A partition that is a string, a retry set that is a hash, a DLQ that is a list:
    answers, never a crash: the error table's 503 ("could not read", as every page answers
    a Redis error reply) at worst, never a 500 or an exception."""
    make_topic(mq_config, "odd", 2)
    ks = mq_config.keys
    r.delete(ks.partition("odd", 1))
    r.set(ks.partition("odd", 1), "not a stream")
    r.hset(ks.retry_zset("odd"), "a", "b")
    r.rpush(ks.dlq("odd"), "not a stream")
    r.xadd(ks.partition("odd", 0), {"payload": "p", "key": "k"})
    client = Client(raise_request_exception=True)
    client.force_login(role_user("viewer", "Viewer"))
    failures = []
    for url, params in [*_urls({"x": "1-0"}), (f"{T}/dlq/", {}), (f"{T}/pending/", {})]:
        try:
            status = _get(client, url, params)
        except Exception as exc:  # every crash listed, not just the first
            failures.append(f"{url} {params}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        if status >= 500 and status != 503:
            failures.append(f"{url} {params}: {status}")
    assert not failures, "\n".join(failures)
