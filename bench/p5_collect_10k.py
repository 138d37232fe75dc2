"""P5: one collector pass over 10,000 partitions (2,500 topics x 4) vs the raw prototype.

Same method as P4 (see bench/p4_collect.py); budget <= 1.5x raw.
"""

from __future__ import annotations

from bench.common import BenchContext, Result
from bench.p4_collect import run_collect


def run(ctx: BenchContext) -> list[Result]:
    return run_collect(ctx, bench_id="P5", topics_full=2500, partitions=4, budget="<= 1.5x")
