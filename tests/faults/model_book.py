"""The model's book of what each reader still needs (R19; see test_nothing_lost_model.py).

Readers: each consumer group (its pending entries and every entry after its position), the
pipeline group (every entry after its committed position), each retry item and each dead
letter. Entries no reader needs may go: after each check the model forgets what is gone.
"""

from __future__ import annotations

from mqcore.codec import id_tuple
from tests.faults.model_adapter import (
    GROUPS,
    INLINE_BYTES,
    MQ,
    PARTITIONS,
    PIPELINE,
    Fields,
    Resolved,
    id_after,
)


class ReaderBook:
    """What was produced, what is in each partition, and what each reader still needs."""

    def open_book(self) -> None:
        self.payloads: dict[str, str] = {}  # tag -> payload produced
        self.seq = 0  # tags handed out
        self.tag_of: dict[tuple[int, str], str | None] = {}  # (partition, id) -> tag
        self.alive: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}  # ids, in order
        self.pos = {(g, p): "0-0" for g in (*GROUPS, PIPELINE) for p in range(PARTITIONS)}
        self.pending: dict[tuple[str, int], dict[str, Fields]] = {
            (g, p): {} for g in GROUPS for p in range(PARTITIONS)
        }  # the fields each group's consumer holds
        self.items: dict[str, tuple[str, int]] = {}  # retry item key -> (tag, partition)
        self.letters: dict[str, tuple[str, int]] = {}  # dlq id -> (tag, partition)

    def after(self, p: int, position: str) -> list[str]:
        return [i for i in self.alive[p] if id_after(i, position)]

    def what(self, p: int, entry_id: str) -> str:
        tag = self.tag_of.get((p, entry_id))
        size = len(self.payloads.get(tag or "", ""))
        return f"p{p} {entry_id} ({tag}, {'out-of-line' if size > INLINE_BYTES else 'inline'})"

    def mismatch(self, tag: str | None, got: Resolved) -> str | None:
        if got.tag != tag:
            return f"carries tag {got.tag!r}, not {tag!r}"
        if got.payload is None:
            return "its out-of-line payload is gone (or its reference refused)"
        if got.payload != self.payloads.get(tag or ""):
            return f"payload {got.payload[:40]!r} is not the one produced"
        if got.expires_in_ms is not None:
            return f"its payload key expires in {got.expires_in_ms // 1000} s"
        return None

    def delivered(
        self, mq: MQ, who: str, p: int, got: list[tuple[str, Fields]], want: list[str]
    ) -> None:
        """A reader got ``got``; it must be ``want``, each with the payload produced."""
        ids = [i for i, _ in got]
        assert ids == want, (
            f"{who} on p{p} was handed {ids}, but the entries after its position are {want}"
        )
        for i, raw in got:
            bad = self.mismatch(self.tag_of.get((p, i)), mq.resolve(p, i, raw))
            assert bad is None, f"{who} was handed {self.what(p, i)}: {bad}"

    def learn(self, p: int, entry_id: str, tag: str | None) -> None:
        self.tag_of[(p, entry_id)] = tag
        if entry_id not in self.alive[p]:
            self.alive[p] = sorted([*self.alive[p], entry_id], key=id_tuple)

    def check_needs(self, mq: MQ) -> list[str]:
        """What a reader needs and is gone or changed; then the model learns what is there."""
        problems: list[str] = []
        for p in range(PARTITIONS):
            present = mq.entries(p)
            for g in (*GROUPS, PIPELINE):
                at = self.pos[g, p]
                need = dict.fromkeys(self.after(p, at), f"unread after {at}")
                need.update(dict.fromkeys(self.pending.get((g, p), {}), "pending"))
                for i, why in sorted(need.items(), key=lambda kv: id_tuple(kv[0])):
                    if i not in present:
                        problems.append(f"{self.what(p, i)}, {why} in {g}: the entry is gone")
                        continue
                    bad = self.mismatch(self.tag_of.get((p, i)), mq.resolve(p, i, present[i]))
                    if bad:
                        problems.append(f"{self.what(p, i)}, {why} in {g}: {bad}")
            for i, raw in present.items():  # what is there now; entries nobody needs may go
                if (p, i) not in self.tag_of:
                    self.tag_of[(p, i)] = mq.resolve(p, i, raw).tag
            self.alive[p] = sorted(present, key=id_tuple)
        items = mq.retry_items()
        for key, (tag, p) in self.items.items():
            got = items.get(key)
            if not got:
                problems.append(f"retry item of {tag} (from p{p}) is gone")
            elif bad := self.mismatch(tag, mq.resolve_item(got)):
                problems.append(f"retry item of {tag} (from p{p}): {bad}")
        for dlq_id, (tag, p) in self.letters.items():
            letter = mq.letter(dlq_id)
            if letter is None:
                problems.append(f"dead letter {dlq_id} of {tag} is gone")
            elif bad := self.mismatch(tag, letter):
                problems.append(f"dead letter {dlq_id} of {tag} (from p{p}): {bad}")
        return problems
