"""``python -m bench [--only P4] [--quick]``: run the benchmarks, print a table, write JSON.

Results go to bench/results.json (the contract: bench/common.py). Each row
also carries the longest single command seen on each Redis server while its
benchmark measured (SLOWLOG, see bench/common.py); rows with one over 5 ms are
flagged in the table and listed at the end.

Each benchmark module runs in a process of its own (``--module``): what one leaves
behind, a Spark JVM or the heap of a 50,000-partition pass, slowed the next by a
quarter (the raw 4,000-partition pass took 159-164 ms after P10 or P12 in the same
process, 121-130 ms alone), and ours, which allocates more, by more.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import pkgutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench.common import MAX_COMMAND_US, BenchContext, Result

HERE = Path(__file__).parent


def modules(only: set[str]) -> list[str]:
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name[:1] == "p" and "_" in m.name
    )
    if only:
        names = [n for n in names if n.split("_")[0].upper() in only]
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--only", default="", help="comma separated ids, e.g. P4,P6")
    parser.add_argument("--quick", action="store_true", help="smaller data for a fast look")
    parser.add_argument("--scale", type=float, default=None, help="data size multiplier")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    parser.add_argument("--module", help=argparse.SUPPRESS)  # child: run this one module
    args = parser.parse_args(argv)
    if args.module:
        return _child(args)
    only = {x.strip().upper() for x in args.only.split(",") if x.strip()}
    results: list[Result] = []
    failures = 0
    for name in modules(only):
        started = time.monotonic()
        print(f"== {name}", flush=True)
        rows = _isolated(name, args)
        if rows is None:
            failures += 1
        else:
            results.extend(rows)
        print(f"   ({time.monotonic() - started:.1f} s)", flush=True)
    header = (
        f"{'id':<5} {'what':<58} {'ours':>11} {'raw':>11} {'unit':<7} {'ratio':>6} {'budget':<8} ok"
        "   max cmd ms (mq/store)"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for res in results:
        print(
            f"{res.id:<5} {res.what[:58]:<58} {res.ours:>11.2f} {res.raw:>11.2f} {res.unit:<7} "
            f"{res.ratio:>6.2f} {res.budget:<8} {'PASS' if res.passed else 'FAIL'} "
            f"{_max_commands(res)}{'  SLOW' if res.slow else ''}"
        )
    slow = [res for res in results if res.slow]
    for res in slow:
        print(
            f"FLAG {res.id}: commands over {MAX_COMMAND_US / 1000:g} ms per server {res.over}; "
            f"longest {res.slowest}"
        )
    if results and not slow:
        print(f"\nno command over {MAX_COMMAND_US / 1000:g} ms on any server (SLOWLOG)")
    existing = []
    out = Path(args.out)
    if only and out.exists():
        ran = {r.id for r in results}
        existing = [r for r in json.loads(out.read_text()) if r["id"] not in ran]
    rows = existing + [r.as_json() for r in results]
    out.write_text(
        json.dumps(sorted(rows, key=lambda r: (int(r["id"][1:].split(".")[0]), r["id"])), indent=2)
        + "\n"
    )
    print(f"\nwrote {out} ({len(rows)} results)")
    return 1 if failures else 0


def _isolated(name: str, args: argparse.Namespace) -> list[Result] | None:
    """Run benchmark module ``name`` in a child process; its rows, or None when it failed."""
    with tempfile.TemporaryDirectory(prefix="bench-rows-") as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, "-m", "bench", "--module", name, "--out", str(out)]
        if args.quick:
            cmd.append("--quick")
        if args.scale is not None:
            cmd += ["--scale", str(args.scale)]
        done = subprocess.run(cmd, check=False)
        if done.returncode != 0 or not out.exists():
            return None
        rows = json.loads(out.read_text())
    for row in rows:
        if row["slowest"] is not None:
            row["slowest"] = {role: (us, cmd) for role, (us, cmd) in row["slowest"].items()}
    return [Result(**row) for row in rows]


def _child(args: argparse.Namespace) -> int:
    """``--module NAME --out FILE``: run one benchmark module, write its rows to FILE."""
    ctx = BenchContext(quick=args.quick, scale=args.scale or (0.1 if args.quick else 1.0))
    try:
        rows = importlib.import_module(f"bench.{args.module}").run(ctx)
    except Exception:
        traceback.print_exc()
        return 1
    slowest, over = ctx.take_slowest()
    for row in rows:
        row.slowest, row.over = slowest, over
    Path(args.out).write_text(json.dumps([dataclasses.asdict(row) for row in rows]))
    return 0


def _max_commands(res: Result) -> str:
    """``0.41/0.87``: the longest command per server, in ms (``-`` for a role not used)."""
    seen = res.slowest or {}
    both = seen.get("mq+store")
    mq, store = seen.get("mq", both), seen.get("store", both)
    return "/".join("-" if x is None else f"{x[0] / 1000:.2f}" for x in (mq, store))


if __name__ == "__main__":
    sys.exit(main())
