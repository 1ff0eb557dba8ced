"""Short-circuit completion: when a snapshot of part of the window is already the whole answer.

A row-local pipeline (``where``, ``project``, ``extend``, ``parse``, …) over one table yields,
over a slice of the window, rows of the whole window's answer. So ``take N`` is answered by
any snapshot with N rows (``take`` picks any N rows, as in Kusto), and an implicit
``take``/``tail 2000`` by any truncated snapshot (the progressive slices share the window's
end, so a bare table's newest rows in a slice are the newest of the window). The run then
stops scheduling windows and reports ``complete`` with ``short_circuit_completion``, as
Berserk does.
"""

from __future__ import annotations

from dataclasses import dataclass

from bzrk.engine.analysis import QueryShape
from bzrk.engine.compile.query import CompiledQuery
from bzrk.engine.snapshots import Snapshot


@dataclass(frozen=True, slots=True)
class WholeAt:
    """A snapshot with ``rows`` rows is the whole answer; with ``rows`` None, a truncated one is."""

    rows: int | None

    def holds(self, snapshot: Snapshot) -> bool:
        if len(snapshot.tables) != 1:
            return False
        if self.rows is None:
            return any(w.kind == "ResultTruncated" for w in snapshot.warnings)
        return len(snapshot.tables[0][2]) >= self.rows


def whole_at(
    shape: QueryShape, limits: dict[str, tuple[int, str]], compiled: CompiledQuery
) -> WholeAt | None:
    """When a snapshot of ``compiled``'s one result table is the whole answer, if ever.

    ``limits`` maps each result table to its row cap and why (``take``/``tail`` for the
    implicit limits), as the query service's row-cap pass leaves them.
    """
    statement = shape.last
    if len(compiled.tables) != 1 or len(shape.statements) != 1 or statement is None:
        return None
    if not statement.row_local:
        return None
    if statement.take is not None:
        return WholeAt(statement.take)
    _, kind = limits[compiled.tables[0].name]
    return WholeAt(None) if kind in ("take", "tail") else None
