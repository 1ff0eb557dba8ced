"""`trace-find`: the traces in which spans, and the logs correlated to them, match a pattern.

``T | trace-find { A } >> { B } and { C } [within=5m] [where …] [summarize …]``. A block
``{ predicate }`` is a where-predicate over one row of ``T`` (``{ }`` matches every row,
``{ search "x" }`` the rows whose string or bag columns have the term). Rows with a
``duration`` are spans, the others logs; a log is a child of the span whose ``span_id`` it
carries and has no children. Structural relations (``>`` child, ``>>`` descendant, ``<`` parent,
``<<`` ancestor, ``~`` sibling, ``::`` correlated log) hold between nodes of one trace; ``and`` /
``or`` combine whole patterns per trace; a chain ``{A} >> {B} > {C}`` is the pairwise checks
``{A} >> {B}`` and ``{B} > {C}``.

The plan: one pass marks every row of a trace with a flag per block; a GROUP BY trace keeps
the traces that could match (every block a pattern needs matched somewhere, which is already
the answer for patterns without structural relations); only those traces gather their nodes in
arrays, where the relations are array expressions (the last section of this module).

Output: one row per matching trace, ``trace_id``. Attached clauses read the matching traces'
rows (every row of the trace in the query window): ``where`` filters them, ``summarize``
aggregates them per trace (``by trace_id`` is implicit and comes first), and clauses after the
summarize read its result. ``within`` (the vendor's collection-window hint, default 5m) has no
effect: the whole query window is read at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.operators.search import search_condition
from bzrk.engine.compile.operators.summarize import op_summarize
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.typed import T, Typed, to_string
from bzrk.kql import syntax as K
from bzrk.storage.schema import COLUMNS_BY_NAME

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext

STRUCTURAL = (">", ">>", "<", "<<", "~", "::")


def _searched(name: str, kql_type: str) -> bool:
    """Whether `{ search "x" }` reads the column: strings and bags (attributes, resource,
    scope, span events and links), never the numeric arrays of metric points nor ``$raw``,
    the whole record again (reading each would cost as much as the rest of the row)."""
    if kql_type == "string":
        return True
    if kql_type != "dynamic" or name == "$raw":
        return False
    stored = COLUMNS_BY_NAME.get(name)
    return stored is None or stored.ch_type.startswith(("JSON", "Array(JSON"))


def op_trace_find(ctx: CompileContext, op: K.TraceFind, relation: Relation) -> Relation:
    """`T | trace-find pattern …`: one row per matching trace, or the attached clauses' result."""
    _check_params(op)
    columns = dict(relation.columns)
    for needed in ("trace_id", "span_id"):
        if needed not in columns:
            raise unsupported(
                op,
                f"trace-find needs a '{needed}' column (its input has none)",
                code="UnknownName",
            )
    leaves = list(_leaves(op.pattern))
    index = {id(leaf): i for i, leaf in enumerate(leaves)}
    rows = relation
    if any(isinstance(leaf.predicate, K.Pipeline) for leaf in leaves):
        rows = _with_bag_text(ctx, relation)
    trace = _text(ctx, rows, op, "trace_id")
    span = _text(ctx, rows, op, "span_id")
    parent = _text(ctx, rows, op, "parent_span_id") if "parent_span_id" in columns else S.Lit("")
    is_span: S.Expr = (
        T("isNotNull({0})", ctx.expr(rows, K.NameRef(op.span, "duration")).sql)
        if "duration" in columns
        else T("true")
    )
    marks = [_flag(ctx, rows, leaf) for leaf in leaves]
    node_columns: list[tuple[S.Expr, str]] = [
        (trace, "__tid"),
        (T("if({0}, {1}, '')", is_span, span), "__id"),
        (T("if({0}, {1}, {2})", is_span, parent, span), "__pid"),
        (T("toUInt8(NOT {0})", is_span), "__log"),
        *((mark, f"__f{i}") for i, mark in enumerate(marks)),
    ]
    # Logs matter only where they match a block; spans also as the tree's inner nodes.
    keep: S.Expr = is_span
    for mark in marks:
        keep = S.BinOp("OR", keep, mark)
    nodes = ctx.select(
        rows,
        node_columns,
        [
            ("__tid", "string"),
            ("__id", "string"),
            ("__pid", "string"),
            ("__log", "long"),
            *((f"__f{i}", "long") for i in range(len(marks))),
        ],
        where=T("{0} != '' AND {1}", trace, keep),
    )
    candidates = ctx.new_cte(
        S.Select(
            columns=[(S.Col("__tid"), "__tid")],
            from_=nodes.source(),
            group_by=[S.Col("__tid")],
            having=_necessary(op.pattern, index),
        ),
        [("__tid", "string")],
    )
    if _structural(op.pattern):
        matched = _structural_matches(ctx, op, nodes, candidates, index, len(leaves))
    else:
        matched = candidates
    result = ctx.select(matched, [(S.Col("__tid"), "trace_id")], [("trace_id", "string")])
    if not op.output:
        return result
    return _attached(ctx, op, relation, trace, result)


# --- the pattern -----------------------------------------------------------------------------


def _check_params(op: K.TraceFind) -> None:
    for param in op.params:
        if param.name != "within":
            raise unsupported(param, f"trace-find has no parameter '{param.name}' (only within)")
        value = param.value
        if not (isinstance(value, K.Literal) and value.type == "timespan"):
            raise unsupported(param, "trace-find: within takes a timespan such as 5m")


def _leaves(pattern: K.TracePattern) -> Iterator[K.TracePattern]:
    if pattern.relation is None:
        yield pattern
        return
    assert pattern.left is not None and pattern.right is not None
    yield from _leaves(pattern.left)
    yield from _leaves(pattern.right)


def _structural(pattern: K.TracePattern) -> bool:
    if pattern.relation is None:
        return False
    assert pattern.left is not None and pattern.right is not None
    return pattern.relation in STRUCTURAL or _structural(pattern.left) or _structural(pattern.right)


def _end_leaf(pattern: K.TracePattern, last: bool, relation: K.TracePattern) -> K.TracePattern:
    """The block a structural relation reads on one side: in a chain the nearest block."""
    while pattern.relation is not None:
        if pattern.relation not in STRUCTURAL:
            raise unsupported(
                relation,
                f"trace-find: '{relation.relation}' relates blocks, not patterns combined"
                f" with '{pattern.relation}' (write each relation and combine them)",
            )
        side = pattern.right if last else pattern.left
        assert side is not None
        pattern = side
    return pattern


def _necessary(pattern: K.TracePattern, index: dict[int, int]) -> S.Expr:
    """What a trace must have for the pattern to hold: every block it needs matched somewhere."""
    if pattern.relation is None:
        return T("max({0}) > 0", S.Col(f"__f{index[id(pattern)]}"))
    assert pattern.left is not None and pattern.right is not None
    op = "OR" if pattern.relation == "or" else "AND"
    return S.BinOp(op, _necessary(pattern.left, index), _necessary(pattern.right, index))


def _condition(pattern: K.TracePattern, index: dict[int, int], closures: set[int]) -> S.Expr:
    """The pattern over one trace's node arrays (``closures`` collects the closures it reads)."""
    if pattern.relation is None:
        return has_match(index[id(pattern)])
    assert pattern.left is not None and pattern.right is not None
    if pattern.relation in ("and", "or"):
        return S.BinOp(
            pattern.relation.upper(),
            _condition(pattern.left, index, closures),
            _condition(pattern.right, index, closures),
        )
    left = index[id(_end_leaf(pattern.left, True, pattern))]
    right = index[id(_end_leaf(pattern.right, False, pattern))]
    closure = needs_closure(pattern.relation, left, right)
    if closure is not None:
        closures.add(closure)
    result = related(pattern.relation, left, right)
    for side in (pattern.left, pattern.right):
        if side.relation is not None:  # a chain: its own relations hold too
            result = S.BinOp("AND", result, _condition(side, index, closures))
    return result


def _structural_matches(
    ctx: CompileContext,
    op: K.TraceFind,
    nodes: Relation,
    candidates: Relation,
    index: dict[int, int],
    count: int,
) -> Relation:
    """The candidate traces whose node arrays satisfy the pattern."""
    closures: set[int] = set()
    condition = _condition(op.pattern, index, closures)
    gathered = ctx.new_cte(
        S.Select(
            columns=[
                (S.Col("__tid"), "__tid"),
                (T("groupArray({0})", S.Col("__id")), "__ids"),
                (T("groupArray({0})", S.Col("__pid")), "__pids"),
                (T("groupArray({0})", S.Col("__log")), LOGS),
                *((T("groupArray({0})", S.Col(f"__f{i}")), flags(i)) for i in range(count)),
            ],
            from_=nodes.source(),
            where=S.InList(
                S.Col("__tid"),
                S.Select(columns=[(S.Col("__tid"), None)], from_=candidates.source()),
            ),
            group_by=[S.Col("__tid")],
        ),
        [("__tid", "string")],
    )
    carried = ["__tid", LOGS, *(flags(i) for i in range(count))]
    tree = ctx.new_cte(
        S.Select(
            columns=[
                *((S.Col(name), name) for name in carried),
                (
                    T(
                        "arrayMap(p -> if(p = '', 0, indexOf({1}, p)), {0})",
                        S.Col("__pids"),
                        S.Col("__ids"),
                    ),
                    UP,
                ),
            ],
            from_=gathered.source(),
        ),
        [("__tid", "string")],
    )
    carried.append(UP)
    for level in closure_levels(carried, closures):
        tree = ctx.new_cte(S.Select(columns=level, from_=tree.source()), [("__tid", "string")])
    return ctx.new_cte(
        S.Select(columns=[(S.Col("__tid"), "__tid")], from_=tree.source(), where=condition),
        [("__tid", "string")],
    )


# --- rows and blocks -------------------------------------------------------------------------


def _text(ctx: CompileContext, relation: Relation, op: K.TraceFind, name: str) -> S.Expr:
    value = ctx.expr(relation, K.NameRef(op.span, name))
    return to_string(Typed(value.sql, value.type))


def _with_bag_text(ctx: CompileContext, relation: Relation) -> Relation:
    """``relation`` plus each searched bag's JSON text as a string column ("resource text").

    A search term then reads the text once per row: `has` on the dynamic bag itself would
    serialize it again in every branch of its null and string checks (a bag is never a JSON
    string, so its text is the serialization as is).
    """
    texts = [(name, f"{name} text") for name, kql_type in relation.columns
             if kql_type == "dynamic" and _searched(name, kql_type)]  # fmt: skip
    return ctx.select(
        relation,
        [
            *((S.Col(n), n) for n, _ in relation.columns),
            *((T("{0}", relation.column(bag)), text) for bag, text in texts),
        ],
        [*relation.columns, *((text, "string") for _, text in texts)],
    )


def _flag(ctx: CompileContext, relation: Relation, leaf: K.TracePattern) -> S.Expr:
    """Whether block ``leaf`` matches a row, as UInt8 (a null predicate does not match)."""
    predicate = leaf.predicate
    if predicate is None:
        return T("toUInt8(1)")
    if isinstance(predicate, K.Pipeline):
        search = predicate.source
        if not isinstance(search, K.Search) or predicate.operators or search.tables:
            raise unsupported(
                predicate, "trace-find: a { } block holds a predicate or a search, not a query"
            )
        # Strings and the bags' text (_with_bag_text): never the bags themselves.
        searched = dataclasses.replace(
            relation, columns=[c for c in relation.columns if c[1] == "string"]
        )
        predicate = search_condition(search, searched)
    value = ctx.expr(relation, predicate)
    return T("toUInt8(ifNull({0}, false))", ExprCompiler(ctx.scope(relation)).as_bool(value))


# --- attached clauses ------------------------------------------------------------------------


def _attached(
    ctx: CompileContext, op: K.TraceFind, relation: Relation, trace: S.Expr, result: Relation
) -> Relation:
    """The attached where / summarize clauses over the matching traces' rows."""
    rows = ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        where=S.InList(trace, S.Select(columns=[(S.Col("trace_id"), None)], from_=result.source())),
    )
    per_trace = False  # rows became one per trace (a summarize, or the default output)
    for clause in op.output:
        if isinstance(clause, K.Summarize):
            if per_trace:
                raise unsupported(clause, "trace-find takes one summarize, over the trace's rows")
            rows = op_summarize(ctx, _by_trace(clause), rows)
            per_trace = True
        elif isinstance(clause, K.Where) or per_trace:
            rows = ctx.operator(clause, rows)
        else:
            rows = _one_per_trace(ctx, rows)
            per_trace = True
            rows = ctx.operator(clause, rows)
    return rows if per_trace else _one_per_trace(ctx, rows)


def _by_trace(clause: K.Summarize) -> K.Summarize:
    """``clause`` grouped by trace_id first (the vendor's implicit key)."""
    for item in clause.by:
        if not item.names and isinstance(item.expr, K.NameRef) and item.expr.name == "trace_id":
            return clause
    key = K.NamedExpr(clause.span, (), K.NameRef(clause.span, "trace_id"))
    return dataclasses.replace(clause, by=(key, *clause.by))


def _one_per_trace(ctx: CompileContext, rows: Relation) -> Relation:
    return ctx.select(
        rows,
        [(S.Col("trace_id"), "trace_id")],
        [("trace_id", "string")],
        group_by=[S.Col("trace_id")],
    )


# --- the relations over a trace's node arrays ---------------------------------------------
#
# The span relations of trace-find as SQL over one trace's nodes gathered in arrays.
#
# Each matching candidate trace is one row: its nodes (spans, and the logs that match a block) in
# parallel arrays, ``__up`` holding each node's parent as a 1-based position in them (0: none, the
# root or a parent outside the window). A log's parent is the span it carries the ``span_id`` of;
# no node has a log as its parent, so logs are leaves. ``__a<i>`` holds, per node, whether block
# ``i`` matches it (UInt8).
#
# Ancestry is read through pointer jumping: ``__s<i>`` (block ``i`` matches the node or one of
# its ancestors) is widened level by level while a jump array doubles the distance it reaches,
# so :data:`JUMP_LEVELS` levels cover any tree up to ``2 ** JUMP_LEVELS - 1`` levels deep, each
# level one pass over the arrays (a cycle in malformed data only repeats nodes; it cannot loop).

# Ancestors up to 2**10 - 1 = 1023 levels above a node are seen; OTel traces are far shallower.
JUMP_LEVELS = 10

UP = "__up"
LOGS = "__logs"


def flags(leaf: int) -> str:
    """The array column holding whether block ``leaf`` matches each node."""
    return f"__a{leaf}"


def closure_name(leaf: int) -> str:
    """The array column holding whether block ``leaf`` matches each node or an ancestor of it."""
    return f"__s{leaf}_{JUMP_LEVELS - 1}"


def closure_levels(passthrough: list[str], leaves: Iterable[int]) -> list[list[tuple[S.Expr, str]]]:
    """The select lists of the pointer-jumping levels, one CTE each, over the tree CTE.

    Args:
        passthrough: the columns every level carries on unchanged.
        leaves: the blocks whose ancestor-or-self closure is needed.

    Returns:
        One select list per level; the last level's ``closure_name(i)`` are the closures.
    """
    wanted = sorted(set(leaves))
    levels: list[list[tuple[S.Expr, str]]] = []
    closure = {i: flags(i) for i in wanted}
    jump = UP
    for level in range(JUMP_LEVELS):
        columns: list[tuple[S.Expr, str]] = [(S.Col(name), name) for name in passthrough]
        for i in wanted:
            name = f"__s{i}_{level}"
            columns.append(
                (
                    T(
                        "arrayMap(i -> {0}[i] OR {0}[{1}[i]], arrayEnumerate({1}))",
                        S.Col(closure[i]),
                        S.Col(jump),
                    ),
                    name,
                )
            )
            closure[i] = name
        if level < JUMP_LEVELS - 1:
            name = f"__j{level}"
            columns.append(
                (T("arrayMap(i -> {0}[{0}[i]], arrayEnumerate({0}))", S.Col(jump)), name)
            )
            jump = name
        levels.append(columns)
    return levels


def has_match(leaf: int) -> S.Expr:
    """Some node of the trace matches block ``leaf``."""
    return T("has({0}, 1)", S.Col(flags(leaf)))


def related(relation: str, left: int, right: int) -> S.Expr:
    """A node matching block ``left`` stands in ``relation`` to one matching block ``right``.

    ``{A} > {B}``: a B node's parent matches A; ``{A} < {B}``: an A node's parent matches B;
    ``>>``/``<<`` the same through any ancestor; ``~`` an A node and another B node share a
    parent; ``::`` a B log's span matches A.
    """
    up = S.Col(UP)
    a, b = S.Col(flags(left)), S.Col(flags(right))
    if relation == ">":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", b, a, up)
    if relation == "<":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", a, b, up)
    if relation == ">>":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", b, S.Col(closure_name(left)), up)
    if relation == "<<":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", a, S.Col(closure_name(right)), up)
    if relation == "::":
        return T(
            "arrayExists((x, l, p) -> x AND l AND {2}[p], {0}, {1}, {3})", b, S.Col(LOGS), a, up
        )
    if relation == "~":
        return T(
            "arrayExists((x, p, i) -> x AND p != 0 AND arrayExists((y, d, k) -> y AND d = p"
            " AND k != i, {1}, {2}, arrayEnumerate({2})), {0}, {2}, arrayEnumerate({2}))",
            a,
            b,
            up,
        )
    raise ValueError(relation)


def needs_closure(relation: str, left: int, right: int) -> int | None:
    """The block whose ancestor closure ``relation`` reads (None: it reads parents only)."""
    if relation == ">>":
        return left
    if relation == "<<":
        return right
    return None
