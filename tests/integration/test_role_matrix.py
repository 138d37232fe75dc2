"""Every URL pattern x anonymous / no role / viewer / operator / admin, with CSRF enforced.

Deny by default: a pattern nobody listed here is still checked (anonymous and a
logged-in user without a role are refused, roles get no server error). Every
write view answers GET with 405 and a POST without CSRF token with 403.

Two scoped Admins (Admin's permissions through a group with topic scopes) run the
same matrix: ``ScopedAdmin``'s scopes cover the matrix's topics, so it gets what an
Admin gets but on the global endpoints (access administration: 403);
``ElsewhereAdmin``'s cover other topics only, so every endpoint of the matrix's
topics answers 403 or 404, the global ones 403, and cluster-wide reads still work.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver

from dashboard import urls as dashboard_urls
from dashboard.models import ReplayJob, ReplayJobStatus
from dashboard.services.audit import Actor
from tests.integration.dlq_support import add_letters, make_topic, role_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

ROLES = ("anonymous", "nobody", "Viewer", "Operator", "Admin", "ScopedAdmin", "ElsewhereAdmin")
# scoped Admins: (cluster or "", pattern) scopes of their only group
SCOPED_ADMINS = {
    "ScopedAdmin": (("default", "orders"), ("", "purge*")),
    "ElsewhereAdmin": (("", "elsewhere-*"),),
}
PUBLIC = {"healthz", "readyz", "metrics"}
LOGIN = 302  # pages send anonymous users to the login page
R = {"anonymous": LOGIN, "nobody": 403, "Viewer": 200, "Operator": 200, "Admin": 200}
API_R = {**R, "anonymous": 401}
OP_WRITE = {"anonymous": LOGIN, "nobody": 403, "Viewer": 403, "Operator": 302, "Admin": 302}
ADMIN_WRITE = {**OP_WRITE, "Operator": 403}
ADMIN_READ = {**R, "Viewer": 403, "Operator": 403}
API_ADMIN_WRITE = {**API_R, "Viewer": 403, "Operator": 403, "Admin": 400}  # "{}": no target
API_OP_OK = {**API_R, "Viewer": 403}
API_ADMIN_OK = {**API_OP_OK, "Operator": 403}
READ_OK = {200, 404}  # a read may say "no such thing yet", never 5xx
QUERY = {
    "api-pending": "?group=default-group",
    "pending": "?group=default-group",
    "pending-export": "?group=default-group",
    "api-pending-export": "?group=default-group",
    "topic-trim-plan": "?maxlen=100000",
}

# name -> (method, expected status per role, POST data builder)
EXPECT: dict[str, tuple[str, dict[str, int], Any]] = {
    "dlq": ("GET", R, None),
    "dlq-letter": ("GET", R, None),
    "dlq-job": ("GET", R, None),
    "dlq-job-progress": ("GET", R, None),
    "audit": ("GET", R, None),
    "audit-export-csv": ("GET", R, None),
    "audit-export-json": ("GET", R, None),
    "audit-verify": ("GET", R, None),
    "api-dlq": ("GET", API_R, None),
    "api-audit": ("GET", API_R, None),
    "dlq-export": (
        "POST",
        {**R, "Viewer": 200},
        lambda ctx, role: {"ids": ctx["letters"][0]},
    ),
    "dlq-replay": ("POST", OP_WRITE, lambda ctx, role: {}),
    "dlq-bulk-preview": ("POST", OP_WRITE, lambda ctx, role: {"all": "1"}),
    "dlq-job-start": ("POST", OP_WRITE, lambda ctx, role: {"reason": "matrix"}),
    "dlq-job-cancel": ("POST", OP_WRITE, lambda ctx, role: {}),
    "dlq-delete": ("POST", ADMIN_WRITE, lambda ctx, role: {"reason": "matrix"}),
    "dlq-purge": (
        "POST",
        ADMIN_WRITE,
        lambda ctx, role: {"confirm": "purgeme", "reason": "matrix"},
    ),
    "pending-claim": (
        "POST",
        OP_WRITE,
        lambda ctx, role: {
            "group": "default-group",
            "entry": [f"0:{ctx['pending'][role]}"],
            "consumer": "c9",
        },
    ),
    "pending-move-to-dlq": (
        "POST",
        OP_WRITE,
        lambda ctx, role: {
            "group": "default-group",
            "entry": [f"0:{ctx['pending'][role]}"],
            "reason": "matrix",
        },
    ),
    # the message browser (read) and produce a test message (Operator)
    "topic-browse": ("GET", R, None),
    "api-topic-browse": ("GET", API_R, None),
    "topic-tail": ("GET", R, None),
    "api-topic-tail": ("GET", API_R, None),
    "topic-produce": ("POST", OP_WRITE, lambda ctx, role: {"payload": "matrix"}),
    "api-topic-produce": (
        "POST",
        {**API_OP_OK, "Operator": 201, "Admin": 201},
        lambda ctx, role: {"payload": "matrix"},
    ),
    "group-position": ("GET", ADMIN_READ, None),
    "group-position-plan": ("GET", ADMIN_READ, None),
    "group-position-move": (
        "POST",
        {**ADMIN_WRITE, "Admin": 200},
        lambda ctx, role: {"kind": "earliest", "reason": "matrix", "confirm": "default-group"},
    ),
    # access administration: Admin only (manage_access); empty forms are bad input (400)
    "access": ("GET", ADMIN_READ, None),
    "access-user": ("GET", {**ADMIN_READ, "Admin": 404}, None),
    "access-role": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "access-groups": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "access-group-delete": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "access-members": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "access-sensitive": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-access": ("GET", {**API_R, "Viewer": 403, "Operator": 403}, None),
    "api-access-user": ("GET", {**API_R, "Viewer": 403, "Operator": 403, "Admin": 404}, None),
    "api-access-role": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "api-access-groups": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "api-access-group-delete": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "api-access-members": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "api-access-sensitive": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "topic-retention": ("GET", R, None),
    # trimming deletes entries: Admin (purge); an empty form has no rule, so Admin gets 400
    "topic-retention-trim": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-topic-retention": ("GET", API_R, None),
    "api-topic-retention-trim": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "api-group-position-plan": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "api-group-position": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    # topic and group administration: Admin; an empty form or body is bad input (400)
    "topic-create-form": ("GET", ADMIN_READ, None),
    "topic-create": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-topic-create": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "topic-admin": ("GET", ADMIN_READ, None),
    "api-topic-admin": ("GET", {**API_R, "Viewer": 403, "Operator": 403}, None),
    "topic-grow": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-topic-grow": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "topic-trim-plan": ("GET", ADMIN_READ, None),
    "api-topic-trim-plan": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "topic-trim": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-topic-trim": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "topic-delete-plan": ("GET", ADMIN_READ, None),
    "api-topic-delete-plan": ("POST", {**API_ADMIN_WRITE, "Admin": 200}, lambda ctx, role: {}),
    "topic-delete": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-topic-delete": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "group-create": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-group-create": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    "group-delete-plan": ("GET", ADMIN_READ, None),
    "api-group-delete-plan": ("POST", {**API_ADMIN_WRITE, "Admin": 200}, lambda ctx, role: {}),
    "group-delete": ("POST", {**ADMIN_WRITE, "Admin": 400}, lambda ctx, role: {}),
    "api-group-delete": ("POST", API_ADMIN_WRITE, lambda ctx, role: {}),
    # Admin only; the matrix has no open alert, so an Admin gets the 400 of bad input
    "alert-mute": (
        "POST",
        {**ADMIN_WRITE, "Admin": 400},
        lambda ctx, role: {"cluster": "default", "alert": "status:orders", "reason": "matrix"},
    ),
    "alert-unmute": (
        "POST",
        {**ADMIN_WRITE, "Admin": 400},
        lambda ctx, role: {"cluster": "default", "alert": "status:orders"},
    ),
    "api-alert-mute": (
        "POST",
        {**API_R, "Viewer": 403, "Operator": 403, "Admin": 400},
        lambda ctx, role: {},
    ),
    "api-alert-unmute": (
        "POST",
        {**API_R, "Viewer": 403, "Operator": 403, "Admin": 400},
        lambda ctx, role: {},
    ),
    "api-dlq-letter": ("GET", API_R, None),
    "api-dlq-job": ("GET", API_R, None),
    "api-collectors": ("GET", API_R, None),
    "api-audit-verify": ("GET", API_R, None),
    "api-openapi": ("GET", API_R, None),
    "api-dlq-delete": ("POST", API_ADMIN_OK, lambda ctx, role: {"reason": "matrix"}),
    "api-dlq-purge": (
        "POST",
        API_ADMIN_OK,
        lambda ctx, role: {"confirm": "purgeme", "reason": "matrix"},
    ),
    "api-dlq-export": ("POST", API_R, lambda ctx, role: {"ids": [ctx["letters"][0]]}),
    "api-dlq-bulk-preview": (
        "POST",
        {**API_OP_OK, "Operator": 201, "Admin": 201},
        lambda ctx, role: {"all": True},
    ),
    "api-dlq-job-start": ("POST", API_OP_OK, lambda ctx, role: {"reason": "matrix"}),
    "api-dlq-job-cancel": ("POST", API_OP_OK, lambda ctx, role: {}),
    "api-pending-claim": (
        "POST",
        API_OP_OK,
        lambda ctx, role: {
            "group": "default-group",
            "partition": 0,
            "ids": [ctx["pending"][role]],
            "consumer": "c9",
        },
    ),
    "api-pending-move-to-dlq": (
        "POST",
        API_OP_OK,
        lambda ctx, role: {
            "group": "default-group",
            "partition": 0,
            "ids": [ctx["pending"][role]],
            "reason": "matrix",
        },
    ),
    "api-dlq-replay": (
        "POST",
        {**API_R, "Viewer": 403, "Operator": 200, "Admin": 200},
        lambda ctx, role: {},
    ),
    # exports are audited reads: every role that may see the topic (streamed answers)
    "lag-export": ("GET", R, None),
    "pending-export": ("GET", R, None),
    "dlq-export-all": ("GET", R, None),
    "api-lag-export": ("GET", API_R, None),
    "api-pending-export": ("GET", API_R, None),
    "api-dlq-export-all": ("GET", API_R, None),
    # the partition panel: skew from the snapshot, a bounded live hot-key sample
    "hot-keys": ("GET", R, None),
    "api-hot-keys": ("GET", API_R, None),
    "api-topic-partitions": ("GET", API_R, None),
    # the retry browser: reads for every role, retry now / delete for Operator and Admin
    "retries": ("GET", R, None),
    "topic-retries": ("GET", R, None),
    "api-retries": ("GET", API_R, None),
    "api-topic-retries": ("GET", API_R, None),
    "topic-retries-retry": ("POST", OP_WRITE, lambda ctx, role: {"ids": [ctx["retry"][role]]}),
    "topic-retries-delete": (
        "POST",
        OP_WRITE,
        lambda ctx, role: {"ids": [ctx["retry"][role]], "reason": "matrix"},
    ),
    "api-topic-retries-retry": (
        "POST",
        API_OP_OK,
        lambda ctx, role: {"ids": [ctx["retry"][role]]},
    ),
    "api-topic-retries-delete": (
        "POST",
        API_OP_OK,
        lambda ctx, role: {"ids": [ctx["retry"][role]], "reason": "matrix"},
    ),
    # raw payload downloads: whoever may see the payloads (the topic is not sensitive)
    "dlq-letter-payload": ("GET", R, None),
    "retry-item-payload": ("GET", R, None),
    "message-payload": ("GET", R, None),
    "api-dlq-letter-payload": ("GET", API_R, None),
    "api-retry-item-payload": ("GET", API_R, None),
    "api-message-payload": ("GET", API_R, None),
}


def all_patterns() -> list[URLPattern]:
    found: list[URLPattern] = []

    def walk(items: list[Any]) -> None:
        for item in items:
            if isinstance(item, URLResolver):
                walk(item.url_patterns)
            else:
                found.append(item)

    walk(dashboard_urls.urlpatterns)
    return found


@pytest.fixture
def ctx(r, mq_config) -> dict[str, Any]:
    make_topic(mq_config, "orders", 2)
    make_topic(mq_config, "purgeme", 1)
    letters = add_letters(r, mq_config, "orders", 3)
    add_letters(r, mq_config, "purgeme", 1, partitions=1)
    key = mq_config.keys.partition("orders", 0)
    pending = {role: r.xadd(key, {"payload": role}).decode() for role in ROLES}
    r.xreadgroup("default-group", "c1", {key: ">"}, count=100)
    retry = {}
    for role in ROLES:
        item = f"{role.lower()}-item"
        r.hset(
            mq_config.keys.retry_item("orders", item), mapping={"topic": "orders", "payload": role}
        )
        r.zadd(mq_config.keys.retry_zset("orders"), {mq_config.keys.retry_item("orders", item): 1})
        retry[role] = item
    job = ReplayJob.objects.create(
        cluster="default",
        topic="orders",
        reason="",
        frozen_ids="\n".join(letters),
        frozen_hash="0" * 64,
        total=len(letters),
        first_id=letters[0],
        last_id=letters[-1],
        status=ReplayJobStatus.DRAFT,
    )
    users = {
        role: role_user(role.lower(), None if role == "nobody" else role)
        for role in ROLES[1:]
        if role not in SCOPED_ADMINS
    }
    for role, scopes in SCOPED_ADMINS.items():
        users[role] = scoped_admin(role.lower(), scopes)
    return {"letters": letters, "pending": pending, "job": job, "users": users, "retry": retry}


def scoped_admin(name: str, scopes: tuple[tuple[str, str], ...]) -> Any:
    """A user whose only group carries Admin's permissions on ``scopes``."""
    from django.contrib.auth.models import Group

    from dashboard.models import GroupTopicScope

    group = Group.objects.create(name=f"scope:{name}")
    group.permissions.set(Group.objects.get(name="Admin").permissions.all())
    for cluster, pattern in scopes:
        GroupTopicScope.objects.create(group=group, cluster=cluster, pattern=pattern)
    user = role_user(name, None)
    user.groups.add(group)
    return user


# actions without a topic: only a grant without scope allows them
GLOBAL = frozenset(name for name in EXPECT if name.startswith(("access", "api-access")))
NAMES_A_TOPIC = frozenset({"alert-mute", "alert-unmute"})  # their forms name status:orders


def expected_for(pattern: URLPattern, role: str, table: dict[str, int] | None) -> set[int] | None:
    """The statuses ``role`` may get from ``pattern`` (None: the deny-by-default checks)."""
    if role not in SCOPED_ADMINS:
        return None if table is None else {table[role]}
    if pattern.name in GLOBAL:
        return {403}
    if role == "ElsewhereAdmin" and (
        "topic" in pattern.pattern.regex.groupindex or pattern.name in NAMES_A_TOPIC
    ):
        return {403, 404}
    return None if table is None else {table["Admin"]}


def url_for(pattern: URLPattern, ctx: dict[str, Any]) -> str:
    from django.urls import reverse

    values = {
        "cluster": "default",
        "topic": "purgeme" if pattern.name in ("dlq-purge", "api-dlq-purge") else "orders",
        "partition": 0,
        "entry_id": ctx["pending"]["Viewer"],
        "dlq_id": ctx["letters"][1]
        if pattern.name in ("dlq-delete", "api-dlq-delete")
        else ctx["letters"][0],
        "job_id": ctx["job"].pk,
        "group": "default-group",
        "name": "order_totals",  # a pipeline name (pages answer 404 until it has checkpoints)
        "username": "no-such-user",  # access pages answer 404 for it
        "item_id": ctx["retry"]["anonymous"],  # a retry item no role's action deletes
    }
    names = set(pattern.pattern.regex.groupindex)
    return reverse(f"dashboard:{pattern.name}", kwargs={k: values[k] for k in names})


def client_as(role: str, ctx: dict[str, Any]) -> Client:
    client = Client(enforce_csrf_checks=True)
    if role != "anonymous":
        client.force_login(ctx["users"][role])
    client.get("/login/")  # sets the CSRF cookie (the login form has a token)
    return client


def token(client: Client) -> str:
    return client.cookies["csrftoken"].value


def test_every_pattern_has_a_name() -> None:
    assert all(p.name for p in all_patterns())


@pytest.mark.parametrize("role", ROLES)
def test_role_matrix(role: str, ctx: dict[str, Any]) -> None:
    client = client_as(role, ctx)
    problems: list[str] = []
    for pattern in all_patterns():
        url = url_for(pattern, ctx)
        method, expected, data = EXPECT.get(pattern.name, ("GET", None, None))
        if method == "POST":
            is_api = pattern.name.startswith("api-")
            body = data(ctx, role)
            if is_api:
                resp = client.post(
                    url,
                    json.dumps(body),
                    content_type="application/json",
                    HTTP_X_CSRFTOKEN=token(client),
                )
            else:
                resp = client.post(url, body, HTTP_X_CSRFTOKEN=token(client))
        else:
            resp = client.get(url + QUERY.get(pattern.name, ""))
        status = resp.status_code
        moved = status == 302 and not resp["Location"].startswith("/login/")
        want = expected_for(pattern, role, expected)
        if want is not None:
            if status not in want:
                problems.append(f"{method} {pattern.name}: {status} not in {sorted(want)}")
        elif pattern.name in PUBLIC:
            if status >= 500 and pattern.name != "readyz":
                problems.append(f"{pattern.name}: {status}")
        elif role == "anonymous":
            if status not in (302, 401):
                problems.append(f"GET {pattern.name} anonymous: {status} (must be refused)")
        elif role == "nobody":
            # Deny by default: refused outright (a redirect may lead to the refusal).
            if status not in (403, 404) and not moved:
                problems.append(f"GET {pattern.name} without role: {status} (deny by default)")
        elif status not in READ_OK and not moved:
            problems.append(f"GET {pattern.name} as {role}: {status}")
    assert not problems, "\n".join(problems)


WRITE_VIEWS = sorted(name for name, (method, _, _) in EXPECT.items() if method == "POST")


@pytest.mark.parametrize("name", WRITE_VIEWS)
def test_write_views_are_post_only_and_need_csrf(name: str, ctx: dict[str, Any]) -> None:
    pattern = next(p for p in all_patterns() if p.name == name)
    url = url_for(pattern, ctx)
    admin = client_as("Admin", ctx)
    assert admin.get(url).status_code == 405
    _, _, data = EXPECT[name]
    if name.startswith("api-"):
        resp = admin.post(url, "{}", content_type="application/json")
    else:
        resp = admin.post(url, data(ctx, "Admin"))
    assert resp.status_code == 403, f"{name} accepted a POST without CSRF token"


def test_api_bearer_token_needs_no_csrf_but_same_permissions(ctx: dict[str, Any]) -> None:
    from dashboard.models import ApiToken

    _, viewer_token = ApiToken.issue(ctx["users"]["Viewer"], read_only=False)
    _, op_token = ApiToken.issue(ctx["users"]["Operator"], read_only=False)
    client = Client(enforce_csrf_checks=True)
    url = f"/api/v1/clusters/default/topics/orders/dlq/{ctx['letters'][2]}/replay"
    resp = client.post(
        url, "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {viewer_token}"
    )
    assert resp.status_code == 403
    resp = client.post(
        url, "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {op_token}"
    )
    assert resp.status_code == 200
    assert resp.json()["replayed"] is True


def test_security_headers_on_pages(ctx: dict[str, Any]) -> None:
    resp = client_as("Viewer", ctx).get("/clusters/default/topics/orders/dlq/")
    assert resp["X-Frame-Options"] == "DENY"
    assert "script-src 'self'" in resp["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in resp["Content-Security-Policy"]


TOPIC_LESS_GETS = sorted(
    p.name
    for p in all_patterns()
    if p.name not in PUBLIC
    and "topic" not in p.pattern.regex.groupindex
    and EXPECT.get(p.name, ("GET",))[0] == "GET"
)


@pytest.mark.parametrize("name", TOPIC_LESS_GETS)
def test_scoped_viewer_sees_no_out_of_scope_topic_on_topic_less_endpoints(
    name: str, ctx: dict[str, Any], r, mq_config
) -> None:
    """A Viewer scoped to ``orders*`` on this cluster: every topic-less page, export and API
    answers without a server error and names no row of another topic."""
    from django.contrib.auth.models import Group

    from dashboard.models import GroupTopicScope
    from dashboard.services.audit import audit_begin, audit_complete

    make_topic(mq_config, "payments-secret", 1)
    add_letters(r, mq_config, "payments-secret", 1, partitions=1)
    for topic in ("orders", "payments-secret"):
        intent = audit_begin(
            Actor(ctx["users"]["Admin"], cluster="default", topic=topic),
            "dlq_purge",
            reason=f"purge {topic}",
        )
        audit_complete(intent, outcome="purged")
    scoped = Group.objects.create(name="orders-viewers")
    scoped.permissions.set(Group.objects.get(name="Viewer").permissions.all())
    GroupTopicScope.objects.create(group=scoped, cluster="default", pattern="orders*")
    user = role_user("scoped-viewer", None)
    user.groups.add(scoped)
    client = Client()
    client.force_login(user)
    pattern = next(p for p in all_patterns() if p.name == name)
    resp = client.get(url_for(pattern, ctx) + QUERY.get(name, ""))
    assert resp.status_code < 500, f"{name}: {resp.status_code}"
    body = b"".join(resp.streaming_content) if resp.streaming else resp.content
    assert b"payments-secret" not in body, name
