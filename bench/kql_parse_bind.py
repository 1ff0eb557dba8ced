"""Median parse+bind time per conformance-corpus query (`bzrk.kql.analyze`).

Usage: BZRK_SHARED_DIR=/work/shared python bench/kql_parse_bind.py [--repeat 5]
Prints the median, p90 and max per-query time over all corpus queries that parse and bind
(each query timed `--repeat` times, best taken), plus parse-only figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bzrk.kql import GlobalState, KqlError, analyze, parse  # noqa: E402
from bzrk.kql.symbols import DatabaseSymbol, TableSchema, TableSymbol  # noqa: E402


def _cases() -> list[tuple[str, GlobalState]]:
    shared = Path(os.environ.get("BZRK_SHARED_DIR") or ROOT.parent / "shared") / "kql-conformance"
    out = []
    for name in ("docs-emulator.jsonl", "docs-tables.jsonl", "loco.jsonl"):
        for line in (shared / name).read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            tables = case["flags"].get("needs_tables") or []
            syms = tuple(TableSymbol(t, "default", TableSchema((), raw=True)) for t in tables)
            out.append((case["kql"], GlobalState((DatabaseSymbol("default", syms),))))
    return out


def _best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        with contextlib.suppress(KqlError):
            fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cases = _cases()
    for text, g in cases[:50]:  # warm up imports and caches
        with contextlib.suppress(KqlError):
            analyze(text, g)
    full = [_best(lambda t=text, g=g: analyze(t, g), args.repeat) * 1000 for text, g in cases]
    parse_only = [_best(lambda t=text: parse(t), args.repeat) * 1000 for text, _ in cases]
    full.sort()
    parse_only.sort()
    print(f"queries: {len(cases)}")
    print(
        f"parse+bind ms: median {statistics.median(full):.3f}  p90 {full[int(len(full) * 0.9)]:.3f}"
        f"  max {full[-1]:.3f}  total {sum(full):.0f}"
    )
    print(
        f"parse only ms: median {statistics.median(parse_only):.3f}  p90 {parse_only[int(len(parse_only) * 0.9)]:.3f}"
    )


if __name__ == "__main__":
    main()
