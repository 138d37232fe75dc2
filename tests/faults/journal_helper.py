"""Run by tests/faults/test_commit_journal_killed.py in a subprocess: commit one big batch
(2,000 keys: 4,000 fields of totals and counts, 100 per script) through the commit journal,
and kill -9 itself where ``argv[4]`` says (``staged``: the tasks' stages written, before the
commit; ``group<k>``: right after apply step k; ``never``)."""

from __future__ import annotations

import os
import signal
import sys

from mqcore.checkpoints import CheckpointStore, Writer
from mqcore.commit_journal import Stage, write_stage
from mqcore.config import MQConfig

PIPE = "journal_totals.redis"
KEYS_N = 2000
CHUNK = 100
TASKS = 3


def increments() -> list[tuple[int, str, int]]:
    return [(1, f"c{i}", i) for i in range(KEYS_N)] + [(2, f"c{i}", 1) for i in range(KEYS_N)]


def outputs(config: MQConfig) -> list[str]:
    return [config.keys.sink_output(PIPE, "totals"), config.keys.sink_output(PIPE, "counts")]


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    url, mode, run, die_at = sys.argv[1:5]
    config = MQConfig.from_url(url)
    store = CheckpointStore(config)
    who = {"run_id": run, "topic": "orders", "sink": "redis", "group": PIPE}
    store.record_planned(PIPE, 0, Writer(**who))

    def on_group(group: int) -> None:
        if die_at == f"group{group}":
            _die()

    staged: dict[str, list[Stage]] = {}
    if mode == "tasks":  # as the 2PC sink's tasks: each stages its share, then the commit
        stages: list[Stage] = []
        for task in range(TASKS):
            fields = {f"{i}|{k}": n for i, k, n in increments() if int(k[1:]) % TASKS == task}
            stages += write_stage(
                store.client, config.keys, pipeline=PIPE, run=f"{run}.0", batch=0, task=task,
                fields=fields, chunk=CHUNK,
            )  # fmt: skip
        if die_at == "staged":
            _die()
        staged["stages"] = stages
    done = store.record_committed(
        PIPE,
        0,
        Writer(**who),
        records=KEYS_N,
        acked_ids={},
        outputs=outputs(config),
        chunk=CHUNK,
        on_group=on_group,
        increments=increments() if mode == "driver" else (),
        **staged,
    )
    print("committed" if done else "skipped")


if __name__ == "__main__":
    main()
