"""The query service's side of the summarize memory budget: limits, overflow, warnings.

The compiler records each budgeted summarize (``compile/summarize_budget.py``). Here the
smallest group allowance becomes ClickHouse's ``max_rows_to_group_by``; when a run passes it,
the service asks :func:`next_reduction` for a smaller cut, compiles the query again, and runs the
same window again; every snapshot after that carries one ``SummarizeMemoryLimit`` warning.
"""

from __future__ import annotations

from bzrk.engine.compile.query import CompiledQuery
from bzrk.engine.compile.summarize_budget import Reduction, SummarizeBudget
from bzrk.engine.errors import BackendError, EngineError
from bzrk.engine.events import Error, QueryWarning
from bzrk.engine.failures import source_location
from bzrk.kql.diagnostics import Span

TOO_MANY_ROWS = 158  # ClickHouse's code when max_rows_to_group_by is passed
# Each retry keeps a quarter of the series the previous one kept: 1/4, 1/16, ... 1/4**6.
SHIFT_STEP = 2
MAX_SHIFT = 12


def group_limit_settings(compiled: CompiledQuery) -> dict[str, str | int | float]:
    """ClickHouse settings enforcing the smallest allowance of the query's budgeted summarizes."""
    if not compiled.budgets:
        return {}
    return {
        "max_rows_to_group_by": min(b.max_groups for b in compiled.budgets),
        "group_by_overflow_mode": "throw",
    }


def is_overflow(exc: EngineError, compiled: CompiledQuery) -> bool:
    return (
        bool(compiled.budgets)
        and isinstance(exc, BackendError)
        and exc.clickhouse_code == TOO_MANY_ROWS
    )


def next_reduction(current: Reduction | None) -> Reduction | None:
    """The next, smaller cut; None when even the smallest one did not fit."""
    shift = (current.shift if current else 0) + SHIFT_STEP
    return Reduction(shift) if shift <= MAX_SHIFT else None


def overflow_error(compiled: CompiledQuery, query: str) -> Error:
    """The error for a budget that no cut of series can meet (no series axis, or too small)."""
    worst = min(compiled.budgets, key=lambda b: b.max_groups)
    location = source_location(query, Span(worst.start, worst.end))
    if not any(b.series for b in compiled.budgets):
        reason = "it has no series axis (every `by` key is a time bin), so no series can be dropped"
    else:
        reason = f"even keeping 1 in {1 << MAX_SHIFT} series it does not fit"
    return Error(
        code="SummarizeMemoryLimit",
        title="Summarize memory limit",
        message=(
            f"summarize needs more than its memory budget of {worst.budget_bytes:,} bytes "
            f"(about {worst.max_groups:,} groups of ~{worst.group_bytes} bytes) and {reason}: "
            "narrow the time window, use a coarser bin, filter first, "
            'or raise the budget with hint.budget=<bytes|"256mib"|max>'
        ),
        location=location,
    )


def reduction_warning(budgets: list[SummarizeBudget], reduction: Reduction) -> QueryWarning:
    kept = [b for b in budgets if b.series]
    modes = sorted({b.mode for b in kept})
    parts = []
    if "sample" in modes:
        parts.append(f"a sample of 1 in {1 << reduction.shift} series (by key hash)")
    if "heaviest" in modes:
        counts = sorted({max(1, b.max_groups >> reduction.shift) for b in kept})
        parts.append(f"the {', '.join(f'{c:,}' for c in counts)} heaviest series")
    series = sorted({name for b in kept for name in b.series})
    return QueryWarning(
        kind="SummarizeMemoryLimit",
        message=(
            f"summarize went over its memory budget and kept {' and '.join(parts)} of "
            f"({', '.join(series)}); every time bin of a kept series is complete. "
            "Filter first or raise hint.budget for all series."
        ),
    )
