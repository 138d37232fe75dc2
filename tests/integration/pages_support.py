"""Helpers for the pages tests: real MQ data through mqcore, snapshots through the store."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
from django.contrib.auth.models import Group, User

from dashboard.clusters import cluster_config, console_keys, console_redis
from dashboard.permissions import roles_sync
from dashboard.store import ConsoleStore
from mqcore.admin import Admin
from mqcore.models import ClusterSnapshot

CLUSTER = "default"


def make_user(username: str = "viewer", role: str = "Viewer") -> User:
    user = User.objects.create_user(username, password="pw-" + username + "-123")
    roles_sync()
    group = Group.objects.get(name=role)
    user.groups.add(group)
    return user


def enrich(snapshot: dict[str, Any], statuses: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The enrichment the collectors add, computed simply (tests need stable values)."""
    statuses = statuses or {}
    snapshot["cluster"] = CLUSTER
    for topic in snapshot["topics"]:
        lags = [g["lag"] for g in topic["groups"]]
        topic["lag"] = None if any(v is None for v in lags) else sum(lags)
        lag_ms = [g["lag_ms"] for g in topic["groups"] if g["lag_ms"] is not None]
        topic["lag_ms"] = max(lag_ms) if lag_ms else None
        topic["pending"] = sum(g["pending"] for g in topic["groups"])
        topic["oldest_pending_ms"] = None
        topic["dlq_growth"] = 0
        status = statuses.get(topic["topic"]) or ("UNKNOWN" if topic["lag"] is None else "OK")
        topic["status"] = status
        topic["status_reason"] = f"test rule for {status}"
        for group in topic["groups"]:
            group["status"] = status
            group["status_reason"] = ""
            group["complete"] = 0.5  # half the partitions have a full status window
            for part in group["partitions"]:
                part["status"] = "UNKNOWN" if part["lag"] is None else status
                part["status_reason"] = part.get("lag_reason") or ""
    return snapshot


def collect(
    *,
    statuses: Mapping[str, str] | None = None,
    points: Sequence[tuple[str, str, float]] = (),
    now_ms: int | None = None,
    incidents: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Take a real snapshot with mqcore and store it (plus ``points``) like a collector pass."""
    config = cluster_config(CLUSTER)
    snap = enrich(msgspec.to_builtins(Admin(config).snapshot(last_ids=False)), statuses)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    snap["taken_at_ms"] = now
    store_pass(
        msgspec.convert(snap, ClusterSnapshot), points=points, now_ms=now, incidents=incidents
    )
    return snap


def store_pass(
    snapshot: ClusterSnapshot | None,
    *,
    points: Iterable[tuple[str, str, float]] = (),
    now_ms: int,
    incidents: Sequence[Mapping[str, Any]] = (),
) -> None:
    ConsoleStore(console_redis(), console_keys()).pass_write(
        CLUSTER,
        now_ms=now_ms,
        snapshot=snapshot,
        state={},
        lease_state=None,
        incidents=list(incidents),
        points={"raw": list(points)},
        health={"ok": True, "last_success_ms": now_ms},
        alerts_open={},
        alerts_resolved=[],
        slot=None,
    )


def store_unreadable(value: Any, *, now_ms: int) -> None:
    """Store ``value``'s JSON where the snapshot goes, as a new version: what the store
    holds when something other than a collector pass wrote it."""
    keys, client = console_keys(), console_redis()
    client.set(keys.snapshot(CLUSTER), json.dumps(value))
    client.set(keys.snapshot_version(CLUSTER), f"{now_ms}:unreadable")
