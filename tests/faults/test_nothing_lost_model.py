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
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from mqcore.acks import ACK_POLICIES
from mqcore.codec import id_tuple
from mqcore.config import ENCODINGS
from mqcore.errors import FencedError
from tests.faults.model_adapter import (
    GROUPS,
    INLINE_BYTES,
    MQ,
    PARTITIONS,
    PIPELINE,
    Fields,
    Holder,
    Resolved,
    id_after,
)

pytestmark = [pytest.mark.redis, pytest.mark.faults]

HISTORIES = int(os.environ.get("MODEL_HISTORIES", "200"))
STEPS = int(os.environ.get("MODEL_STEPS", "25"))
NODE_ENTRIES = 4  # stream-node-max-entries while the model runs: MAXLEN ~ trims whole nodes

parts = st.integers(0, PARTITIONS - 1)
groups = st.sampled_from(GROUPS)
picks = st.integers(0, 50)


class NothingLost(RuleBasedStateMachine):
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
        self.payloads: dict[str, str] = {}  # tag -> payload produced
        self.tag_of: dict[tuple[int, str], str | None] = {}  # (partition, id) -> tag
        self.alive: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}  # ids, in order
        self.pos = {(g, p): "0-0" for g in (*GROUPS, PIPELINE) for p in range(PARTITIONS)}
        self.pending: dict[tuple[str, int], dict[str, Fields]] = {
            (g, p): {} for g in GROUPS for p in range(PARTITIONS)
        }
        self.holders: dict[str, Holder | None] = dict.fromkeys(GROUPS)
        self.zombies: dict[str, list[Holder]] = {g: [] for g in GROUPS}
        self.items: dict[str, tuple[str, int]] = {}  # retry item key -> (tag, partition)
        self.letters: dict[str, tuple[str, int]] = {}  # dlq id -> (tag, partition)
        self.seq = self.consumers = 0
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
    def _lease(self, g: str, p: int) -> tuple[Holder, Any] | None:
        h = self.holders[g]
        return (h, h.leases[p]) if h is not None and p in h.leases else None

    def _after(self, p: int, position: str) -> list[str]:
        return [i for i in self.alive[p] if id_after(i, position)]

    def _what(self, p: int, entry_id: str) -> str:
        tag = self.tag_of.get((p, entry_id))
        size = len(self.payloads.get(tag or "", ""))
        return f"p{p} {entry_id} ({tag}, {'out-of-line' if size > INLINE_BYTES else 'inline'})"

    def _mismatch(self, tag: str | None, got: Resolved) -> str | None:
        if got.tag != tag:
            return f"carries tag {got.tag!r}, not {tag!r}"
        if got.payload is None:
            return "its out-of-line payload is gone (or its reference refused)"
        if got.payload != self.payloads.get(tag or ""):
            return f"payload {got.payload[:40]!r} is not the one produced"
        return None

    def _delivered(self, who: str, p: int, got: list[tuple[str, Fields]], want: list[str]) -> None:
        """A reader got ``got``; it must be ``want``, each with the payload produced."""
        ids = [i for i, _ in got]
        assert ids == want, (
            f"{who} on p{p} was handed {ids}, but the entries after its position are {want}"
        )
        for i, raw in got:
            bad = self._mismatch(self.tag_of.get((p, i)), self.m.resolve(p, i, raw))
            assert bad is None, f"{who} was handed {self._what(p, i)}: {bad}"

    def _learn(self, p: int, entry_id: str, tag: str | None) -> None:
        self.tag_of[(p, entry_id)] = tag
        if entry_id not in self.alive[p]:
            self.alive[p] = sorted([*self.alive[p], entry_id], key=id_tuple)

    def _take(self, h: Holder, p: int) -> None:
        """``h`` takes the partition if its lease is free, and reclaims the group's pending."""
        lease = self.m.acquire(h, p)
        if lease is None:
            return
        h.leases[p] = lease
        entries, deleted = self.m.reclaim(h, p)
        assert not deleted, f"{h.group} reclaimed pending entries that were deleted: {deleted}"
        pend = self.pending[(h.group, p)]
        self._delivered(f"{h.name} (reclaim)", p, entries, sorted(pend, key=id_tuple))

    def _start(self, g: str) -> None:
        self.consumers += 1
        h = Holder(g, f"{g}-c{self.consumers}")
        self.holders[g] = h
        for p in range(PARTITIONS):
            self._take(h, p)

    # --- producing and consuming ---------------------------------------------------------------
    @rule(p=parts, big=st.booleans(), n=st.integers(1, 3))
    def produce(self, p: int, big: bool, n: int) -> None:
        for _ in range(n):
            tag = f"m{self.seq}"
            self.seq += 1
            payload = f"{tag}:" + ("x" * (INLINE_BYTES + 10 * self.seq) if big else "small")
            self.payloads[tag] = payload
            self._learn(p, self.m.produce(p, payload, tag), tag)

    @rule(g=groups, p=parts, n=st.integers(1, 4))
    def consume(self, g: str, p: int, n: int) -> None:
        held = self._lease(g, p)
        if held is None:
            return
        h, _ = held
        got = self.m.read_new(h, p, n)
        self._delivered(h.name, p, got, self._after(p, self.pos[(g, p)])[:n])
        for i, raw in got:
            self.pending[(g, p)][i] = raw
        if got:
            self.pos[(g, p)] = got[-1][0]

    @rule(g=groups, p=parts, k=st.integers(1, 3), at=picks)
    def ack(self, g: str, p: int, k: int, at: int) -> None:
        held, pend = self._lease(g, p), sorted(self.pending[(g, p)], key=id_tuple)
        if held is None or not pend:
            return
        start = at % len(pend)
        ids = pend[start : start + k]
        self.m.ack(held[0], held[1], ids, self.policy[g])
        for i in ids:
            del self.pending[(g, p)][i]

    @rule(g=groups, p=parts, at=picks, direct=st.booleans())
    def retry(self, g: str, p: int, at: int, direct: bool) -> None:
        held, pend = self._lease(g, p), sorted(self.pending[(g, p)], key=id_tuple)
        if held is None or not pend:
            return
        entry_id = pend[at % len(pend)]
        raw = self.pending[(g, p)].pop(entry_id)
        tag = self.tag_of.get((p, entry_id))
        result = self.m.retry(held[0], held[1], entry_id, raw, direct)
        if direct:
            self._learn(p, result, tag)
        else:
            self.items[result] = (tag or "", p)

    @rule(g=groups, p=parts, at=picks)
    def dead_letter(self, g: str, p: int, at: int) -> None:
        held, pend = self._lease(g, p), sorted(self.pending[(g, p)], key=id_tuple)
        if held is None or not pend:
            return
        entry_id = pend[at % len(pend)]
        raw = self.pending[(g, p)].pop(entry_id)
        dlq_id = self.m.dead_letter(held[0], held[1], entry_id, raw)
        assert dlq_id is not None, f"{self._what(p, entry_id)} was pending but not dead-lettered"
        self.letters[dlq_id] = (self.tag_of.get((p, entry_id)) or "", p)

    # --- retries and letters -------------------------------------------------------------------
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
            self._learn(p, new[0], tag)

    @rule(at=picks, other=st.booleans())
    def replay(self, at: int, other: bool) -> None:
        if not self.letters:
            return
        dlq_id = sorted(self.letters, key=id_tuple)[at % len(self.letters)]
        tag, p = self.letters[dlq_id]
        target, new_id = self.m.replay(dlq_id, (1 - p) if other else p)
        self._learn(target, new_id, tag)

    # --- operators and housekeepers --------------------------------------------------------------
    @rule(g=groups, p=parts, kind=st.sampled_from(["earliest", "latest", "id"]), at=picks)
    def move(self, g: str, p: int, kind: str, at: int) -> None:
        ids = ["0-0", *self.alive[p]]
        self.pos[(g, p)] = self.m.move(g, p, kind, ids[at % len(ids)] if kind == "id" else None)

    @rule(p=parts, rule_=st.sampled_from(["maxlen", "max_age", "consumed"]), n=st.integers(1, 4))
    def housekeep(self, p: int, rule_: str, n: int) -> None:
        self.m.housekeep(p, rule_, n, now_ms=int(time.time() * 1000) + 3_600_000)

    @rule(n=st.integers(0, 4))
    def topic_trim(self, n: int) -> None:
        self.m.topic_trim(n)

    @rule(p=parts)
    def java_housekeeper(self, p: int) -> None:
        self.m.java_housekeeper(p)

    @rule(p=parts, n=st.integers(1, 4))
    def pipeline_commit(self, p: int, n: int) -> None:
        got = self.m.pipeline_read(p, self.pos[(PIPELINE, p)], n)
        self._delivered(PIPELINE, p, got, self._after(p, self.pos[(PIPELINE, p)])[:n])
        if got:
            self.m.pipeline_commit(p, got[-1][0], len(got))
            self.pos[(PIPELINE, p)] = got[-1][0]

    # --- consumers dying and taking over ---------------------------------------------------------
    @rule(g=groups)
    def kill(self, g: str) -> None:
        """The consumer dies: no release, its leases live on until their TTL passes."""
        h = self.holders[g]
        if h is not None:
            self.zombies[g].append(h)
            self.holders[g] = None

    @rule(g=groups)
    def stop(self, g: str) -> None:
        """A clean stop: leases released (the acks in hand were flushed: the model acks
        through its own steps)."""
        h = self.holders[g]
        if h is not None:
            for lease in h.leases.values():
                self.m.release(h, lease)
            self.holders[g] = None

    @rule(g=groups)
    def expire_leases(self, g: str) -> None:
        """The TTL of the dead consumers' leases passes; a live one takes the partitions."""
        h = self.holders[g]
        for p in range(PARTITIONS):
            if h is None or p not in h.leases:
                self.m.expire_lease(g, p)
                if h is not None:
                    self._take(h, p)

    @rule(g=groups)
    def start(self, g: str) -> None:
        if self.holders[g] is None:
            self._start(g)

    @rule(g=groups, k=st.integers(1, 2))
    def zombie_ack(self, g: str, k: int) -> None:
        """A dead consumer's late ack: fenced after a take-over, else an ordinary ack."""
        if not self.zombies[g]:
            return
        z = self.zombies[g][-1]
        for p, lease in z.leases.items():
            ids = sorted(self.pending[(g, p)], key=id_tuple)[:k]
            if not ids:
                continue
            try:
                self.m.ack(z, lease, ids, self.policy[g])
            except FencedError:
                continue
            for i in ids:
                del self.pending[(g, p)][i]

    # --- the invariant ----------------------------------------------------------------------------
    @invariant()
    def nothing_a_reader_needs_is_gone(self) -> None:
        if self.mq is None:
            return
        problems: list[str] = []
        for p in range(PARTITIONS):
            present = self.m.entries(p)
            for g in (*GROUPS, PIPELINE):
                at = self.pos[g, p]
                need = dict.fromkeys(self._after(p, at), f"unread after {at}")
                need.update(dict.fromkeys(self.pending.get((g, p), {}), "pending"))
                for i, why in sorted(need.items(), key=lambda kv: id_tuple(kv[0])):
                    if i not in present:
                        problems.append(f"{self._what(p, i)}, {why} in {g}: the entry is gone")
                        continue
                    bad = self._mismatch(self.tag_of.get((p, i)), self.m.resolve(p, i, present[i]))
                    if bad:
                        problems.append(f"{self._what(p, i)}, {why} in {g}: {bad}")
            for i, raw in present.items():  # what is there now; entries nobody needs may go
                if (p, i) not in self.tag_of:
                    self.tag_of[(p, i)] = self.m.resolve(p, i, raw).tag
            self.alive[p] = sorted(present, key=id_tuple)
        items = self.m.retry_items()
        for key, (tag, p) in self.items.items():
            got = items.get(key)
            if not got:
                problems.append(f"retry item of {tag} (from p{p}) is gone")
            elif bad := self._mismatch(tag, self.m.resolve_item(got)):
                problems.append(f"retry item of {tag} (from p{p}): {bad}")
        for dlq_id, (tag, p) in self.letters.items():
            letter = self.m.letter(dlq_id)
            if letter is None:
                problems.append(f"dead letter {dlq_id} of {tag} is gone")
            elif bad := self._mismatch(tag, letter):
                problems.append(f"dead letter {dlq_id} of {tag} (from p{p}): {bad}")
        assert not problems, "lost what a reader needs:\n  " + "\n  ".join(problems[:12])


@pytest.fixture
def small_nodes(redis_url: str) -> Iterator[str]:
    """Stream nodes of a few entries, so trims of whole nodes (MAXLEN ~) act on small streams."""
    client = redis.Redis.from_url(redis_url)
    old = str(client.config_get("stream-node-max-entries")["stream-node-max-entries"])
    client.config_set("stream-node-max-entries", NODE_ENTRIES)
    try:
        yield redis_url
    finally:
        client.config_set("stream-node-max-entries", old)
        client.close()


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
