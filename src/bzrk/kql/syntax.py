"""The KQL syntax tree: small immutable node classes, each with a character `span`.

Nodes are frozen, slotted dataclasses named after the KQL construct. Children live in named
fields (a node, a tuple of nodes, or None); `Node.children()` walks them generically.
Nodes compare and hash by identity (`eq=False`), so binder side tables can key on them.

Scalar and tabular expressions share one `Expr` hierarchy (as in Kusto.Language): a table name
is a `NameRef`, `T | where p` is a `Pipeline`. Query operators that can start a pipeline
(`print`, `range`, `datatable`, `union`, `search`, `find`, `evaluate`, ...) appear as
`Pipeline.source` directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from bzrk.kql.diagnostics import Span

_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    span: Span

    def children(self) -> Iterator[Node]:
        """Direct child nodes, in source order."""
        cls = type(self)
        names = _FIELD_CACHE.get(cls)
        if names is None:
            names = tuple(f.name for f in fields(cls) if f.name != "span")
            _FIELD_CACHE[cls] = names
        for name in names:
            value = getattr(self, name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, Node):
                        yield item

    def walk(self) -> Iterator[Node]:
        """This node and all descendants, depth first (iterative: safe on deep trees)."""
        stack: list[Node] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children())))


# --- expressions --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Expr(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Literal(Expr):
    """A constant. `type` is the KQL scalar type name; `value` uses the engine's Python form:
    int/float/bool/str/None, int 100 ns ticks for datetime (since Unix epoch) and timespan,
    Decimal for decimal, str for guid, a JSON value for dynamic."""

    type: str
    value: Any
    text: str


@dataclass(frozen=True, slots=True, eq=False)
class NameRef(Expr):
    """A plain, bracketed (`['a b']`) or `$`-name (`$left`, `$raw`) reference."""

    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Star(Expr):
    """`*` as an argument (`count(*)`-like forms, `where * has "x"`)."""


@dataclass(frozen=True, slots=True, eq=False)
class Unary(Expr):
    op: str  # "-" | "+"
    operand: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Binary(Expr):
    """Binary operator; `op` is the canonical lower-case KQL text (`==`, `and`, `has`,
    `!contains_cs`, `matches regex`, ...)."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True, eq=False)
class InList(Expr):
    """`x in (a, b)`, `!in`, `in~`, `!in~`, `has_any`, `has_all`, `has_any_cs`... A single
    tabular item means "values of the first column"."""

    op: str
    left: Expr
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Between(Expr):
    negated: bool
    value: Expr
    low: Expr
    high: Expr


@dataclass(frozen=True, slots=True, eq=False)
class NamedArg(Expr):
    """`name = value` inside a call's argument list."""

    name: str
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """A function call `name(args)`; `target` is set for dotted calls (`database("x").T` is a
    Member whose target is a Call; `x.f()` has target x)."""

    name: str
    args: tuple[Expr, ...]
    target: Expr | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Member(Expr):
    """`target.name` (a dynamic property, `$left.x`, or `database("d").T`)."""

    target: Expr
    name: str


def dotted_name(expr: Expr) -> str | None:
    """The text of a member chain of plain names (`resource_service.name`), or None.

    Berserk names `tostring(resource['service.name'])` `resource_service.name`, and a later
    operator refers to that column by writing the name as it is: a chain whose text names a
    column of the row is that column (the binder and the compiler both ask this).
    """
    if isinstance(expr, NameRef):
        return expr.name
    if isinstance(expr, Member):
        head = dotted_name(expr.target)
        return None if head is None else f"{head}.{expr.name}"
    return None


@dataclass(frozen=True, slots=True, eq=False)
class Index(Expr):
    """`target[index]` (dynamic element or property)."""

    target: Expr
    index: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Paren(Expr):
    expr: Expr


@dataclass(frozen=True, slots=True, eq=False)
class ListExpr(Expr):
    """A parenthesised list `(a, b, c)` (only where KQL allows one: `in`, `has_any`, ...)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class TypeOf(Expr):
    """`typeof(long)`; `type` is a KQL scalar type name, or a schema text `(a:int, b:string)`."""

    type: str


@dataclass(frozen=True, slots=True, eq=False)
class Param(Node):
    """A lambda / let-function parameter: `x: long = 1` or a tabular `T: (*)`/`T: (a: long)`."""

    name: str
    type: str  # scalar type name or "table"
    columns: tuple[ColumnDecl, ...]  # declared schema of a tabular parameter (may be empty)
    default: Expr | None


@dataclass(frozen=True, slots=True, eq=False)
class Lambda(Expr):
    """`(params) { statements; result }` — a user function or view body."""

    params: tuple[Param, ...]
    body: tuple[Statement, ...]  # let statements followed by one ExprStatement
    is_view: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Pipeline(Expr):
    """`source | op1 | op2`; `source` is an Expr or a source operator (`print`, `range`, ...)."""

    source: Node
    operators: tuple[QueryOperator, ...]


@dataclass(frozen=True, slots=True, eq=False)
class ColumnDecl(Node):
    name: str
    type: str


# --- statements ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Statement(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class LetStatement(Statement):
    name: str
    name_span: Span
    value: Expr  # a scalar/tabular Expr or a Lambda


@dataclass(frozen=True, slots=True, eq=False)
class DeclareParameters(Statement):
    params: tuple[Param, ...]


@dataclass(frozen=True, slots=True, eq=False)
class SetOption(Statement):
    name: str
    value: Expr | None


@dataclass(frozen=True, slots=True, eq=False)
class ExprStatement(Statement):
    expr: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Query(Node):
    statements: tuple[Statement, ...]


# --- query operators ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class QueryOperator(Node):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class OperatorParam(Node):
    """`kind=inner`, `hint.strategy=shuffle`, `withsource=T`, `bagexpansion=array`..."""

    name: str  # lower-cased as written (`hint.strategy`)
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class NamedExpr(Node):
    """A projection / aggregate item: `expr`, `name = expr` or `(a, b) = expr`."""

    names: tuple[str, ...]  # empty when unnamed
    expr: Expr


@dataclass(frozen=True, slots=True, eq=False)
class OrderKey(Node):
    expr: Expr
    descending: bool  # KQL default for sort/top is descending
    nulls_first: bool | None  # None: the KQL default (last for desc, first for asc)


@dataclass(frozen=True, slots=True, eq=False)
class Where(QueryOperator):
    predicate: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Project(QueryOperator):
    items: tuple[NamedExpr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Extend(QueryOperator):
    items: tuple[NamedExpr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class ProjectAway(QueryOperator):
    """`project-away` with names or wildcard patterns (`a*`)."""

    patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False)
class ProjectKeep(QueryOperator):
    patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False)
class ProjectRename(QueryOperator):
    """(new, old) pairs."""

    renames: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, eq=False)
class ProjectReorder(QueryOperator):
    """(pattern, direction) pairs; direction is "", "asc", "desc", "granny-asc", "granny-desc"."""

    patterns: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, eq=False)
class Summarize(QueryOperator):
    params: tuple[OperatorParam, ...]  # hint.strategy, hint.shufflekey, hint.budget, hint.sample
    aggregates: tuple[NamedExpr, ...]
    by: tuple[NamedExpr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Count(QueryOperator):
    name: str | None  # `count as n`


@dataclass(frozen=True, slots=True, eq=False)
class Take(QueryOperator):
    """`take` / `limit`."""

    count: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Tail(QueryOperator):
    count: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Top(QueryOperator):
    count: Expr
    key: OrderKey


@dataclass(frozen=True, slots=True, eq=False)
class TopNestedLevel(Node):
    count: Expr | None
    of: NamedExpr
    others: Expr | None
    by: NamedExpr
    descending: bool


@dataclass(frozen=True, slots=True, eq=False)
class TopNested(QueryOperator):
    levels: tuple[TopNestedLevel, ...]


@dataclass(frozen=True, slots=True, eq=False)
class TopHitters(QueryOperator):
    count: Expr
    of: Expr
    by: Expr | None


@dataclass(frozen=True, slots=True, eq=False)
class Sort(QueryOperator):
    """`sort by` / `order by`."""

    keys: tuple[OrderKey, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Distinct(QueryOperator):
    items: tuple[Expr, ...]  # (Star,) for `distinct *`


@dataclass(frozen=True, slots=True, eq=False)
class Join(QueryOperator):
    params: tuple[OperatorParam, ...]  # kind=..., hint.*
    right: Expr
    on: tuple[Expr, ...]  # NameRef (same name on both sides) or Binary `$left.a == $right.b`
    where: Expr | None  # `join ... on ... where` is not KQL; kept None except for `on` exprs


@dataclass(frozen=True, slots=True, eq=False)
class Lookup(QueryOperator):
    params: tuple[OperatorParam, ...]
    right: Expr
    on: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Union(QueryOperator):
    """Union as a source (`union A, B`) or a pipe operator (`T | union B`)."""

    params: tuple[OperatorParam, ...]  # kind, withsource, isfuzzy
    tables: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class MvExpandItem(Node):
    item: NamedExpr
    to_type: str | None  # `to typeof(long)`


@dataclass(frozen=True, slots=True, eq=False)
class MvExpand(QueryOperator):
    params: tuple[OperatorParam, ...]  # bagexpansion, with_itemindex, kind
    items: tuple[MvExpandItem, ...]
    limit: Expr | None


@dataclass(frozen=True, slots=True, eq=False)
class MvApply(QueryOperator):
    params: tuple[OperatorParam, ...]
    items: tuple[MvExpandItem, ...]
    limit: Expr | None
    id_name: str | None  # `with_itemindex` is a param; `id=...` unused
    subquery: Expr  # Pipeline without source (operators apply to the expanded rows)


@dataclass(frozen=True, slots=True, eq=False)
class ParsePart(Node):
    """One element of a `parse` pattern: a literal string, a column `name[:type]`, or `*`."""

    literal: str | None
    column: ColumnDecl | None  # None with literal None means `*`


@dataclass(frozen=True, slots=True, eq=False)
class Parse(QueryOperator):
    """`parse` and `parse-where` (`where_only=True`)."""

    params: tuple[OperatorParam, ...]  # kind=simple|regex|relaxed, flags=
    source: Expr
    parts: tuple[ParsePart, ...]
    where_only: bool


@dataclass(frozen=True, slots=True, eq=False)
class ParseKv(QueryOperator):
    source: Expr
    columns: tuple[ColumnDecl, ...]
    with_params: tuple[OperatorParam, ...]


@dataclass(frozen=True, slots=True, eq=False)
class MakeSeries(QueryOperator):
    params: tuple[OperatorParam, ...]
    aggregates: tuple[NamedExpr, ...]
    defaults: tuple[Expr | None, ...]  # `default=` per aggregate
    on: Expr
    start: Expr | None
    end: Expr | None
    step: Expr
    in_range: bool  # `in range(start, end, step)` form
    by: tuple[NamedExpr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Render(QueryOperator):
    chart: str
    properties: tuple[OperatorParam, ...]  # `with (title="x", kind=stacked)` and legacy `kind=`


@dataclass(frozen=True, slots=True, eq=False)
class As(QueryOperator):
    params: tuple[OperatorParam, ...]
    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Serialize(QueryOperator):
    items: tuple[NamedExpr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class GetSchema(QueryOperator):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class Evaluate(QueryOperator):
    params: tuple[OperatorParam, ...]
    plugin: Call
    schema: tuple[ColumnDecl, ...]  # `: (col:type, ...)` output schema clause, if written


@dataclass(frozen=True, slots=True, eq=False)
class Sample(QueryOperator):
    count: Expr


@dataclass(frozen=True, slots=True, eq=False)
class SampleDistinct(QueryOperator):
    count: Expr
    of: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Search(QueryOperator):
    """`search [kind=..] [in (T1, T2)] predicate` (leading or piped)."""

    params: tuple[OperatorParam, ...]
    tables: tuple[Expr, ...]
    predicate: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Find(QueryOperator):
    params: tuple[OperatorParam, ...]
    tables: tuple[Expr, ...]
    predicate: Expr
    project: tuple[Expr, ...] | None
    project_smart: bool


@dataclass(frozen=True, slots=True, eq=False)
class Invoke(QueryOperator):
    call: Call


@dataclass(frozen=True, slots=True, eq=False)
class Consume(QueryOperator):
    params: tuple[OperatorParam, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Facet(QueryOperator):
    columns: tuple[str, ...]
    subquery: Expr | None


@dataclass(frozen=True, slots=True, eq=False)
class Fork(QueryOperator):
    branches: tuple[Expr, ...]  # each a Pipeline with source=Star (the forked input)
    names: tuple[str | None, ...]  # `(...) as name` / `name = (...)`


@dataclass(frozen=True, slots=True, eq=False)
class Partition(QueryOperator):
    params: tuple[OperatorParam, ...]
    by: Expr
    subquery: Expr  # `( ... )` uses the input as source; `{ ... }` is a full query


@dataclass(frozen=True, slots=True, eq=False)
class ScanStep(Node):
    name: str
    optional: bool
    condition: Expr
    assignments: tuple[NamedExpr, ...]
    output: str = "all"  # `output=all|last|none`


@dataclass(frozen=True, slots=True, eq=False)
class Scan(QueryOperator):
    params: tuple[OperatorParam, ...]
    declares: tuple[Param, ...]
    steps: tuple[ScanStep, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Reduce(QueryOperator):
    by: Expr
    params: tuple[OperatorParam, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Print(QueryOperator):
    items: tuple[NamedExpr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Range(QueryOperator):
    name: str
    start: Expr
    end: Expr
    step: Expr


@dataclass(frozen=True, slots=True, eq=False)
class DataTable(QueryOperator):
    columns: tuple[ColumnDecl, ...]
    values: tuple[Expr, ...]  # row-major


@dataclass(frozen=True, slots=True, eq=False)
class ExternalData(QueryOperator):
    columns: tuple[ColumnDecl, ...]
    uris: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class ProjectByNames(QueryOperator):
    """`project-by-names "a", "b*", dynamic([...]), column_names_of(T), var`."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class GenericOperator(QueryOperator):
    """An operator the language layer parses only as balanced text (graph operators,
    `execute-and-cache`, ...). `text` is its source; the binder treats its schema as unknown."""

    name: str
    text: str


# --- Berserk extensions ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class AnnotateItem(Node):
    path: Expr  # a NameRef or dotted Member path
    type: str  # scalar type, "[type]" array, or "{a:type,...}" object text


@dataclass(frozen=True, slots=True, eq=False)
class Annotate(QueryOperator):
    items: tuple[AnnotateItem, ...]


@dataclass(frozen=True, slots=True, eq=False)
class FieldStats(QueryOperator):
    columns: tuple[Expr, ...]
    params: tuple[OperatorParam, ...]  # `with limit=N depth=M field="*glob*"`


@dataclass(frozen=True, slots=True, eq=False)
class OtelLogStats(QueryOperator):
    columns: tuple[Expr, ...]
    params: tuple[OperatorParam, ...]  # severity=<col>, ...


@dataclass(frozen=True, slots=True, eq=False)
class TracePattern(Node):
    """A trace-find pattern: `{ predicate }` leaf (predicate None for `{}`) or a relation."""

    predicate: Expr | None
    relation: str | None  # ">>", ">", "<<", "<", "~", "::", "and", "or"; None for a leaf
    left: TracePattern | None
    right: TracePattern | None


@dataclass(frozen=True, slots=True, eq=False)
class TraceFind(QueryOperator):
    pattern: TracePattern
    params: tuple[OperatorParam, ...]  # within=5m
    output: tuple[QueryOperator, ...]  # attached `summarize` / `where` / `project`


# --- graph operators -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class GraphNodeTable(Node):
    """`with T on key` in make-graph: a node table and its key column."""

    table: Expr
    key: str


@dataclass(frozen=True, slots=True, eq=False)
class MakeGraph(QueryOperator):
    """`make-graph src --> dst [with T on key, ...] [with_node_id=name] [partitioned-by c (...)]`."""

    params: tuple[OperatorParam, ...]
    source: str
    target: str
    node_tables: tuple[GraphNodeTable, ...]
    partitioned_by: str | None
    partition_query: Expr | None  # operators applied to each partition's graph


@dataclass(frozen=True, slots=True, eq=False)
class GraphPatternElement(Node):
    """A node `(n)` (is_edge False) or an edge `-[e*1..5]->` of a graph pattern.

    `direction` is "->", "<-" or "--" for edges; hop bounds are None for a single edge.
    """

    name: str | None
    is_edge: bool
    direction: str
    min_hops: int | None
    max_hops: int | None


@dataclass(frozen=True, slots=True, eq=False)
class GraphMatch(QueryOperator):
    """`graph-match` / `graph-shortest-paths` (`shortest=True`)."""

    params: tuple[OperatorParam, ...]
    patterns: tuple[tuple[GraphPatternElement, ...], ...]
    where: Expr | None
    project: tuple[NamedExpr, ...]
    shortest: bool


@dataclass(frozen=True, slots=True, eq=False)
class GraphToTable(QueryOperator):
    """`graph-to-table nodes|edges [as name] [with_node_id=..|with_source_id=.. with_target_id=..]`."""

    what: str
    name: str | None
    params: tuple[OperatorParam, ...]


@dataclass(frozen=True, slots=True, eq=False)
class GraphMarkComponents(QueryOperator):
    params: tuple[OperatorParam, ...]  # kind=weak|strong, with_component_id=name


# --- pattern statements ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class PatternCase(Node):
    """`("USA").["New York"] = { query }` inside a pattern declaration."""

    args: tuple[Expr, ...]
    path: Expr | None
    body: Expr


@dataclass(frozen=True, slots=True, eq=False)
class DeclarePattern(Statement):
    """`declare pattern name [= (params)[path_param]] [{ cases }]`."""

    name: str
    params: tuple[Param, ...]
    path_params: tuple[Param, ...]
    cases: tuple[PatternCase, ...]
