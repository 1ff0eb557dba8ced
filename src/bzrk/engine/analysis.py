"""What the query service needs to know about a parsed query before running it.

Whether each result is already limited (``take``, ``summarize``, …) decides the implicit
``take 2000``; a bare table becomes ``tail 2000`` (newest rows); whether a scan is bounded in
time decides ``MissingTimeFilter``; whether the last pipeline may be extended decides the
``take 1`` that an existence ``stop_when`` injects.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bzrk.engine.timewindow import QueryBounds, query_bounds
from bzrk.kql import syntax as K

TIME_COLUMNS = frozenset({"timestamp", "ingest_time"})

# Operators after which the number of result rows no longer grows with the data scanned.
_LIMITING = (
    K.Take,
    K.Tail,
    K.Top,
    K.TopNested,
    K.TopHitters,
    K.Summarize,
    K.Count,
    K.MakeSeries,
    K.Sample,
    K.SampleDistinct,
    K.GetSchema,
    K.FieldStats,
    K.OtelLogStats,
)
# Operators that aggregate: an existence stop_when must not cut their input to one row.
_AGGREGATING = (
    K.Summarize,
    K.Count,
    K.MakeSeries,
    K.TopNested,
    K.TopHitters,
    K.Distinct,
    K.FieldStats,
    K.OtelLogStats,
)
# Pipelines ending in these cannot legally take another operator.
_NOT_EXTENDABLE = (K.Render, K.OtelLogStats, K.Fork, K.Facet)
# Operators that map each input row to output rows on its own: a row of their output over part
# of the window is a row of their output over all of it.
_ROW_LOCAL = (
    K.Where,
    K.Project,
    K.Extend,
    K.ProjectAway,
    K.ProjectKeep,
    K.ProjectRename,
    K.ProjectReorder,
    K.Parse,
    K.ParseKv,
    K.MvExpand,
)


@dataclass(frozen=True, slots=True)
class StatementShape:
    limited: bool  # some operator already bounds the row count
    bare_table: bool  # just a table name, no operators
    aggregating: bool
    extendable: bool
    # Ends in `count` or a `summarize` without `by`: one row, whatever the input.
    single_row: bool = False
    # Reads one table through row-local operators only (where, project, extend, parse, …), so
    # every row a time slice yields is a row of the whole window's answer.
    row_local: bool = False
    # `take N` / `limit N` (a literal N) as the last operator of a row-local pipeline: a
    # snapshot with N rows is a whole answer (Berserk's short-circuit completion).
    take: int | None = None


@dataclass(frozen=True, slots=True)
class QueryShape:
    statements: tuple[StatementShape, ...]
    has_time_bound: bool  # a where on timestamp/ingest_time somewhere in the query
    trailing_semicolon: bool
    # Ticks of `summarize … by bin(timestamp, <span>)` in the last statement, if any.
    time_bin: int | None = None
    # The event-time bounds of the query's own leading filters (timewindow.query_bounds).
    time_bounds: QueryBounds | None = None

    @property
    def last(self) -> StatementShape | None:
        return self.statements[-1] if self.statements else None


def _result_statements(query: K.Query) -> list[K.ExprStatement]:
    return [s for s in query.statements if isinstance(s, K.ExprStatement)]


def _statement_shape(statement: K.ExprStatement) -> StatementShape:
    expr = statement.expr
    if isinstance(expr, K.Paren):
        expr = expr.expr
    if isinstance(expr, K.NameRef):
        return StatementShape(
            limited=False, bare_table=True, aggregating=False, extendable=True, row_local=True
        )
    if not isinstance(expr, K.Pipeline):
        return StatementShape(limited=True, bare_table=False, aggregating=False, extendable=False)
    operators = expr.operators
    source = expr.source
    source_limited = isinstance(
        source, K.Print | K.DataTable | K.Range | K.FieldStats | K.OtelLogStats
    )
    limited = source_limited or any(isinstance(op, _LIMITING) for op in operators)
    aggregating = any(isinstance(op, _AGGREGATING) for op in operators) or isinstance(
        source, K.FieldStats | K.OtelLogStats
    )
    extendable = not (operators and isinstance(operators[-1], _NOT_EXTENDABLE)) and not isinstance(
        source, K.OtelLogStats
    )
    bare = not operators and isinstance(source, K.NameRef)
    last = operators[-1] if operators else None
    single_row = isinstance(last, K.Count) or (isinstance(last, K.Summarize) and not last.by)
    body = operators[:-1] if isinstance(last, K.Take) else operators
    row_local = isinstance(source, K.NameRef) and all(isinstance(op, _ROW_LOCAL) for op in body)
    take = None
    if row_local and isinstance(last, K.Take):
        count = last.count
        if isinstance(count, K.Literal) and isinstance(count.value, int) and count.value >= 0:
            take = count.value
        else:
            row_local = False  # a computed count: nothing to short-circuit on
    return StatementShape(limited, bare, aggregating, extendable, single_row, row_local, take)


def _mentions_time_column(node: K.Node) -> bool:
    return any(isinstance(child, K.NameRef) and child.name in TIME_COLUMNS for child in node.walk())


def _has_time_bound(query: K.Query) -> bool:
    return any(
        isinstance(node, (K.Where, K.Find)) and _bounds_time(node.predicate)
        for node in query.walk()
    )


def _bounds_time(predicate: K.Expr) -> bool:
    if isinstance(predicate, K.Paren):
        return _bounds_time(predicate.expr)
    if isinstance(predicate, K.Binary):
        if predicate.op == "and":
            return _bounds_time(predicate.left) or _bounds_time(predicate.right)
        if predicate.op in (">", ">=", "<", "<=", "=="):
            return _mentions_time_column(predicate.left) or _mentions_time_column(predicate.right)
    if isinstance(predicate, K.Between) and not predicate.negated:
        return _mentions_time_column(predicate.value)
    return False


def _time_bin(statement: K.ExprStatement | None) -> int | None:
    """The bin span of ``summarize … by bin(timestamp, <timespan literal>)`` in a statement."""
    if statement is None or not isinstance(statement.expr, K.Pipeline):
        return None
    for op in statement.expr.operators:
        if not isinstance(op, K.Summarize):
            continue
        for item in op.by:
            call = item.expr
            if (
                isinstance(call, K.Call)
                and call.name in ("bin", "floor")
                and len(call.args) == 2
                and isinstance(call.args[0], K.NameRef)
                and call.args[0].name == "timestamp"
                and isinstance(call.args[1], K.Literal)
                and call.args[1].type == "timespan"
                and isinstance(call.args[1].value, int)
                and call.args[1].value > 0
            ):
                return int(call.args[1].value)
    return None


def analyze_shape(query: K.Query, text: str) -> QueryShape:
    results = _result_statements(query)
    statements = tuple(_statement_shape(s) for s in results)
    if any(not isinstance(s, K.ExprStatement | K.SetOption) for s in query.statements):
        # A `let` may name a tabular value: a statement's source is then no table read.
        statements = tuple(replace(s, row_local=False, take=None) for s in statements)
    return QueryShape(
        statements,
        _has_time_bound(query),
        text.rstrip().endswith(";"),
        _time_bin(results[-1] if results else None),
        query_bounds(query),
    )
