"""Fault-test plumbing: produce tagged messages, run worker processes, compare produced vs sink.

Messages carry ``(producer_id, seq)``; the sink (a Redis list written by
``tests/faults/worker.py`` through a fenced script) holds one JSON record per
side effect. :func:`check` reports what was lost, duplicated and reordered
within a partition, and whether sink epochs ever went backwards in a partition
(two holders at once would show up as that).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Report:
    produced: int
    delivered: int  # distinct (producer, seq) in the sink
    effects: int  # sink records, duplicates included
    lost: list[tuple[str, int]] = field(default_factory=list)
    duplicates: dict[tuple[str, int], int] = field(default_factory=dict)
    reordered: list[tuple[int, int, int]] = field(default_factory=list)  # (partition, prev, seq)
    epoch_regressions: list[tuple[int, int, int]] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"produced={self.produced} delivered={self.delivered} effects={self.effects} "
            f"lost={self.lost[:10]} dup={list(self.duplicates.items())[:10]} "
            f"reordered={self.reordered[:5]} epoch_regressions={self.epoch_regressions[:5]}"
        )


def setup_topic(config: MQConfig, topic: str, partitions: int) -> None:
    Topics(config).create(topic, partitions)


def produce(
    config: MQConfig, topic: str, count: int, *, producer_id: str = "p1", start: int = 0,
    poison: set[int] | None = None, max_retries: int = 3,
) -> list[tuple[str, int]]:  # fmt: skip
    """Send ``count`` messages keyed by seq (spread over partitions); returns their tags."""
    messages = []
    tags = []
    for seq in range(start, start + count):
        body: dict[str, Any] = {"producer": producer_id, "seq": seq}
        if poison and seq in poison:
            body["poison"] = "POISON"
        messages.append(OutgoingMessage(payload=json.dumps(body), key=f"k{seq}"))
        tags.append((producer_id, seq))
    with Producer(config, max_retries=max_retries) as producer:
        producer.send_many(topic, messages, batch_size=100)
    return tags


def sink_records(r: redis.Redis, sink: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in r.lrange(sink, 0, -1)]


def check(produced: list[tuple[str, int]], records: list[dict[str, Any]]) -> Report:
    counts = Counter((rec["producer"], int(rec["seq"])) for rec in records)
    lost = [tag for tag in produced if tag not in counts]
    duplicates = {tag: n for tag, n in counts.items() if n > 1}
    reordered: list[tuple[int, int, int]] = []
    regressions: list[tuple[int, int, int]] = []
    seen: set[tuple[str, int]] = set()
    last_seq: dict[tuple[int, str], int] = {}
    last_epoch: dict[int, int] = defaultdict(int)
    for rec in records:
        partition, tag = int(rec["partition"]), (rec["producer"], int(rec["seq"]))
        epoch = int(rec["epoch"])
        if epoch < last_epoch[partition]:
            regressions.append((partition, last_epoch[partition], epoch))
        last_epoch[partition] = max(last_epoch[partition], epoch)
        if tag in seen:
            continue
        seen.add(tag)
        prev = last_seq.get((partition, tag[0]))
        if prev is not None and tag[1] < prev:
            reordered.append((partition, prev, tag[1]))
        last_seq[(partition, tag[0])] = tag[1]
    return Report(
        produced=len(produced),
        delivered=len(counts),
        effects=len(records),
        lost=lost,
        duplicates=duplicates,
        reordered=reordered,
        epoch_regressions=regressions,
    )


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Worker:
    """One consumer process (``python -m tests.faults.worker``)."""

    def __init__(self, url: str, topic: str, sink: str, *extra: str) -> None:
        self.name = ""
        # stderr goes to a file: a full pipe nobody reads would block the worker
        self.errfile = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.worker", "--url", url, "--topic", topic,
             "--sink", sink, *extra],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=self.errfile, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip

    def ready(self) -> Worker:
        """Wait for the READY line (the consumer is constructed and about to run)."""
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("READY "):
            self.proc.wait(10)
            err = self.stderr()
            raise AssertionError(f"worker did not start: {line!r} {err[-2000:]}")
        self.name = line.split()[1]
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stats(self) -> dict[str, Any]:
        out = self.proc.stdout.read() if self.proc.stdout else ""
        for line in out.splitlines():
            if line.startswith("STATS "):
                return dict(json.loads(line[6:]))
        return {}

    def stderr(self) -> str:
        self.errfile.seek(0)
        return self.errfile.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(10)
        if self.proc.stdout:
            self.proc.stdout.close()
        self.errfile.close()


@contextmanager
def workers(url: str, topic: str, sink: str, count: int, *extra: str) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    try:
        for _ in range(count):
            started.append(Worker(url, topic, sink, *extra))
        for w in started:
            w.ready()
        yield started
    finally:
        for w in started:
            w.kill()


def pending_total(r: redis.Redis, config: MQConfig, topic: str, partitions: int,
                  group: str = "default-group") -> int:  # fmt: skip
    return sum(
        int(r.xpending(config.keys.partition(topic, p), group)["pending"])
        for p in range(partitions)
    )
