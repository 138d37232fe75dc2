"""P22: 20 open live tails on a 1,000 msg/s topic (4 partitions) vs 20 plain XREAD loops.

A producer process sends 1,000 messages a second (about 200 B of JSON each, a key and a
header; batches of 50 every 50 ms). Meanwhile one thread of this process keeps 20 readers
polling every :data:`PERIOD` seconds (a poll every 25 ms, the readers in turn); that
thread's CPU time (``time.thread_time``) is what the rows compare. Ours and raw run one
after the other, :data:`ROUNDS` rounds each of :data:`SECONDS` seconds, interleaved, each
on its own producer run of the same shape (one GIL would not carry both at once here).

- ours: what the server does for one poll of the tail's API
  (:func:`dashboard.selectors.pages.browse.tail_get` without the request's user): the
  cursor read back, :func:`mqcore.browse.tail.tail_topic` (one pipeline of ``XINFO
  STREAM`` + ``XREVRANGE`` per partition, merge, no filter), every message masked
  (:func:`dashboard.masking.mask_message`, a sensitive topic), its row
  (:func:`mqcore.browse.rows.message_row`) and the JSON body;
- raw: a plain non-blocking ``XREAD COUNT 1000`` of the 4 partitions from the last ids it
  saw, the newest of them shaped into the same masked rows by the same code
  (:func:`mqcore.browse.scan.entry_message`, ``mask_message``, ``message_row``) and the
  JSON body: the same messages delivered, so the rows compare the tail's own work (its
  counters, cursor, merge and rate) with a plain loop's.

``P22``: tails at the page's default rate (50 messages a second each); each raw loop
delivers as many a poll (the newest 25 of what it read): the same messages, for a tail
shows the newest. A tail reads only what it may show (and the counters), a plain loop
reads everything to keep up. ``P22.all``: every message shown (rate 1,000), CPU per
message delivered (the tails count what they pass over when this machine's shared cores
fall behind: ``skipped`` in the extra). Both: budget 1.5x. The extra also has a bare
loop's CPU per message (``XREAD`` and the fields as text into JSON, nothing shaped).
``P22.maxcmd``: the longest single Redis command of 20 tails' polls over a second's
backlog (SLOWLOG), against 5 ms.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.common import BenchContext, Result, slowlog_max_us
from dashboard.masking import mask_message
from mqcore.admin import Admin
from mqcore.browse.rows import ROW_PREVIEW_BYTES, message_row
from mqcore.browse.scan import entry_message
from mqcore.browse.tail import MAX_TAIL_RATE, TAIL_RATE, tail_topic
from mqcore.config import MQConfig
from mqcore.producer import OutgoingMessage, Producer
from mqcore.topics import Topics

TOPIC = "live"
PARTS = 4
TAILS = 20
RATE = 1000  # messages a second produced
SECONDS = 5.0  # a round
ROUNDS = 2
PERIOD = 0.5  # each reader polls this often
BATCH = 50


def _produce(url: str, seconds: float, stop_at: float) -> None:
    """The producer process: ``RATE`` messages a second in batches of ``BATCH``."""
    config = MQConfig.from_url(url)
    client = config.client()
    sent = 0
    start = time.monotonic()
    with Producer(config, client) as producer:
        while time.monotonic() - start < seconds and time.time() < stop_at:
            due = start + sent / RATE
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            batch = [
                OutgoingMessage(
                    json.dumps({"customer": f"c-{i % 97}", "amount": i % 500, "note": "x" * 120}),
                    key=f"k-{i % 4096}",
                    headers={"source": "bench"},
                )
                for i in range(sent, sent + BATCH)
            ]
            producer.send_many(TOPIC, batch)
            sent += BATCH


def _body(topic: str, cursor: str, rows: list[dict[str, Any]], **more: Any) -> str:
    return json.dumps(
        {"cluster": "bench", "topic": topic, "messages": rows, "cursor": cursor, **more},
        default=str,
    )


class _Ours:
    """20 tails at ``rate`` messages a second, masked (a sensitive topic)."""

    def __init__(self, admin: Admin, rate: int) -> None:
        self.admin, self.rate = admin, rate
        self.cursors = [tail_topic(admin, TOPIC, rate=rate).cursor for _ in range(TAILS)]
        self.skipped = 0

    def poll(self, i: int) -> int:
        poll = tail_topic(self.admin, TOPIC, cursor=self.cursors[i], rate=self.rate)
        self.cursors[i] = poll.cursor
        self.skipped += poll.skipped
        rows = [
            message_row(mask_message(m, visible=False), ROW_PREVIEW_BYTES) for m in poll.messages
        ]
        _body(TOPIC, poll.cursor, rows, skipped=poll.skipped, skipped_total=poll.state.skipped)
        return len(rows)


class _Raw:
    """20 plain XREAD loops from the last ids each saw; the newest ``shown`` entries of a
    read (None: all) shaped into the same masked rows, or with ``bare`` the fields as text."""

    def __init__(self, admin: Admin, shown: int | None = None, *, bare: bool = False) -> None:
        self.admin, self.shown, self.bare = admin, shown, bare
        self.keys = [admin.keys.partition(TOPIC, p) for p in range(PARTS)]
        last = {k: admin.client.xinfo_stream(k)["last-generated-id"] for k in self.keys}
        self.last = [dict(last) for _ in range(TAILS)]

    def poll(self, i: int) -> int:
        last = self.last[i]
        read: list[tuple[tuple[int, int], int, str, Any]] = []
        for key, entries in self.admin.client.xread(last, count=1000):
            name = key.decode()
            p = self.keys.index(name)
            for raw_id, fields in entries:
                entry_id = raw_id.decode()
                ms, _, seq = entry_id.partition("-")
                read.append(((int(ms), int(seq)), p, entry_id, fields))
            last[name] = entries[-1][0]
        if self.shown is not None:
            read = sorted(read, reverse=True)[: self.shown]
        budget = self.admin.config.decode_budget()
        rows: list[dict[str, Any]] = []
        for _id, p, entry_id, fields in read:
            if self.bare:
                text = {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}
                rows.append({"id": entry_id, **text})
            else:
                message = entry_message(TOPIC, p, entry_id, fields, budget)
                rows.append(message_row(mask_message(message, visible=False), ROW_PREVIEW_BYTES))
        _body(TOPIC, "", rows)
        return len(rows)


def _readers(poll: Callable[[int], int], seconds: float, out: dict[str, float]) -> None:
    """``TAILS`` readers in turn, each every ``PERIOD`` seconds, for ``seconds``; then each
    once more a second later. ``out``: this thread's CPU seconds and messages delivered."""
    cpu = time.thread_time()
    start = time.monotonic()
    delivered = k = 0
    while True:
        due = start + k * PERIOD / TAILS
        if due - start > seconds:
            break
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        delivered += poll(k % TAILS)
        k += 1
    time.sleep(1.0)
    for i in range(TAILS):
        delivered += poll(i)
    out["cpu_s"] = time.thread_time() - cpu
    out["delivered"] = delivered


def _run(config: MQConfig, poll: Callable[[int], int], seconds: float) -> dict[str, float]:
    """One round: a producer run of ``seconds`` while ``poll`` reads."""
    producer = multiprocessing.get_context("fork").Process(
        target=_produce, args=(config.url, seconds, time.time() + seconds + 5)
    )
    out: dict[str, float] = {}
    reader = threading.Thread(target=_readers, args=(poll, seconds + 0.3, out))
    producer.start()
    reader.start()
    producer.join()
    reader.join()
    return out


def _rounds(
    ctx: BenchContext,
    config: MQConfig,
    readers: dict[str, Callable[[], Any]],
    rounds: int,
    seconds: float,
) -> dict[str, dict[str, float]]:
    """``rounds`` rounds of each reader (fresh from its factory), interleaved: CPU seconds
    and messages delivered, summed, and what the tails skipped. Only "ours" is watched by
    SLOWLOG: the plain loops' reads (``XREAD COUNT 1000`` of 4 streams, 1 MB when they
    fall behind) are the baseline's, not ours to bound."""
    total = {name: {"cpu_s": 0.0, "delivered": 0.0, "skipped": 0.0} for name in readers}
    for _ in range(rounds):
        for name, make in readers.items():
            reader = make()
            with contextlib.nullcontext() if name == "ours" else ctx.unwatched():
                out = _run(config, reader.poll, seconds)
            total[name]["cpu_s"] += out["cpu_s"]
            total[name]["delivered"] += out["delivered"]
            total[name]["skipped"] += getattr(reader, "skipped", 0)
    return total


def run(ctx: BenchContext) -> list[Result]:
    seconds = SECONDS if not ctx.quick else 3.0
    rounds = ROUNDS if not ctx.quick else 1
    shown = int(TAIL_RATE * PERIOD)  # what a tail at the default rate shows a poll
    with ctx.fresh_redis() as (_server, client, config):
        Topics(config).create(TOPIC, PARTS)
        admin = Admin(config, client)
        ctx.measuring()
        paced = _rounds(
            ctx,
            config,
            {"ours": lambda: _Ours(admin, TAIL_RATE), "raw": lambda: _Raw(admin, shown)},
            rounds,
            seconds,
        )
        every = _rounds(
            ctx,
            config,
            {"ours": lambda: _Ours(admin, MAX_TAIL_RATE), "raw": lambda: _Raw(admin)},
            rounds,
            seconds,
        )
        bare = _rounds(ctx, config, {"bare": lambda: _Raw(admin, bare=True)}, 1, seconds)["bare"]
        backlog = _Ours(admin, MAX_TAIL_RATE)
        messages = [
            OutgoingMessage(json.dumps({"n": i, "note": "x" * 150}), key=f"k{i}")
            for i in range(RATE)
        ]
        Producer(config, client).send_many(TOPIC, messages)
        us, cmd = slowlog_max_us(client, lambda: [backlog.poll(i) for i in range(TAILS)])

    def per_message(side: dict[str, float]) -> float:
        return side["cpu_s"] * 1e6 / max(1.0, side["delivered"])

    def figures(side: dict[str, float]) -> dict[str, float]:
        return {
            "cpu_s": round(side["cpu_s"], 3),
            "delivered": int(side["delivered"]),
            "skipped": int(side["skipped"]),
            "us_per_message": round(per_message(side), 1),
        }

    extra = {
        "seconds_per_round": seconds,
        "rounds": rounds,
        "tails": TAILS,
        "poll_period_s": PERIOD,
        "default_rate": {name: figures(side) for name, side in paced.items()},
        "every_message": {name: figures(side) for name, side in every.items()},
        "bare_every_message": figures(bare),
        "max_command_us": us,
        "max_command": cmd,
    }
    what = f"{TAILS} live tails, {RATE:,} msg/s topic of {PARTS} partitions"
    return [
        Result(
            "P22",
            f"{what}, {TAIL_RATE}/s each: CPU s vs XREAD loops showing as many",
            paced["ours"]["cpu_s"],
            paced["raw"]["cpu_s"],
            "s",
            "<= 1.5x",
            extra,
        ),
        Result(
            "P22.all",
            f"{what}, every message shown: CPU us a message vs XREAD loops",
            per_message(every["ours"]),
            per_message(every["raw"]),
            "us/msg",
            "<= 1.5x",
        ),
        Result(
            "P22.maxcmd",
            "longest single Redis command of 20 tails' polls over a backlog (vs 5 ms)",
            us / 1000,
            5.0,
            "ms",
            "<= 1.0x",
        ),
    ]
