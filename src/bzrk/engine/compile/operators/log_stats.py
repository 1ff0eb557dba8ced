"""Berserk's ``otel-log-stats``: a log sample's schema and its most common values, in one query.

``T | otel-log-stats [col, bag, …] [severity=<col>] [limit=N depth=M field="*glob*"]`` answers
two tables, as the vendor's explore agent describes them:

1. ``PrimaryResult``: ``fieldstats`` of the named columns and bags over the sample (every column
   when none is named; see :mod:`.fieldstats` for the columns and the ``limit``/``depth``/
   ``field`` parameters);
2. ``TopValues``: ``Category``, ``Value``, ``Count``, ``Frequency`` (the share of sampled rows,
   0-1), ``Rank`` (1 = most common in its category) — the 10 most common values of each of
   ``service`` (``resource.service.name``), ``severity`` (the ``severity=`` column, by default
   ``severity_text``), ``scope`` (``scope_name``) and ``pattern`` (``extract_log_template`` of
   the body). A category whose column the input lacks is left out; empty values are not counted.

Both read the same sample: the first ``limit`` rows (default 2000) of the input, so a filter
before the operator (``where isnotnull(body)``) selects what is sampled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.operators import fieldstats
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.typed import T, to_string
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext

TOP_VALUES = "TopValues"
TOP_N = 10
OUTPUT = [
    ("Category", "string"),
    ("Value", "string"),
    ("Count", "long"),
    ("Frequency", "real"),
    ("Rank", "long"),
]
_FIELDSTATS_PARAMS = frozenset({"limit", "depth", "field"})


def op_otel_log_stats(ctx: CompileContext, op: K.OtelLogStats, relation: Relation) -> Relation:
    params = {p.name: p for p in op.params}
    for p in op.params:
        if p.name != "severity" and p.name not in _FIELDSTATS_PARAMS:
            raise unsupported(p, f"otel-log-stats has no parameter '{p.name}' (severity=, "
                              "limit=, depth=, field=)", code="InvalidArgument")  # fmt: skip
    kept = tuple(p for p in op.params if p.name in _FIELDSTATS_PARAMS)
    # One sample for both tables (the same rows: fieldstats.sample_rows is deterministic).
    sample = fieldstats.sample_rows(ctx, relation, fieldstats.sample_size(ctx, params.get("limit")))
    schema = fieldstats.op_fieldstats(ctx, K.FieldStats(op.span, op.columns, kept), sample)
    top = _top_values(ctx, op, sample, params.get("severity"))
    ctx.pending_results.append(ctx.result_table(top, TOP_VALUES))
    return schema


def _top_values(
    ctx: CompileContext, op: K.OtelLogStats, sample: Relation, severity: K.OperatorParam | None
) -> Relation:
    categories = _categories(ctx, op, sample, severity)
    values = ctx.select(
        sample,
        [
            *((value, f"c{i}") for i, (_, value) in enumerate(categories)),
            (T("count() OVER ()"), "n"),
        ],
        [*((f"c{i}", "string") for i in range(len(categories))), ("n", "long")],
    )
    pairs = ", ".join(f"tuple({{{2 * i}}}, {{{2 * i + 1}}})" for i in range(len(categories)))
    slots: list[S.Expr] = []
    for i, (name, _) in enumerate(categories):
        slots += [S.Lit(name), S.Col(f"c{i}")]
    exploded = S.Select(
        columns=[(T("p.1"), "category"), (T("p.2"), "value"), (S.Col("n"), "n")],
        from_=values.source(),
        array_join=[(T(f"arrayFilter(x -> x.2 != '', [{pairs}])", *slots), "p")],
    )
    flat = ctx.new_cte(exploded, [("category", "string"), ("value", "string"), ("n", "long")])
    rank = "toInt64(row_number() OVER (PARTITION BY category ORDER BY count() DESC, value))"
    counted = ctx.select(
        flat,
        [
            (S.Col("category"), "Category"),
            (S.Col("value"), "Value"),
            (T("toInt64(count())"), "Count"),
            (T("toFloat64(count() / any(n))"), "Frequency"),
            (T(rank), "Rank"),
        ],
        OUTPUT,
        group_by=[S.Col("category"), S.Col("value")],
    )
    result = ctx.select(
        counted,
        [(S.Col(n), n) for n, _ in OUTPUT],
        OUTPUT,
        where=T("Rank <= {0}", S.Lit(TOP_N)),
        order_by=[(S.Col("Category"), False, False), (S.Col("Rank"), False, False)],
    )
    result.ordered = True
    return result


def _categories(
    ctx: CompileContext,
    op: K.OtelLogStats,
    relation: Relation,
    severity: K.OperatorParam | None,
) -> list[tuple[str, S.Expr]]:
    """(category, its value as a string) for each category the input has a column for."""
    span = op.span

    def name(n: str) -> K.Expr:
        return K.NameRef(span, n)

    service = K.Member(span, K.Member(span, name("resource"), "service"), "name")
    level = severity.value if severity is not None else name("severity_text")
    body = K.Call(span, "tostring", (name("body"),))
    wanted: list[tuple[str, K.Expr, bool]] = [
        ("service", service, False),
        ("severity", level, severity is not None),
        ("scope", name("scope_name"), False),
        ("pattern", K.Call(span, "extract_log_template", (body,)), False),
    ]
    names = {n for n, _ in relation.columns}
    out: list[tuple[str, S.Expr]] = []
    for category, node, required in wanted:
        roots = [n.name for n in node.walk() if isinstance(n, K.NameRef)]
        if not required and not all(r in names for r in roots):
            continue
        try:
            value = ctx.expr(relation, node)
        except CompileError:
            if required:
                raise
            continue
        out.append((category, to_string(value)))
    if not out:
        raise unsupported(op, "otel-log-stats needs log columns (body, severity_text, "
                          "resource, scope_name)", code="InvalidArgument")  # fmt: skip
    return out


__all__ = ["OUTPUT", "TOP_VALUES", "op_otel_log_stats"]
