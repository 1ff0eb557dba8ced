"""``stop_when``: the stop language shared by CLI ``--stop-when``, MCP and workflows.

Grammar: ``<ident> <op> <number>``; ``ident`` is ``rows`` (the snapshot's row count) or a
column name (the first row's numeric value); ``op`` is one of ``>= <= > < == !=``.

Snapshots of a progressive run are lower bounds over the requested window (row counts and
counts only grow as slices complete), so only ``>``/``>=`` are *absorbing*: once true they stay
true, and the run may cancel at that complete snapshot. ``== != < <=`` never cancel — they need
the whole window (or run until the timeout).

>>> p = parse_stop_when("n >= 50")
>>> p.absorbing, p.holds(["n"], [[49]]), p.holds(["n"], [[50]])
(True, False, True)
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_PATTERN = re.compile(
    r"^\s*(?P<ident>[A-Za-z_$][A-Za-z0-9_.$]*|\[\s*'[^']*'\s*\]|\[\s*\"[^\"]*\"\s*\])\s*"
    r"(?P<op>>=|<=|==|!=|>|<)\s*(?P<number>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}


class StopPredicateError(ValueError):
    """The ``stop_when`` text is not ``<ident> <op> <number>``; the message says why."""


@dataclass(frozen=True, slots=True)
class StopPredicate:
    text: str
    ident: str
    op: str
    number: float

    @property
    def on_rows(self) -> bool:
        return self.ident == "rows"

    @property
    def absorbing(self) -> bool:
        return self.op in (">", ">=")

    @property
    def is_existence(self) -> bool:
        """``rows >= 1`` / ``rows > 0``: "does any row match?" — a ``take 1`` answers it."""
        return self.on_rows and (
            (self.op == ">=" and self.number <= 1 and self.number > 0)
            or (self.op == ">" and 0 <= self.number < 1)
        )

    def holds(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
        """Whether the predicate is true of one complete snapshot of the primary table."""
        if self.on_rows:
            return _OPS[self.op](float(len(rows)), self.number)
        if self.ident not in columns:
            raise StopPredicateError(
                f"stop_when column '{self.ident}' is not in the result (columns: {', '.join(columns) or 'none'})"
            )
        if not rows:
            return False
        value = rows[0][list(columns).index(self.ident)]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and math.isnan(value))
        ):
            return False
        return _OPS[self.op](float(value), self.number)

    def cancels(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
        """True when the run may stop at this snapshot: absorbing and holding."""
        return self.absorbing and self.holds(columns, rows)


def parse_stop_when(text: str) -> StopPredicate:
    match = _PATTERN.match(text or "")
    if not match:
        raise StopPredicateError(
            f"invalid stop_when '{text}': expected '<ident> <op> <number>' with ident 'rows' or a column name "
            "and op one of >= <= > < == !="
        )
    ident = match.group("ident")
    if ident.startswith("["):
        ident = ident.strip("[] ")[1:-1]
    try:
        number = float(match.group("number"))
    except ValueError as exc:  # pragma: no cover - the pattern admits only numbers
        raise StopPredicateError(f"invalid number in stop_when '{text}'") from exc
    return StopPredicate(text.strip(), ident, match.group("op"), number)
