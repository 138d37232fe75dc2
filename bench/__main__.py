"""``python -m bench [--only P4] [--quick]``: run the benchmarks, print a table, write JSON.

Results go to bench/results.json (see PERFORMANCE.md for the contract).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
import traceback
from pathlib import Path

from bench.common import BenchContext, Result

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
    args = parser.parse_args(argv)
    only = {x.strip().upper() for x in args.only.split(",") if x.strip()}
    ctx = BenchContext(quick=args.quick, scale=args.scale or (0.1 if args.quick else 1.0))
    results: list[Result] = []
    failures = 0
    for name in modules(only):
        started = time.monotonic()
        print(f"== {name}", flush=True)
        try:
            module = importlib.import_module(f"bench.{name}")
            results.extend(module.run(ctx))
        except Exception:
            failures += 1
            traceback.print_exc()
        print(f"   ({time.monotonic() - started:.1f} s)", flush=True)
    header = (
        f"{'id':<5} {'what':<58} {'ours':>11} {'raw':>11} {'unit':<7} {'ratio':>6} {'budget':<8} ok"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for res in results:
        print(
            f"{res.id:<5} {res.what[:58]:<58} {res.ours:>11.2f} {res.raw:>11.2f} {res.unit:<7} "
            f"{res.ratio:>6.2f} {res.budget:<8} {'PASS' if res.passed else 'FAIL'}"
        )
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


if __name__ == "__main__":
    sys.exit(main())
