"""The summarize memory budget: how many groups a `summarize` may hold, and which series it keeps.

A summarize's groups are its series (the non-time `by` keys) times its time bins. The budget is
given in bytes (`hint.budget=<bytes|"64mib"|max>`, or the service default) and enforced as a
group count: the budget divided by an estimate of one group's size, from the key types and the
aggregate states declared below. ClickHouse enforces the count (`max_rows_to_group_by` with
`group_by_overflow_mode = 'throw'`); when it is passed, the query service compiles the query
again with a :class:`Reduction`, and each budgeted summarize keeps a subset of whole series:
every time bin of a kept series stays exact, dropped series are absent, never partial.

- ``hint.sample=sample`` (the default) keeps the series whose key hash falls in 1 of 2**shift
  buckets: a representative, deterministic sample.
- ``hint.sample=heaviest`` keeps the ``max_groups >> shift`` series with the most rows (found
  with ClickHouse's ``topK``, a bounded-memory heavy-hitters sketch).

A summarize with no series axis (only time keys) cannot drop series; overflowing it is an
error the user acts on (narrow the window, a coarser bin, or ``hint.budget=max``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import T
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.relation import Relation

MODES = ("sample", "heaviest")

# Bytes one group costs in ClickHouse's aggregation hash table, by key type and aggregate state.
# Estimates (states of sketches start small and grow): what matters is the order of magnitude.
GROUP_OVERHEAD_BYTES = 32
KEY_BYTES = {"string": 48, "dynamic": 96, "guid": 16, "decimal": 16}
AGGREGATE_STATE_BYTES = {
    "count": 8,
    "countif": 8,
    "sum": 8,
    "sumif": 8,
    "min": 16,
    "max": 16,
    "minif": 16,
    "maxif": 16,
    "avg": 16,
    "avgif": 16,
    "stdev": 24,
    "stdevif": 24,
    "variance": 24,
    "varianceif": 24,
    "arg_max": 64,
    "arg_min": 64,
    "take_any": 32,
    "dcount": 1024,
    "dcountif": 1024,
    "hll": 1024,
    "percentile": 2048,
    "percentiles": 2048,
    "percentiles_array": 2048,
    "tdigest": 2048,
    "make_list": 1024,
    "make_set": 1024,
    "make_bag": 1024,
}
DEFAULT_STATE_BYTES = 32

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


@dataclass(frozen=True)
class Reduction:
    """The cut applied after an overflow: ``shift`` halvings of the series kept."""

    shift: int


@dataclass(frozen=True)
class BudgetPolicy:
    """What the service asks of every summarize it compiles."""

    default_bytes: int
    reduction: Reduction | None = None


@dataclass(frozen=True)
class SummarizeBudget:
    """One budgeted summarize of a compiled query."""

    budget_bytes: int
    group_bytes: int
    mode: str
    series: tuple[str, ...]  # the non-time `by` columns; empty: no series axis
    start: int  # where the operator is in the query text
    end: int

    @property
    def max_groups(self) -> int:
        return max(1, self.budget_bytes // self.group_bytes)


def parse_size(text: str) -> int | None:
    """``"64mib"`` → 67108864, ``"1.5gb"`` → 1500000000; None if it is not a size."""
    match = _SIZE.match(text)
    if not match:
        return None
    number, unit, binary = match.groups()
    base = 1024 if binary else 1000
    return int(float(number) * base ** _UNITS[unit.lower()])


def _budget_value(param: K.OperatorParam) -> int | None:
    """``hint.budget``'s bytes; None for ``max``."""
    value = param.value
    word = value.name if isinstance(value, K.NameRef) else None
    if isinstance(value, K.Literal) and isinstance(value.value, str):
        word = value.value
    if word is not None and word.strip().lower() == "max":
        return None
    if isinstance(value, K.Literal) and isinstance(value.value, int | float):
        return int(value.value)
    size = parse_size(word) if word is not None else None
    if size is None:
        raise unsupported(
            param,
            'hint.budget takes a byte count, a size such as "64mib", or max',
            code="InvalidArgument",
        )
    return size


def _params(op: K.Summarize, default_bytes: int) -> tuple[int | None, str]:
    budget: int | None = default_bytes
    mode = "sample"
    for param in op.params:
        value = param.value
        if param.name == "hint.budget":
            budget = _budget_value(param)
            if budget is not None and budget <= 0:
                raise unsupported(param, "hint.budget must be positive", code="InvalidArgument")
        elif param.name == "hint.sample":
            word = value.name if isinstance(value, K.NameRef) else getattr(value, "value", None)
            if not isinstance(word, str) or word.lower() not in MODES:
                raise unsupported(
                    param, "hint.sample is sample or heaviest", code="InvalidArgument"
                )
            mode = word.lower()
    return budget, mode


def group_bytes(key_types: list[str], aggregates: tuple[K.NamedExpr, ...]) -> int:
    total = GROUP_OVERHEAD_BYTES + sum(KEY_BYTES.get(t, 8) for t in key_types)
    for item in aggregates:
        name = item.expr.name.lower() if isinstance(item.expr, K.Call) else ""
        total += AGGREGATE_STATE_BYTES.get(name, DEFAULT_STATE_BYTES)
    return total


def series_filter(
    policy: BudgetPolicy | None,
    budgets: list[SummarizeBudget],
    op: K.Summarize,
    relation: Relation,
    keys: list[tuple[str, S.Expr, str]],
) -> S.Expr | None:
    """Record ``op``'s budget in ``budgets``; under a reduction, the filter keeping whole series.

    ``keys`` are the `by` keys as (output name, SQL over ``relation``'s rows, KQL type).
    """
    if policy is None or not keys:
        return None
    budget, mode = _params(op, policy.default_bytes)
    if budget is None:
        return None
    series = [(name, sql) for name, sql, kql_type in keys if kql_type != "datetime"]
    entry = SummarizeBudget(
        budget_bytes=budget,
        group_bytes=group_bytes([t for _, _, t in keys], op.aggregates),
        mode=mode,
        series=tuple(name for name, _ in series),
        start=op.span.start,
        end=op.span.end,
    )
    budgets.append(entry)
    if policy.reduction is None or not series:
        return None
    shift = policy.reduction.shift
    key = T(
        "tuple(" + ", ".join(f"{{{i}}}" for i in range(len(series))) + ")",
        *[sql for _, sql in series],
    )
    if mode == "sample":
        return T("cityHash64({0}) % {1} = 0", key, S.Lit(1 << shift))
    # topK finds the heavy hitters in bounded memory; an exact GROUP BY of the series could
    # overflow the budget itself.
    heaviest = S.Select(
        columns=[
            (T("arrayJoin(topK(" + str(max(1, entry.max_groups >> shift)) + ")({0}))", key), None)
        ],
        from_=relation.source(),
    )
    return T("{0} IN {1}", key, S.ScalarSubquery(heaviest))
