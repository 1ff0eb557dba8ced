"""Plan time (parse, bind, compile to SQL) of pipelines of 10, 100 and 1,000 chained operators.

Usage: python bench/plan_time.py [--repeat 3]

Planning must grow linearly with the pipeline (issue 19: 250 chained ``extend`` took ~10 s,
about cubic). Two pipelines per length: ``extend x = x + 1`` repeated (each step reads the one
before, the case the fuse pass merges) and a mix of ``extend`` of a new column, ``where`` and
``project-away``. Prints, per length, the best of ``--repeat`` runs in ms and the time per
operator, then machine-readable ``plan_ms_<shape>_<n>: value`` lines.

Planning ends in a plan tree; the query service renders it once per progressive window, with
that window's bounds and the row cap (issue 19). ``render_ms_<shape>_<n>`` is the best time of
one such render of the whole plan, what every window adds to the plan's cost.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bzrk.engine.compile.query import CompiledQuery, TableResolver  # noqa: E402
from bzrk.engine.planning import compile_query  # noqa: E402
from bzrk.engine.timewindow import Window, scan_filter  # noqa: E402
from bzrk.kql import GlobalState  # noqa: E402

LENGTHS = (10, 100, 1000)


def same_column(n: int) -> str:
    return "print x = 1 | " + " | ".join("extend x = x + 1" for _ in range(n))


def mixed(n: int) -> str:
    steps = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            steps.append(f"extend c{i} = x + {i}")
        elif kind == 1:
            steps.append(f"where x >= {-i}")
        else:
            steps.append(f"project-away c{i - 2}")
    return "print x = 1 | " + " | ".join(steps)


SHAPES: dict[str, Callable[[int], str]] = {"extend_chain": same_column, "mixed": mixed}


def plan_ms(text: str, repeat: int) -> tuple[float, CompiledQuery]:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        _, compiled = compile_query(text, {}, TableResolver(), GlobalState())
        best = min(best, time.perf_counter() - started)
    return best * 1000, compiled


def render_ms(compiled: CompiledQuery, repeat: int) -> float:
    """The best time of rendering every table of ``compiled`` for one window, capped."""
    bounds = scan_filter(Window(1, 2), Window())
    tables = [t.capped(2001) if t.cappable else t for t in compiled.tables]
    best = float("inf")
    for _ in range(max(repeat, 5)):
        started = time.perf_counter()
        for table in tables:
            table.render(bounds)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 8000))
    plan_ms(same_column(10), 1)  # imports and caches
    figures: list[tuple[str, int, float, float]] = []
    for shape, build in SHAPES.items():
        for n in LENGTHS:
            ms, compiled = plan_ms(build(n), args.repeat)
            rendered = render_ms(compiled, args.repeat)
            figures.append((shape, n, ms, rendered))
            print(
                f"{shape} {n:>5} operators: {ms:9.1f} ms ({ms / n:.2f} ms per operator),"
                f" render per window {rendered:.2f} ms"
            )
    for shape, n, ms, _ in figures:
        print(f"plan_ms_{shape}_{n}: {ms:.1f}")
    for shape, n, _, rendered in figures:
        print(f"render_ms_{shape}_{n}: {rendered:.2f}")


if __name__ == "__main__":
    main()
