"""Demo-like data for ``scripts/lighthouse.sh``; prints a logged-in Admin's session cookie.

Run with the production settings pointed at a throwaway Redis and database (the shell script
does that): three topics with lag, pending entries, leases and dead letters, then collector
passes a second apart so the charts have series.
"""

from __future__ import annotations

import json
import os
import secrets
import time

import django


def seed() -> None:
    from dashboard.clusters import cluster_config
    from dashboard.collectors.passes import collect_cluster
    from mqcore.admin import Admin
    from mqcore.producer import OutgoingMessage, Producer
    from mqcore.topics import Topics

    cfg = cluster_config("default")
    topics = {"orders": (8, "billing"), "payments": (4, "ledger"), "emails": (4, "mailer")}
    producer = Producer(cfg)
    client = cfg.client()
    for topic, (parts, group) in topics.items():
        Topics(cfg).create(topic, parts, groups=[group])
        body = [
            OutgoingMessage(json.dumps({"n": i, "topic": topic}), key=f"k{i % 40}")
            for i in range(400)
        ]
        producer.send_many(topic, body)
        for p in range(parts):
            stream = cfg.keys.partition(topic, p)
            reply = client.xreadgroup(group, f"{topic}-worker-{p % 2}", {stream: ">"}, count=30)
            ids = [entry_id.decode() for entry_id, _ in reply[0][1]] if reply else []
            client.xack(stream, group, *ids[:20])
            Admin(cfg).move_to_dlq(topic, group, p, ids[20:24], reason="handler rejected it")
            client.set(cfg.keys.lease(topic, group, p), f"{topic}-worker-{p % 2}", px=600_000)
    for n in range(12):
        producer.send_many("orders", [OutgoingMessage(f"late {n}.{i}") for i in range(20)])
        result = collect_cluster("default", claim=False)
        if not result.stored:
            raise SystemExit(f"collector pass failed: {result.error or result.skipped_reason}")
        time.sleep(1)


def admin_session() -> str:
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.contrib.sessions.backends.db import SessionStore

    from dashboard.permissions import roles_sync

    roles_sync()
    user = User.objects.create_user("lighthouse", password=secrets.token_urlsafe(16))
    user.groups.add(Group.objects.get(name="Admin"))
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return str(session.session_key)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.prod")
    django.setup()
    seed()
    print(admin_session())


if __name__ == "__main__":
    main()
