"""R19, nothing is lost: random histories against a real Redis, checked after every step.

One topic of two partitions, two consumer groups (leases, fencing epochs, each acking under
an ack-delete policy drawn per history) and a pipeline group (no lease; its checkpoint
commits move it). A history is a random sequence of: produce (inline and out-of-line
payloads), consume, ack, retry (scheduled and direct), dead-letter, the retry mover,
replay to the same and the other partition, rewind and forward moves, the housekeeper
with each rule, an operator's topic trim, Java's housekeeper re-stated, pipeline commits,
consumer kills, lease expiry, take-overs with reclaim, clean stops and a fenced zombie's
late ack.

The model knows what each reader still needs: a group's pending entries, every entry
after its position (a move's new position included), each retry item and dead letter.
After every step: every one of them is still there and resolves to the payload that was
produced (an out-of-line payload key included), and every delivery hands over exactly the
entries after the reader's position, each with the payload produced. Entries nobody needs
may go; the model forgets them. Calls into mqcore live in ``model_adapter.MQ``.

``MODEL_HISTORIES`` / ``MODEL_STEPS`` set the number and length of histories (``make soak``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from typing import TypeVar

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from mqcore.acks import ACK_POLICIES
from mqcore.codec import id_tuple
from mqcore.config import ENCODINGS
from mqcore.errors import FencedError
from mqcore.leases import Lease
from tests.faults.model_adapter import (
    GROUPS,
    INLINE_BYTES,
    MQ,
    PARTITIONS,
    PIPELINE,
    Holder,
)
from tests.faults.model_book import ReaderBook

pytestmark = [pytest.mark.redis, pytest.mark.faults]

HISTORIES = int(os.environ.get("MODEL_HISTORIES", "200"))
# at most this many steps a history (about 30 on average): a retry moved back and then a
# trim, say, needs about ten steps in a row, which histories of 25 did not reach in 500
STEPS = int(os.environ.get("MODEL_STEPS", "50"))
NODE_ENTRIES = 4  # stream-node-max-entries while the model runs: see small_nodes

parts = st.integers(0, PARTITIONS - 1)
groups = st.sampled_from(GROUPS)
picks = st.integers(0, 50)
outcomes = st.lists(
    st.sampled_from(["ack", "ack", "retry", "direct", "dead", "keep"]), min_size=1, max_size=4
)
T = TypeVar("T")


def pick(options: Sequence[T], at: int) -> T:
    return options[at % len(options)]


class NothingLost(ReaderBook, RuleBasedStateMachine):
    url = ""  # the private redis-server, set by the test

    def __init__(self) -> None:
        super().__init__()
        self.mq: MQ | None = None

    # --- setup ---------------------------------------------------------------------------
    @initialize(
        encoding=st.sampled_from(ENCODINGS),
        policies=st.tuples(*(st.sampled_from(ACK_POLICIES) for _ in GROUPS)),
    )
    def setup(self, encoding: str, policies: tuple[str, ...]) -> None:
        self.mq = MQ(self.url, encoding=encoding)
        self.mq.r.flushdb()
        self.mq.create_topic()
        self.policy = dict(zip(GROUPS, policies, strict=True))
        self.open_book()
        self.holders: dict[str, Holder | None] = dict.fromkeys(GROUPS)
        self.zombies: dict[str, list[Holder]] = {g: [] for g in GROUPS}
        self.consumers = 0
        for g in GROUPS:
            self._start(g)

    def teardown(self) -> None:
        if self.mq is not None:
            self.mq.close()

    @property
    def m(self) -> MQ:
        assert self.mq is not None
        return self.mq

    # --- helpers -------------------------------------------------------------------------
    def _lease(self, g: str, p: int) -> tuple[Holder, Lease] | None:
        h = self.holders[g]
        return (h, h.leases[p]) if h is not None and p in h.leases else None

    def _holding(self, g: str, p: int) -> tuple[Holder, Lease]:
        held = self._lease(g, p)
        assert held is not None
        return held

    def _take(self, h: Holder, p: int) -> None:
        """``h`` takes the partition if its lease is free, and reclaims the group's pending."""
        lease = self.m.acquire(h, p)
        if lease is None:
            return
        h.leases[p] = lease
        entries, deleted = self.m.reclaim(h, p)
        assert not deleted, f"{h.group} reclaimed pending entries that were deleted: {deleted}"
        pend = self.pending[(h.group, p)]
        self.delivered(self.m, f"{h.name} (reclaim)", p, entries, sorted(pend, key=id_tuple))

    def _start(self, g: str) -> None:
        self.consumers += 1
        h = Holder(g, f"{g}-c{self.consumers}")
        self.holders[g] = h
        for p in range(PARTITIONS):
            self._take(h, p)

    # --- what each step may act on (a step that could do nothing is not drawn) --------------
    def _held(self, *, pending: bool) -> list[tuple[str, int]]:
        """(group, partition) whose consumer holds the lease, with pending entries or with
        entries after its position."""
        return [
            (g, p) for g in GROUPS for p in range(PARTITIONS)
            if self._lease(g, p) is not None
            and (self.pending[g, p] if pending else self.after(p, self.pos[g, p]))
        ]  # fmt: skip

    def _living(self) -> list[str]:
        return [g for g in GROUPS if self.holders[g] is not None]

    def _short(self) -> list[str]:
        """Groups with a partition no live consumer of theirs holds."""
        return [g for g in GROUPS if len(getattr(self.holders[g], "leases", {})) < PARTITIONS]

    # --- producing and consuming ---------------------------------------------------------------
    @rule(p=parts, big=st.booleans(), n=st.integers(1, 3))
    def produce(self, p: int, big: bool, n: int) -> None:
        for _ in range(n):
            tag = f"m{self.seq}"
            self.seq += 1
            payload = f"{tag}:" + ("x" * (INLINE_BYTES + 10 * self.seq) if big else "small")
            self.payloads[tag] = payload
            self.learn(p, self.m.produce(p, payload, tag), tag)

    def _settle(self, g: str, p: int, ids: list[str], outcomes: Sequence[str]) -> None:
        """The handler's outcome for each pending entry of ``ids``, as the worker applies them:
        failures retried (scheduled or, for short delays, added back at once) or
        dead-lettered one by one, successes acked together after them; ``keep``: the
        consumer dies or stalls before it acks (the entry stays pending)."""
        h, lease = self._holding(g, p)
        acked = [i for i, o in zip(ids, outcomes, strict=False) if o == "ack"]
        for entry_id, outcome in zip(ids, outcomes, strict=False):
            if outcome in ("ack", "keep"):
                continue
            raw, tag = self.pending[g, p].pop(entry_id), self.tag_of.get((p, entry_id))
            if outcome == "dead":
                dlq_id = self.m.dead_letter(h, lease, entry_id, raw, self.policy[g])
                assert dlq_id, f"{self.what(p, entry_id)} was pending but not dead-lettered"
                self.letters[dlq_id] = (tag or "", p)
                continue
            result = self.m.retry(h, lease, entry_id, raw, outcome == "direct", self.policy[g])
            if outcome == "direct":
                self.learn(p, result, tag)
            else:
                self.items[result] = (tag or "", p)
        if acked:
            self.m.ack(h, lease, acked, self.policy[g])
        for i in acked:
            del self.pending[g, p][i]

    @precondition(lambda self: self._held(pending=False))
    @rule(at=picks, outcomes=outcomes)
    def consume(self, at: int, outcomes: list[str]) -> None:
        """The consumer reads a batch (XREADGROUP >) and handles it."""
        g, p = pick(self._held(pending=False), at)
        h, _ = self._holding(g, p)
        got = self.m.read_new(h, p, len(outcomes))
        self.delivered(self.m, h.name, p, got, self.after(p, self.pos[g, p])[: len(outcomes)])
        self.pending[g, p].update(got)
        if got:
            self.pos[g, p] = got[-1][0]
        self._settle(g, p, [i for i, _ in got], outcomes)

    @precondition(lambda self: self._held(pending=True))
    @rule(at=picks, which=picks, outcomes=outcomes)
    def settle(self, at: int, which: int, outcomes: list[str]) -> None:
        """Entries left pending (kept, or reclaimed after a take-over) are handled."""
        g, p = pick(self._held(pending=True), at)
        pend = sorted(self.pending[g, p], key=id_tuple)
        start = which % len(pend)
        self._settle(g, p, pend[start : start + len(outcomes)], outcomes)

    # --- retries and letters -------------------------------------------------------------------
    @precondition(lambda self: self.items)
    @rule()
    def move_retries(self) -> None:
        known = {p: set(self.alive[p]) for p in range(PARTITIONS)}
        self.m.move_retries()
        left = self.m.retry_items()
        now = {p: self.m.entries(p) for p in range(PARTITIONS)}
        for key, (tag, p) in list(self.items.items()):
            if key in left:
                continue
            del self.items[key]
            new = [
                i
                for i in now[p]
                if i not in known[p] and self.m.resolve(p, i, now[p][i]).tag == tag
            ]
            assert new, f"retry item of {tag} left the retry set but no entry of it is on p{p}"
            known[p].add(new[0])
            self.learn(p, new[0], tag)

    @precondition(lambda self: self.letters)
    @rule(at=picks, other=st.booleans())
    def replay(self, at: int, other: bool) -> None:
        dlq_id = pick(sorted(self.letters, key=id_tuple), at)
        tag, p = self.letters[dlq_id]
        target, new_id = self.m.replay(dlq_id, (1 - p) if other else p)
        self.learn(target, new_id, tag)

    # --- operators and housekeepers --------------------------------------------------------------
    @rule(g=groups, p=parts, kind=st.sampled_from(["earliest", "latest", "id"]), at=picks)
    def move(self, g: str, p: int, kind: str, at: int) -> None:
        target = pick(["0-0", *self.alive[p]], at) if kind == "id" else None
        self.pos[g, p] = self.m.move(g, p, kind, target)

    @rule(p=parts, rule_=st.sampled_from(["maxlen", "max_age", "consumed"]), n=st.integers(1, 4))
    def housekeep(self, p: int, rule_: str, n: int) -> None:
        self.m.housekeep(p, rule_, n, now_ms=int(time.time() * 1000) + 3_600_000)

    @rule(n=st.integers(0, 4))
    def topic_trim(self, n: int) -> None:
        self.m.topic_trim(n)

    @rule(p=parts)
    def java_housekeeper(self, p: int) -> None:
        self.m.java_housekeeper(p)

    @precondition(lambda self: any(self.after(p, self.pos[PIPELINE, p]) for p in range(PARTITIONS)))
    @rule(at=picks, n=st.integers(1, 4))
    def pipeline_commit(self, at: int, n: int) -> None:
        p = pick([p for p in range(PARTITIONS) if self.after(p, self.pos[PIPELINE, p])], at)
        got = self.m.pipeline_read(p, self.pos[PIPELINE, p], n)
        self.delivered(self.m, PIPELINE, p, got, self.after(p, self.pos[PIPELINE, p])[:n])
        if got:
            self.m.pipeline_commit(p, got[-1][0], len(got))
            self.pos[PIPELINE, p] = got[-1][0]

    # --- consumers dying and taking over ---------------------------------------------------------
    @precondition(lambda self: self._living())
    @rule(at=picks, clean=st.booleans())
    def consumer_exits(self, at: int, clean: bool) -> None:
        """A consumer stops cleanly (its leases released; the acks in hand were flushed
        first), or dies: no release, its leases live on until their TTL passes."""
        g = pick(self._living(), at)
        h = self.holders[g]
        assert h is not None
        for lease in h.leases.values() if clean else ():
            self.m.release(h, lease)
        if not clean:
            self.zombies[g].append(h)
        self.holders[g] = None

    @precondition(lambda self: self._short())
    @rule(at=picks, expire=st.booleans())
    def take_over(self, at: int, expire: bool) -> None:
        """With ``expire``, the TTL of the dead consumers' leases passes first; then a new
        consumer starts (or the live one takes what is free) and reclaims the pending."""
        g = pick(self._short(), at)
        h = self.holders[g]
        for p in range(PARTITIONS):
            if expire and (h is None or p not in h.leases):
                self.m.expire_lease(g, p)
        if h is None:
            self._start(g)
        else:
            for p in set(range(PARTITIONS)) - set(h.leases):
                self._take(h, p)

    @precondition(lambda self: any(self.zombies.values()))
    @rule(at=picks, k=st.integers(1, 2))
    def zombie_ack(self, at: int, k: int) -> None:
        """A dead consumer's late ack: fenced after a take-over, else an ordinary ack."""
        g = pick([g for g in GROUPS if self.zombies[g]], at)
        z = self.zombies[g][-1]
        for p, lease in z.leases.items():
            ids = sorted(self.pending[g, p], key=id_tuple)[:k]
            if not ids:
                continue
            try:
                self.m.ack(z, lease, ids, self.policy[g])
            except FencedError:
                continue
            for i in ids:
                del self.pending[g, p][i]

    # --- the invariant ----------------------------------------------------------------------------
    @invariant()
    def nothing_a_reader_needs_is_gone(self) -> None:
        if self.mq is not None:
            problems = self.check_needs(self.m)
            assert not problems, "lost what a reader needs:\n  " + "\n  ".join(problems[:12])


@pytest.fixture
def small_nodes(redis_url: str) -> Iterator[str]:
    """Stream nodes of a few entries, so that a trim of whole nodes (an approximate MAXLEN ~,
    which no path may send any more: the producer's and the mover's were) acts on the model's
    small streams too."""
    client = redis.Redis.from_url(redis_url)
    old = str(client.config_get("stream-node-max-entries")["stream-node-max-entries"])
    client.config_set("stream-node-max-entries", NODE_ENTRIES)
    try:
        yield redis_url
    finally:
        client.config_set("stream-node-max-entries", old)
        client.close()


# a failing run shrinks its history for minutes: more than the suite's 120 s per test
@pytest.mark.timeout(max(600, 2 * HISTORIES))
def test_nothing_a_reader_needs_is_lost(small_nodes: str) -> None:
    machine = type("NothingLostHere", (NothingLost,), {"url": small_nodes})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=HISTORIES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            print_blob=True,
        ),
    )
