"""One owned partition, handled serially by one thread while its lease holds.

The worker reads new entries with XREADGROUP, hands them to the handler in
order and acks in batches through the fenced ack script, pipelined with the
next read (one round trip). It first claims what is pending in the group and
then, every ``reclaim_interval_ms``, the idle orphans (:mod:`.reclaim`).

It stops touching its partition when its lease could not be renewed in time
(local deadline = renew start + TTL - margin), so a partitioned consumer stops
before a peer can take over. A zombie that wakes up late is refused by the
epoch check in every write script (:class:`FencedError`) and drops its
in-flight work. On a graceful stop it finishes the message in hand, flushes its
acks and releases its lease; unhandled entries stay pending for the next owner.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from mqcore.acks import ack, ack_reply_count
from mqcore.boundary import translate
from mqcore.codec import decode_text
from mqcore.consumer.handling import handle_entry
from mqcore.consumer.host import WorkerHost, report_acked
from mqcore.consumer.reclaim import claim_pending, drop_deleted
from mqcore.consumer_metrics import Tally
from mqcore.errors import ConnectionLostError, FencedError, MQError, UnknownGroupError
from mqcore.leases import Lease

__all__ = ["PartitionWorker"]

log = logging.getLogger("mqcore.consumer")


class PartitionWorker(threading.Thread):
    """Serial processing of one owned partition; ``on_exit`` runs when the thread ends."""

    def __init__(
        self,
        host: WorkerHost,
        lease: Lease,
        on_exit: Callable[[PartitionWorker], None],
    ) -> None:
        super().__init__(name=f"mq-{host.topic}-p{lease.partition}", daemon=True)
        self.host = host
        self.lease = lease
        self.on_exit = on_exit
        self.partition = lease.partition
        self.stream = host.keys.partition(host.topic, lease.partition)
        ttl_s = host.options.lease_ttl_ms / 1000
        # Stop a little before the TTL so a peer cannot take over while we still work.
        self.margin_s = min(ttl_s / 5, 2.0)
        self.deadline = time.monotonic() + ttl_s
        self.stopping = threading.Event()
        self.release_on_exit = True
        self.acks: list[str] = []
        # counts sent with the acks (mqcore.consumer_metrics), None when not published
        self.tally = Tally() if host.options.publish_metrics else None
        self.lost = False
        # True: our own PEL holds entries to handle before new ones (at start: a previous run
        # of this consumer may have left some)
        self.backlog = True

    # --- lease state --------------------------------------------------------
    def lease_valid(self) -> bool:
        return not self.lost and time.monotonic() < self.deadline - self.margin_s

    def request_stop(self, *, release: bool) -> None:
        self.release_on_exit = self.release_on_exit and release
        self.stopping.set()

    def lose(self) -> None:
        """The lease is gone (renew refused or fenced): stop at once, keep nothing."""
        self.lost = True
        self.release_on_exit = False
        self.stopping.set()

    def _working(self) -> bool:
        return not self.stopping.is_set() and self.lease_valid()

    # --- main loop ----------------------------------------------------------
    def run(self) -> None:
        h = self.host
        # on take-over after a holder that did not release cleanly (crashed, stalled, or
        # Java), the pending entries it left are claimed first, in order, before anything
        # new. An mqcore holder's late acks are fenced (its epoch is stale): no wait. A
        # holder that may ack unfenced (Java) gets the grace first, so that a stalled one's
        # late ack is not doubled
        grace = 0 if self.lease.clean_handoff else max(0, h.options.grace_ms)
        try:
            if grace and not self._unfenced_pending():
                grace = 0
            reclaim_idle_ms, next_reclaim = grace, 0.0
            if grace:
                self.stopping.wait(grace / 1000)
            while self._working():
                try:
                    if time.monotonic() >= next_reclaim:
                        self._reclaim(min_idle_ms=reclaim_idle_ms)
                        reclaim_idle_ms = h.options.claim_idle_ms
                        next_reclaim = time.monotonic() + h.options.reclaim_interval_ms / 1000
                        continue
                    self._handle_all(self._read())
                except UnknownGroupError:
                    # a partition added by a Java service (meta and partitions set only):
                    # its stream or our group does not exist yet
                    self._create_group()
                    self.stopping.wait(0.1)
                except ConnectionLostError as exc:
                    # entries in hand stay pending under our name: re-read them in order
                    h.stats.add(errors=1)
                    log.warning("p%d: Redis call failed: %s", self.partition, exc)
                    self.backlog = True
                    self.stopping.wait(0.2)
            if not self.stopping.is_set() and not self.lost:
                log.warning("p%d: lease not renewed in time, stopping work", self.partition)
            self._flush_acks(last=True)
        except FencedError as exc:
            self._fenced(exc)
        except MQError as exc:
            h.stats.add(errors=1)
            log.warning("p%d worker stops: %s", self.partition, exc)
        except Exception:
            h.stats.add(errors=1)
            log.exception("p%d worker crashed", self.partition)
        finally:
            self._exit()

    def _unfenced_pending(self) -> bool:
        """Whether a consumer whose acks may not be fenced holds entries of this partition
        pending: one that is not an mqcore consumer of the group (no heartbeat record under
        its name: a Java consumer, or an mqcore one silent for longer than the heartbeats
        are kept, which errs on the side of the wait). mqcore consumers ack through the
        fenced scripts, which refuse an epoch older than this lease's."""
        h = self.host
        try:
            summary = h.client.xpending(self.stream, h.group)
        except redis.ResponseError:
            return False  # no stream or no group yet: nothing pending
        except redis.RedisError as exc:
            raise translate(exc, "pending summary") from exc
        names = {decode_text(c["name"]) for c in summary.get("consumers") or []} - {h.name}
        if not names:
            return False
        try:
            beats = h.client.hmget(h.keys.consumers(h.topic, h.group), sorted(names))
        except redis.RedisError as exc:
            raise translate(exc, "consumers") from exc
        return any(beat is None for beat in beats)

    def _create_group(self) -> None:
        h = self.host
        try:
            h.client.xgroup_create(self.stream, h.group, id="0", mkstream=True)
            log.warning("p%d: created group %s on %s (a new partition)", self.partition,
                        h.group, self.stream)  # fmt: skip
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise translate(exc, "create group") from exc
        except redis.RedisError as exc:
            raise translate(exc, "create group") from exc

    def _fenced(self, exc: FencedError) -> None:
        self.host.stats.add(fenced=1)
        log.warning("p%d fenced, dropping in-flight work: %s", self.partition, exc)
        self.acks.clear()
        self.lose()

    def _exit(self) -> None:
        # counts a stop's last acks did not carry (fenced, crashed): the handler ran, so they
        # are sent still (statistics, not a fenced write)
        self._send_metrics_alone()
        if self.release_on_exit and not self.lost:
            try:
                self.host.leases.release(self.lease)
            except MQError as exc:
                log.warning("p%d lease release failed: %s", self.partition, exc)
        self.on_exit(self)

    def _handle_all(self, entries: Sequence[tuple[Any, Any]]) -> None:
        """Handle ``entries`` in order; a full ack batch is flushed while more entries follow.

        The acks in hand when the batch ends are left for the caller's next step, which
        sends them at once: :meth:`_read` pipelines them with the next read (one round trip
        instead of two), :meth:`_reclaim` and a stopping worker flush them.
        """
        h = self.host
        ack_batch = h.options.ack_batch
        last = len(entries)
        handled = 0
        try:
            for raw_id, raw_fields in entries:
                if self.stopping.is_set() or not self.lease_valid():
                    return
                handled += 1
                entry_id = raw_id.decode() if isinstance(raw_id, bytes) else raw_id
                epoch = self.lease.epoch
                if handle_entry(h, self.partition, epoch, entry_id, raw_fields, self.tally):
                    self.acks.append(entry_id)
                if len(self.acks) >= ack_batch and handled < last:
                    self._flush_acks()
        finally:
            if handled:
                h.stats.add(processed=handled)

    def _reclaim(self, *, min_idle_ms: int) -> None:
        """Claim the group's pending entries of this partition and handle them."""
        h = self.host
        self._flush_acks()  # none of ours still pending when XAUTOCLAIM looks
        pages = claim_pending(
            h.client,
            self.stream,
            h.group,
            h.name,
            min_idle_ms=min_idle_ms,
            keep_going=self._working,
        )
        for entries, deleted in pages:
            if deleted:
                drop_deleted(h, self.partition, self.lease.epoch, deleted)
            if entries:
                h.stats.add(reclaimed=len(entries))
                self._handle_all(entries)
                self._flush_acks()

    # --- reads and acks -----------------------------------------------------
    def _read(self) -> Sequence[tuple[Any, Any]]:
        """XREADGROUP, pipelined after the pending ack flush (one round trip).

        Reads our own pending entries (id ``0``) while ``backlog`` is set, new
        ones (``>``) otherwise; the ack flush runs first, so acked entries are
        never read back. A read that carries acks does not BLOCK: on a drained
        stream their reply (stats, ``on_ack``) would wait out ``block_ms``; the
        next read, with no acks, blocks. Redis Cluster pipelines refuse scripts:
        there the acks go first, on their own. The consumer metrics, when due, ride this
        pipeline too (:meth:`_queue_metrics`).
        """
        h = self.host
        if self.acks and isinstance(h.client, redis.RedisCluster):
            self._flush_acks()
        pipe = h.client.pipeline(transaction=False)
        acks = self.acks
        if acks:
            self._ack(acks, pipe)
        self._queue_metrics(pipe)
        if self.backlog or acks:
            start = "0" if self.backlog else ">"
            pipe.xreadgroup(h.group, h.name, {self.stream: start}, count=h.options.batch_size)
        else:
            pipe.xreadgroup(
                h.group, h.name, {self.stream: ">"}, count=h.options.batch_size, block=h.block_ms
            )
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            raise translate(exc, "read") from exc
        if acks:
            self.acks = []
            self._check_ack(acks, replies[0])
        reply = replies[-1]
        if isinstance(reply, Exception):
            raise translate(reply, "read")
        entries = list(reply[0][1]) if reply else []
        if self.backlog and not entries:
            self.backlog = False
        return entries

    def _check_ack(self, acks: list[str], reply: Any) -> None:
        """Act on the reply of a pipelined ack of ``acks``."""
        if isinstance(reply, redis.exceptions.NoScriptError):
            self._ack(acks)
        elif isinstance(reply, Exception):
            self.acks = acks + self.acks  # keep them for the next flush
            raise translate(reply, "ack")
        elif ack_reply_count(reply) < 0:
            raise FencedError(f"p{self.partition}: epoch {self.lease.epoch} is stale")
        else:
            self._acked(acks)

    def _queue_metrics(self, pipe: Any, *, force: bool = False) -> bool:
        """Queue the tally's counts on ``pipe`` when they are due (``force``: whenever any
        wait); whether any were. Their replies are not checked: a failed HINCRBY (a key of
        another type) costs the counts, never the acks."""
        tally = self.tally
        if tally is None or not tally.due(force=force):
            return False
        h = self.host
        tally.queue(pipe, h.keys, h.topic, h.group, h.name)
        return True

    def _ack(self, ids: list[str], pipe: Any = None) -> None:
        """The fenced ack of ``ids`` (:func:`mqcore.acks.ack`): now, or queued on ``pipe``,
        whose reply :meth:`_read` checks."""
        h, lease = self.host, self.lease
        ack(
            h.client, h.keys, topic=h.topic, group=h.group, partition=self.partition, ids=ids,
            epoch=lease.epoch, policy=h.options.ack_policy, owner=lease.owner,
            frontier=h.encoding, pipe=pipe,
        )  # fmt: skip
        if pipe is None:
            self._acked(ids)

    def _acked(self, ids: list[str]) -> None:
        self.host.stats.add(acked=len(ids))
        report_acked(self.host, self.partition, ids)

    def _flush_acks(self, *, last: bool = False) -> None:
        """Send the acks in hand, with the consumer metrics when due (in one pipeline; on
        Redis Cluster, whose pipelines refuse scripts, the metrics wait for the next read).
        ``last`` (the worker stops): whatever metrics wait go too, alone if no acks do."""
        cluster = isinstance(self.host.client, redis.RedisCluster)
        if not self.acks:
            if last:
                self._send_metrics_alone()
            return
        ids, self.acks = self.acks, []
        if cluster or not (self.tally is not None and self.tally.due(force=last)):
            try:
                self._ack(ids)
            except ConnectionLostError:
                self.acks = ids + self.acks
                raise
            if last:
                self._send_metrics_alone()
            return
        pipe = self.host.client.pipeline(transaction=False)
        self._ack(ids, pipe)
        self._queue_metrics(pipe, force=last)
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            self.acks = ids + self.acks
            raise translate(exc, "ack") from exc
        self._check_ack(ids, replies[0])

    def _send_metrics_alone(self) -> None:
        """A stopping worker's last metrics, when no ack carries them (one round trip at
        stop; a failure costs the counts only)."""
        pipe = self.host.client.pipeline(transaction=False)
        if self._queue_metrics(pipe, force=True):
            try:
                pipe.execute(raise_on_error=False)
            except redis.RedisError as exc:
                log.debug("p%d: metrics not sent: %s", self.partition, exc)
