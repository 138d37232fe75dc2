"""P12: one collector pass over 50,000 partitions (12,500 topics x 4) vs the raw prototype.

Same method as P4 (see bench/p4_collect.py), 3 interleaved rounds: <= 1.5x raw,
and the pass must fit in one default collect interval (``COLLECT_INTERVAL_S``).
``P12.once`` is ``manage.py collect --once`` in a fresh process; its peak RSS is
the collecting worker's memory: ``P12.rss``, the highest of the fresh processes' peaks
(VmHWM) against :data:`RSS_BUDGET_MIB`, with a fresh process that runs the raw prototype's
pass beside it in the row's extra.
"""

from __future__ import annotations

from bench.common import BenchContext, Result
from bench.p4_collect import run_collect

RSS_BUDGET_MIB = 250.0  # the collecting worker's peak memory at 50,000 partitions


def run(ctx: BenchContext) -> list[Result]:
    rows = run_collect(
        ctx,
        bench_id="P12",
        topics_full=12_500,
        partitions=4,
        budget="<= 1.5x",
        repeats=3,
        once_budget="<= 1.5x",
    )
    # after run_collect: importing the project earlier would default Django to production settings
    from config.settings.base import COLLECT_INTERVAL_S

    ours = rows[0]
    rows.append(
        Result(
            id="P12.interval",
            what=f"collector pass, {ours.extra['partitions'] if ours.extra else 0} partitions, "
            f"vs the default collect interval ({COLLECT_INTERVAL_S} s)",
            ours=ours.ours,
            raw=COLLECT_INTERVAL_S * 1000.0,
            unit="ms",
            budget="<= 1.0x",
            extra={"peak_rss_mib": rows[1].extra["peak_rss_mib"] if rows[1].extra else None},
        )
    )
    once = rows[1].extra or {}
    rows.append(
        Result(
            id="P12.rss",
            what="collect --once peak RSS (VmHWM), 50000 partitions, vs 250 MiB",
            ours=float(once.get("peak_rss_mib") or 0.0),
            raw=RSS_BUDGET_MIB,
            unit="MiB",
            budget="<= 1.0x",
            extra={
                "raw_prototype_process_peak_rss_mib": once.get("raw_prototype_process_peak_rss_mib")
            },
        )
    )
    return rows
