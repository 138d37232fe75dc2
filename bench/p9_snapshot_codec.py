"""P9.encode, P9.decode: the stored snapshot's JSON at 50,000 partitions, msgspec vs orjson.

The console store keeps one snapshot per cluster as JSON: the collector encodes it every
pass, and each process decodes it once per version for the pages
(:meth:`dashboard.store.ConsoleStore.snapshot_read`). Ours is what the store does:
``mqcore.models.snapshot_encode`` of the :class:`~mqcore.models.ClusterSnapshot` structs
and ``snapshot_decode`` back into them, validated. Raw is orjson on the same data as plain
dicts (``orjson.dumps`` of the dicts, ``orjson.loads`` into dicts, nothing validated): what
the store did before the snapshot had a type. The extra carries the other combinations
(orjson then ``msgspec.convert`` to get the same validated structs; msgspec into untyped
dicts; orjson of the structs through ``msgspec.to_builtins``). Median of several runs, in
one process, after a warm-up; the snapshot has the shape the collectors store (P9's
generator: 4 partitions x 2 groups per topic, statuses and totals).
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from bench.common import BenchContext, Result

TOPICS = 12_500  # x 4 partitions = 50,000


def _median_ms(fn: Callable[[], Any], runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _held_mib(fn: Callable[[], Any]) -> float:
    """MiB that what ``fn`` returns holds (tracemalloc, outside the timed runs)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = fn()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del kept
    return round(held / 2**20, 1)


def run(ctx: BenchContext) -> list[Result]:
    import msgspec
    import orjson

    from bench.p9_overview import PARTS, _snapshot
    from mqcore.models import ClusterSnapshot, snapshot_decode, snapshot_encode

    topics = ctx.n(TOPICS, minimum=100)
    runs = 9 if not ctx.quick else 3
    typed = _snapshot(int(time.time() * 1000), topics)
    plain = msgspec.to_builtins(typed)  # the same snapshot as plain dicts, for orjson
    raw_json = orjson.dumps(plain)
    ours_json = snapshot_encode(typed)
    assert orjson.loads(ours_json) == orjson.loads(raw_json)  # the same JSON data
    ctx.measuring()

    enc_ours = _median_ms(lambda: snapshot_encode(typed), runs)
    enc_raw = _median_ms(lambda: orjson.dumps(plain), runs)
    dec_ours = _median_ms(lambda: snapshot_decode(ours_json), runs)
    dec_raw = _median_ms(lambda: orjson.loads(raw_json), runs)
    extra = {
        "partitions": topics * PARTS,
        "json_bytes": len(ours_json),
        "runs": runs,
        "decode_orjson_then_convert_ms": round(
            _median_ms(lambda: msgspec.convert(orjson.loads(raw_json), ClusterSnapshot), runs), 1
        ),
        "decode_msgspec_untyped_ms": round(
            _median_ms(lambda: msgspec.json.decode(ours_json), runs), 1
        ),
        "encode_orjson_of_to_builtins_ms": round(
            _median_ms(lambda: orjson.dumps(msgspec.to_builtins(typed)), runs), 1
        ),
        "encode_msgspec_of_dicts_ms": round(
            _median_ms(lambda: msgspec.json.encode(plain), runs), 1
        ),
        "decoded_mib_structs": _held_mib(lambda: snapshot_decode(ours_json)),
        "decoded_mib_dicts": _held_mib(lambda: orjson.loads(raw_json)),
    }
    what = f"{topics * PARTS:,} partitions"
    return [
        Result(
            "P9.encode",
            f"snapshot JSON encode, {what}: msgspec structs vs orjson dicts",
            enc_ours,
            enc_raw,
            "ms",
            "<= 1.2x",
            extra,
        ),
        Result(
            "P9.decode",
            f"snapshot JSON decode, {what}: msgspec validated structs vs orjson dicts",
            dec_ours,
            dec_raw,
            "ms",
            "<= 1.0x",
        ),
    ]
