"""Run the benchmarks: ``python -m benchmarks [--quick] [--only NAME ...] [--json PATH]``.

Each ``benchmarks/bench_*.py`` module has ``async def run(quick: bool) -> list[Row]``; the
figures print as one table, each beside the baseline measured in the same run, and are written
as JSON (default ``benchmarks/results/latest.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import pkgutil
import platform
import sys
import time
from pathlib import Path

from .common import Row

HERE = Path(__file__).parent


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", default=None, help="module names without bench_ (e.g. sqlite tokens)")
    parser.add_argument("--json", default=str(HERE / "results" / "latest.json"))
    args = parser.parse_args(argv)
    names = sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name.startswith("bench_"))
    if args.only:
        names = [n for n in names if n.removeprefix("bench_") in args.only]
    rows: list[Row] = []
    failures: list[str] = []
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        started = time.perf_counter()
        try:
            rows.extend(asyncio.run(module.run(args.quick)))
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            print(f"[{name}] failed: {exc}", file=sys.stderr)
        print(f"[{name}] {time.perf_counter() - started:.1f}s", file=sys.stderr)
    header = ("group", "figure", "value", "unit", "baseline", "baseline is", "ratio", "target", "met")
    table = [header] + [
        (
            r.group,
            r.name,
            _fmt(r.value),
            r.unit,
            _fmt(r.baseline),
            r.baseline_name or "-",
            _fmt(r.ratio),
            r.target or "-",
            "-" if r.passed is None else ("yes" if r.passed else "NO"),
        )
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(str(cell).ljust(widths[j]) for j, cell in enumerate(row)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
                "quick": args.quick,
                "rows": [r.as_dict() for r in rows],
                "failures": failures,
            },
            indent=2,
        )
    )
    print(f"\nwritten to {out}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
