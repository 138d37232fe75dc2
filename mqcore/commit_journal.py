"""Batch commits too big for one script: staged in chunks, applied through a journal.

A batch of at most ``chunk`` increments (and a few stage hashes) commits in one
``commit_batch.lua`` call: writes, marker, group position and record in one atomic
step (a stage hash gone - evicted or expired - writes nothing: :class:`StageLostError`).
A bigger one would hold Redis for all of its fields in that call (a batch of 100,000
distinct keys, 200,000 fields: 0.87 s in bench/p11_max_command.py), so it goes in steps,
each a script bounded by ``chunk`` fields (250: 1-3 ms):

1. stage: the increments in hashes of at most ``chunk`` fields, with a TTL (2PC
   tasks stage theirs; the driver stages an atomic sink's);
2. seal (``commit_seal.lua``): the journal names the batch, its chunks grouped per
   apply call and the final ``commit_batch.lua`` call; the chunks lose their TTL. A
   batch the marker covers, or a chunk that is gone, writes nothing;
3. apply (``commit_apply.lua``), group after group: its fields into the outputs, its
   chunks deleted and the journal moved past it, in one script;
4. finish (``commit_batch.lua``, journaled): the journal checked complete and
   deleted, with the marker, the group's position and the record.

A crash between steps leaves the journal. The pipeline's next commit finishes it
first: Spark replays the same batch, whose freshly staged chunks are then discarded.
So every increment is applied exactly once. What readers see differs from the inline
commit only for those milliseconds: a big batch's increments arrive group by group,
and the marker, record and position move with the last step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mqcore import clock
from mqcore.codec import decode_text
from mqcore.config import RedisClient
from mqcore.errors import MQError
from mqcore.keys import KeySpace
from mqcore.scripts import call_script

__all__ = [
    "DEFAULT_CHUNK",
    "DEFAULT_STAGE_TTL_S",
    "INLINE_STAGES",
    "CommitJournal",
    "GroupHook",
    "Stage",
    "StageLostError",
    "write_stage",
]

DEFAULT_CHUNK = 250  # fields per stage hash and per apply call; a batch this big commits inline
DEFAULT_STAGE_TTL_S = 24 * 3600  # staged chunks of a run that never commits them expire
INLINE_STAGES = 64  # stage hashes one inline commit reads at most
_GROUP_STAGES = 64  # stage hashes per apply call at most
_DISCARD_KEYS = 500  # stage hashes per discard call

Stage = tuple[str, int]
"""A stage hash and how many fields it holds."""

GroupHook = Callable[[int], None]
"""Called with the group index after each applied group (a crash point in fault tests)."""


class StageLostError(MQError):
    """A staged chunk of the batch is gone (its TTL ran out, or Redis evicted it): the commit
    wrote nothing (inline or journaled) and the batch must run again."""


def _lost(batch: int, reply: Sequence[Any]) -> StageLostError:
    """The error of a commit script's ``{'missing', key}`` reply."""
    return StageLostError(
        f"batch {batch}: staged chunk {decode_text(reply[1])} is gone (evicted or expired);"
        " nothing was written and the batch must run again"
    )


def write_stage(
    client: RedisClient,
    keys: KeySpace,
    *,
    pipeline: str,
    run: str,
    batch: int,
    task: int | str,
    fields: Mapping[str, int],
    chunk: int = DEFAULT_CHUNK,
    ttl_s: int = DEFAULT_STAGE_TTL_S,
) -> list[Stage]:
    """Stage ``fields`` (``"<output index>|<field>"`` -> increment) in hashes of at most
    ``chunk`` fields, each with a TTL; the stages written, in order."""
    items = list(fields.items())
    stages: list[Stage] = []
    pipe = client.pipeline(transaction=False)
    for n, start in enumerate(range(0, len(items), chunk)):
        key = keys.sink_stage(pipeline, run, batch, task, n)
        part = dict(items[start : start + chunk])
        pipe.unlink(key)  # a replay under the same run and attempt stages again
        pipe.hset(key, mapping=part)
        pipe.expire(key, ttl_s)
        stages.append((key, len(part)))
    if stages:
        pipe.execute()
    return stages


def _groups(stages: Sequence[Stage], chunk: int) -> list[list[str]]:
    """Stage hashes per apply call: at most ``chunk`` fields (or one hash) and 64 hashes."""
    groups: list[list[str]] = []
    group: list[str] = []
    fields = 0
    for key, n in stages:
        if group and (fields + n > chunk or len(group) >= _GROUP_STAGES):
            groups.append(group)
            group, fields = [], 0
        group.append(key)
        fields += n
    if group:
        groups.append(group)
    return groups


class CommitJournal:
    """A pipeline's journaled commits (one under way at most, in the journal hash)."""

    def __init__(self, client: RedisClient, keys: KeySpace, pipeline: str) -> None:
        self.client = client
        self.keys = keys
        self.pipeline = pipeline
        self.key = keys.commit_journal(pipeline)
        self.marker = keys.sink_marker(pipeline)

    def state(self) -> dict[str, int] | None:
        """The commit under way (``batch``, ``groups``, ``applied`` groups, ``sealed_at_ms``),
        None when there is none: a crash left it if it stays (the next commit finishes it)."""
        raw = self.client.hmget(self.key, ["batch", "groups", "next", "sealed_at_ms"])
        if raw[0] is None:
            return None
        try:
            batch, groups, applied, sealed = (int(decode_text(x or b"0")) for x in raw)
        except ValueError:
            return None
        return {"batch": batch, "groups": groups, "applied": applied, "sealed_at_ms": sealed}

    def stage_triples(
        self, run: str, batch: int, triples: Sequence[Any], chunk: int
    ) -> list[Stage]:
        """Stage a driver's flat ``(output index, field, n)`` triples for a journaled commit."""
        fields = {
            f"{triples[i]}|{triples[i + 1]}": triples[i + 2] for i in range(0, len(triples), 3)
        }
        return write_stage(
            self.client, self.keys, pipeline=self.pipeline, run=run, batch=batch, task="driver",
            fields=fields, chunk=chunk,
        )  # fmt: skip

    def commit(
        self,
        *,
        sink: str,
        batch: int,
        stages: Sequence[Stage],
        outputs: Sequence[str],
        final_keys: Sequence[str],
        final_args: Sequence[Any],
        chunk: int,
        on_group: GroupHook | None = None,
    ) -> bool:
        """Seal, apply and finish ``batch``; False (and its stages discarded) when the marker
        covered it already. A commit the journal holds is finished first."""
        groups = _groups(stages, chunk)
        stage_keys = [key for key, _ in stages]
        plan = json.dumps(groups)
        final = json.dumps({"keys": list(final_keys), "args": [str(a) for a in final_args]})
        outputs_json = json.dumps(list(outputs))
        while True:
            args = [sink, batch, len(groups), plan, outputs_json, final, clock.now_ms()]
            reply = call_script(
                self.client,
                "commit_seal",
                [self.marker, self.key, *stage_keys],
                [*args, DEFAULT_STAGE_TTL_S],
            )
            kind = decode_text(reply[0])
            if kind == "sealed":
                break
            if kind == "committed":
                self.discard(batch, stage_keys)
                return False
            if kind == "missing":
                raise _lost(batch, reply)
            finished = self.finish_open(on_group)  # "open": sealed earlier, finish it
            if finished == batch:  # this batch, sealed by an earlier run: done now
                self.discard(batch, stage_keys)
                return True
        self._apply(batch, groups, outputs, 0, on_group)
        self._finish(batch, final_keys, final_args)
        return True

    def inline(
        self,
        batch: int,
        keys: Sequence[str],
        args: Sequence[Any],
        stage_keys: Sequence[str],
        on_group: GroupHook | None = None,
    ) -> bool:
        """The one-script commit (``commit_batch.lua`` inline), after the commit the journal
        holds, if any; False when the marker covered the batch already. Raises
        :class:`StageLostError` (nothing written) when one of ``stage_keys`` is gone."""
        reply = call_script(self.client, "commit_batch", keys, args)
        if isinstance(reply, list) and decode_text(reply[0]) == "open":  # the journal's first
            if self.finish_open(on_group) == batch:  # this batch, sealed by an earlier run
                self.discard(batch, stage_keys)
                return True
            reply = call_script(self.client, "commit_batch", keys, args)
        if isinstance(reply, list) and decode_text(reply[0]) == "missing":
            raise _lost(batch, reply)
        return bool(reply == 1)

    def finish_open(self, on_group: GroupHook | None = None) -> int | None:
        """Finish the commit the journal holds, if any; its batch id (None: none open)."""
        state = {decode_text(k): decode_text(v) for k, v in self.client.hgetall(self.key).items()}
        if "batch" not in state:
            return None
        batch = int(state["batch"])
        final = json.loads(state["final"])
        self._apply(
            batch, json.loads(state["plan"]), json.loads(state["outputs"]), int(state["next"]),
            on_group,
        )  # fmt: skip
        self._finish(batch, final["keys"], final["args"])
        return batch

    def discard(self, batch: int, stage_keys: Sequence[str]) -> None:
        """Delete stages of ``batch`` (aborted, or committed before), unless the journal holds
        ``batch``: those belong to its commit (and the ones it does not name expire)."""
        for start in range(0, len(stage_keys), _DISCARD_KEYS):
            part = stage_keys[start : start + _DISCARD_KEYS]
            call_script(self.client, "stage_discard", [self.key, *part], [batch])

    def _apply(
        self,
        batch: int,
        groups: Sequence[Sequence[str]],
        outputs: Sequence[str],
        start: int,
        on_group: GroupHook | None,
    ) -> None:
        for index in range(start, len(groups)):
            reply = call_script(
                self.client,
                "commit_apply",
                [self.key, *outputs, *groups[index]],
                [batch, index, len(outputs)],
            )
            if int(reply) < 0:
                raise MQError(f"batch {batch}: the commit journal does not expect group {index}")
            if on_group is not None:
                on_group(index)

    def _finish(self, batch: int, keys: Sequence[str], args: Sequence[Any]) -> None:
        reply = call_script(self.client, "commit_batch", keys, args)
        if isinstance(reply, list):  # {'open', batch}: the journal is not this batch, applied
            raise MQError(f"batch {batch}: the commit journal is not complete ({reply!r})")
