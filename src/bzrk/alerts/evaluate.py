"""One evaluation: a normal recorded run through the query service, folded into a verdict.

The condition goes to the query service as the run's ``stop_when``, so an absorbing condition
(``n >= 50``, ``rows >= 1``) ends the scan at the first complete snapshot that proves it, exactly
as it does for ``bzrk search --stop-when`` and MCP ``query``. The verdict reads the last
complete snapshot's primary table: ``rows`` is its row count, a column its first row's value.

A partial answer (the run hit ``timeout_ms``) decides only what it can prove: an absorbing
condition that already holds on a lower bound holds on the whole window; anything else is
``inconclusive`` and leaves the alert's state alone.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from bzrk.api.mcp.results import cell_json
from bzrk.engine.events import Done, Error, Metadata, RowBatch, TableSchema
from bzrk.engine.request import QueryExecutor, QueryRequest
from bzrk.engine.stop import StopPredicate, StopPredicateError


@dataclass
class Outcome:
    """What one run said about a condition.

    ``holds`` is True/False when the run decides the condition, None when it cannot
    (an error, or a partial answer that proves nothing).
    """

    holds: bool | None
    value: Any = None
    run_id: str | None = None
    run_status: str | None = None  # complete | stopped_early | soft_budget | error
    coverage: float = 0.0
    error: dict[str, Any] | None = None
    columns: list[tuple[str, str]] = field(default_factory=list)
    first_row: list[Any] | None = None
    row_count: int = 0
    duration_ms: float = 0.0

    def first_row_json(self) -> dict[str, Any] | None:
        if self.first_row is None:
            return None
        return {
            name: cell_json(value, kind)
            for (name, kind), value in zip(self.columns, self.first_row, strict=False)
        }


def failure(code: str, message: str, run_id: str | None = None) -> Outcome:
    return Outcome(
        None, error={"code": code, "message": message}, run_id=run_id, run_status="error"
    )


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


async def run_condition(
    executor: QueryExecutor, request: QueryRequest, predicate: StopPredicate | None
) -> Outcome:
    """Run ``request`` and decide ``predicate`` on its last complete snapshot.

    Without a predicate (a workflow step with no "Continue when") the run's first row and row
    count come back and ``holds`` is True when the run finished.
    """
    started = time.monotonic()
    columns: list[tuple[str, str]] = []
    primary: str | None = None
    iteration: str | None = None
    rows: list[Any] = []
    count = 0
    kept: tuple[list[Any] | None, int] | None = None
    done: Done | None = None
    error: Error | None = None
    stream: Any = executor.execute(request)
    try:
        async for event in stream:
            if isinstance(event, TableSchema):
                if primary is None:
                    primary = event.table
                    columns = [(c.name, c.type) for c in event.columns]
            elif isinstance(event, RowBatch) and event.table == primary:
                if event.iteration_id != iteration:
                    iteration, rows, count = event.iteration_id, [], 0
                if not rows and event.rows:
                    rows = [list(event.rows[0])]
                count += len(event.rows)
            elif isinstance(event, Metadata):
                # A Metadata closes a snapshot: it is the answer so far.
                same = event.iteration_id == iteration
                kept = (rows[0] if same and rows else None, count if same else 0)
            elif isinstance(event, Done):
                done = event
            elif isinstance(event, Error):
                error = event
    finally:
        await stream.aclose()
    elapsed = (time.monotonic() - started) * 1000
    if error is not None:
        out = failure(error.code, error.message, error.run_id)
        out.duration_ms = elapsed
        return out
    first, total = kept if kept is not None else (None, 0)
    out = Outcome(
        None,
        run_id=done.run_id if done else None,
        run_status=done.status if done else "complete",
        coverage=done.coverage if done else 1.0,
        columns=columns,
        first_row=first,
        row_count=total,
        duration_ms=elapsed,
    )
    if predicate is None:
        out.holds = True
        out.value = total
        return out
    names = [name for name, _ in columns]
    if predicate.on_rows:
        out.value = total
    elif predicate.ident not in names:
        return _invalid(out, predicate, names)
    elif first is not None:
        out.value = _number(
            cell_json(first[names.index(predicate.ident)], columns[names.index(predicate.ident)][1])
        )
    try:
        holds = predicate.holds(names, [first] * total if first is not None else [])
    except StopPredicateError as exc:
        out.error = {"code": "InvalidCondition", "message": str(exc)}
        return out
    if out.run_status == "soft_budget" and not (predicate.absorbing and holds):
        out.error = {
            "code": "SoftBudget",
            "message": f"the run covered {out.coverage:.0%} of the window within timeout_ms; "
            "the condition is not decided by a partial answer",
        }
        return out
    out.holds = holds
    return out


def _invalid(out: Outcome, predicate: StopPredicate, names: list[str]) -> Outcome:
    out.error = {
        "code": "InvalidCondition",
        "message": f"the condition names column '{predicate.ident}', which the result does not "
        f"have (columns: {', '.join(names) or 'none'})",
    }
    return out
