"""Two beats, one leader: Celery beat's scheduler behind a lock in the console store.

Any number of ``celery beat`` processes may run (docker-compose runs two); only the one
that holds the lock (:meth:`ConsoleKeys.beat_leader`, a token with a TTL of
``BEAT_LOCK_TTL_MS``) sends due tasks. The others try to take it every third of the TTL.
The leader renews it as often; renewing is atomic (``dashboard/scripts/beat_lock_renew.lua``:
renewed only while the token is still the leader's), and a beat that stops releases it.

When the leader dies, its lock expires within the TTL and a follower takes it at its next
try: the schedule goes on within TTL + TTL/3. The TTL defaults to half of
``COLLECT_INTERVAL_S``, so a take-over happens within one collect interval. The new leader
may send a task the old one had sent just before it died: every periodic task is
idempotent per time slot (the collectors claim their slot), so that costs nothing.

A beat that cannot reach the console store does not lead (the broker is usually the same
Redis); it tries again at its next tick.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import Any

import redis
from celery.beat import PersistentScheduler
from django.conf import settings

from dashboard.clusters import console_keys, console_redis
from mqcore.scripts import script_for

__all__ = ["BeatLock", "LeaderScheduler"]

log = logging.getLogger("dashboard.beat")

RENEW = script_for("beat_lock_renew", "dashboard.scripts")
RELEASE = script_for("beat_lock_release", "dashboard.scripts")


class BeatLock:
    """The beat leader lock: SET NX PX to take it, the renew script to keep it."""

    def __init__(self, client: Any, key: str, ttl_ms: int) -> None:
        self.client = client
        self.key = key
        self.ttl_ms = ttl_ms
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.held = False

    def hold(self) -> bool:
        """Renew the lock if this beat holds it, else take it if it is free; whether this
        beat holds it now."""
        if self.held and RENEW(keys=[self.key], args=[self.token, self.ttl_ms], client=self.client):
            return True
        self.held = bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))
        return self.held

    def release(self) -> None:
        """Give the lock up (only if this beat holds it): a follower takes it at once."""
        if self.held:
            self.held = False
            RELEASE(keys=[self.key], args=[self.token], client=self.client)


class LeaderScheduler(PersistentScheduler):
    """Celery's default scheduler (schedule file and all) that sends only while it leads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        ttl_ms = int(settings.BEAT_LOCK_TTL_MS)
        self.lock = BeatLock(console_redis(), console_keys().beat_leader(), ttl_ms)
        self.renew_every_s = ttl_ms / 3000
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Send what is due if this beat leads; seconds until the next tick (at most a
        third of the lock's TTL, so the lock is renewed or tried for in time)."""
        was_leader = self.lock.held
        try:
            leads = self.lock.hold()
        except redis.RedisError as exc:
            self.lock.held = False
            log.warning("beat lock: console store unreachable, not leading (%s)", exc)
            return self.renew_every_s
        if leads != was_leader:
            log.info("beat %s %s", self.lock.token, "leads" if leads else "follows")
        if not leads:
            return self.renew_every_s
        return min(float(super().tick(*args, **kwargs)), self.renew_every_s)

    def close(self) -> None:
        try:
            self.lock.release()
        except redis.RedisError as exc:  # it expires on its own
            log.warning("beat lock: not released (%s)", exc)
        super().close()
