"""KQL statements and tabular operators → one ClickHouse query (a chain of CTEs) per result.

Each operator becomes one CTE reading the previous one, so the SQL reads in the same order as
the KQL pipeline. The compiler tracks the schema (names and KQL types) of every step itself.
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths
from bzrk.engine.compile.aggregates import (
    AggregateContext,
    default_name,
    is_aggregate,
    nearest_rank_level,
)
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.expressions import ExprCompiler, Scope, literal
from bzrk.engine.compile.parsing import op_parse, op_parse_kv
from bzrk.engine.compile.prune import prune_columns
from bzrk.engine.compile.summarize_budget import BudgetPolicy, SummarizeBudget, series_filter
from bzrk.engine.compile.typed import T, Typed, cast_to, from_ticks, lit, ticks, to_json, to_string
from bzrk.engine.events import PRIMARY_RESULT, Column, Visualization
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import expression_name as kql_expression_name


@dataclass
class Relation:
    """A compiled tabular value: a CTE name and its schema."""

    name: str
    columns: list[tuple[str, str]]
    ordered: bool = False
    # Bag columns whose native path values ride along as hidden columns (bag_paths.py).
    bags: dict[str, bag_paths.BagPaths] = field(default_factory=dict)
    # Set when this relation is a stored table read as is (every row, no filter).
    stored: S.TableRef | None = None

    def source(self, alias: str | None = None) -> S.Source:
        return S.TableRef(None, self.name, alias)

    def scope(self, lets: dict[str, Any]) -> Scope:
        return Scope(columns={n: Typed(self._column(n), t) for n, t in self.columns}, lets=lets)

    def _column(self, name: str) -> S.Col:
        paths = self.bags.get(name)
        return S.Col(name) if paths is None else bag_paths.NativeBag(name, paths=paths)


@dataclass
class TableSource:
    """A bzrk table as the resolver names it: its ClickHouse location and KQL schema."""

    database: str
    table: str
    columns: list[tuple[str, str]]
    # JSON columns the compiler may read paths of natively: column -> {typed path: CH type}.
    bags: dict[str, dict[str, str]] = field(default_factory=dict)


class TableResolver:
    """Maps a KQL table name to a ClickHouse table; the storage package provides the real one."""

    def resolve(self, name: str) -> TableSource | None:
        return None


@dataclass
class CompiledTable:
    name: str
    sql: str
    columns: tuple[Column, ...]


@dataclass
class CompiledQuery:
    tables: list[CompiledTable] = field(default_factory=list)
    visualization: Visualization | None = None
    # Every summarize under a memory budget (only when the compiler was given a BudgetPolicy).
    budgets: list[SummarizeBudget] = field(default_factory=list)


@dataclass
class UserFunction:
    params: tuple[K.Param, ...]
    body: tuple[K.Statement, ...]


class QueryCompiler:
    """Compiles one parsed KQL query."""

    def __init__(
        self,
        resolver: TableResolver | None = None,
        probe: Callable[[str], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.resolver = resolver or TableResolver()
        # Runs a discovery query while compiling, for operators whose output schema depends
        # on the data (bag_unpack); None means such operators are rejected.
        self.probe = probe
        self.ctes: list[tuple[str, S.Query]] = []
        self._counter = itertools.count()
        self.visualization: Visualization | None = None
        self.lets: dict[str, Any] = {
            "$tabular": self._tabular_in_scope,
            "$inline": self._inline_scalar_function,
        }
        self._scope_stack: list[dict[str, Any]] = []
        # Per-compilation state: fork branches waiting to become result tables, and names
        # given with `as`. Instance attributes: a class-level list would leak between queries.
        self._pending_forks: list[CompiledTable] = []
        self._result_names: dict[str, str] = {}
        # Set while compiling an mv-apply subquery: operators then work per source row.
        self.partition: str | None = None
        # Window calls with a restart (or rank) → the column numbering their row groups.
        self.window_groups: dict[int, str] = {}
        # Constant bag paths the query names (root name -> paths), read natively by tables.
        self.bag_paths: dict[str, set[bag_paths.Path]] = {}
        # The summarize memory budget; set by the query service, None elsewhere.
        self.budget_policy: BudgetPolicy | None = None
        self.budgets: list[SummarizeBudget] = []

    # --- statements ------------------------------------------------------------------------

    def compile(self, query: K.Query) -> CompiledQuery:
        result = CompiledQuery()
        self.bag_paths = bag_paths.collect_paths(query)
        for statement in query.statements:
            if isinstance(statement, K.LetStatement):
                self.lets[statement.name] = self._let_value(statement.value)
            elif isinstance(statement, K.ExprStatement):
                relation = self.tabular(statement.expr)
                if getattr(relation, "graph", None) is not None:
                    raise unsupported(statement, "a query cannot end with a graph")
                result.tables.append(
                    self._finish(relation, self._table_name(relation, len(result.tables)))
                )
                result.tables.extend(self._pending_forks)
                self._pending_forks = []
            elif isinstance(statement, K.SetOption):
                # Options that expressions read (bin_auto's size and origin) stay visible.
                if statement.value is not None:
                    self.lets["$set:" + statement.name.lower()] = statement.value
            elif isinstance(statement, K.DeclareParameters):
                continue
            elif isinstance(statement, K.DeclarePattern):
                from bzrk.engine.compile.patterns import declare_pattern

                declare_pattern(self, statement)
            else:
                raise unsupported(statement, f"{type(statement).__name__} is not supported")
        result.visualization = self.visualization
        result.budgets = list(self.budgets)
        return result

    def _table_name(self, relation: Relation, index: int) -> str:
        named = self._result_names.get(relation.name)
        if named:
            return named
        return PRIMARY_RESULT if index == 0 else f"Table_{index}"

    def _finish(self, relation: Relation, name: str) -> CompiledTable:
        select = S.Select(
            columns=[(S.Col(n), n) for n, _ in relation.columns], from_=relation.source()
        )
        select.ctes = prune_columns(list(self.ctes), select)
        return CompiledTable(
            name,
            S.render(select),
            tuple(Column(n, t) for n, t in relation.columns),  # type: ignore[arg-type]
        )

    def _let_value(self, value: K.Expr) -> Any:
        if isinstance(value, K.Lambda):
            return UserFunction(value.params, value.body)
        if self._looks_tabular(value):
            return self.tabular(value)
        try:
            return ExprCompiler(Scope(lets=self.lets)).compile(value)
        except CompileError as scalar_error:
            try:
                return self.tabular(value)
            except CompileError:
                raise scalar_error from None

    def _looks_tabular(self, node: K.Expr) -> bool:
        if isinstance(node, K.Pipeline):
            return True
        if isinstance(node, K.Paren):
            return self._looks_tabular(node.expr)
        if isinstance(node, K.NameRef):
            value = self.lets.get(node.name)
            if isinstance(value, Relation):
                return True
            return value is None and self.resolver.resolve(node.name) is not None
        if isinstance(node, K.Call):
            if node.name in ("materialize", "view", "table"):
                return True
            fn = self.lets.get(node.name)
            if isinstance(fn, UserFunction):
                last = fn.body[-1] if fn.body else None
                return isinstance(last, K.ExprStatement) and self._looks_tabular(last.expr)
        return False

    def _new_cte(
        self, query: S.Query, columns: list[tuple[str, str]], ordered: bool = False
    ) -> Relation:
        name = f"_q{next(self._counter)}"
        self.ctes.append((name, query))
        return Relation(name, list(columns), ordered)

    def _select(
        self,
        relation: Relation,
        columns: Sequence[tuple[S.Expr, str]],
        out: list[tuple[str, str]],
        **kw: Any,
    ) -> Relation:
        hidden, bags = bag_paths.carry(relation.bags, columns, kw)
        query = S.Select(
            columns=[*((e, n) for e, n in columns), *hidden], from_=relation.source(), **kw
        )
        result = self._new_cte(query, out, ordered=relation.ordered and not kw.get("group_by"))
        result.bags = bags
        return result

    # --- tabular expressions ---------------------------------------------------------------

    def _tabular_in_scope(self, node: K.Expr) -> Relation:
        return self.tabular(node)

    def tabular(self, node: K.Node, input_rel: Relation | None = None) -> Relation:
        if isinstance(node, K.Pipeline):
            if isinstance(node.source, K.Star) and input_rel is not None:
                relation = input_rel
            else:
                relation = self.tabular(node.source, input_rel)
            for op in node.operators:
                relation = self.operator(op, relation)
            return relation
        if isinstance(node, K.Paren):
            return self.tabular(node.expr, input_rel)
        if isinstance(node, K.NameRef):
            value = self.lets.get(node.name)
            if isinstance(value, Relation):
                return value
            if isinstance(value, UserFunction) and not value.params:
                return self._call_user_tabular(node, value, [])
            source = self.resolver.resolve(node.name)
            if source is None:
                raise unsupported(node, f"unknown table '{node.name}'", code="UnknownTable")
            return self._table(source)
        from bzrk.engine.compile.patterns import is_pattern_ref, pattern_relation

        if is_pattern_ref(self, node):
            return pattern_relation(self, node)
        if isinstance(node, K.Call):
            return self._tabular_call(node, input_rel)
        if isinstance(node, K.QueryOperator):
            handler = _SOURCE_OPERATORS.get(type(node))
            if handler is None:
                raise unsupported(node, f"'{type(node).__name__}' cannot start a query here")
            return handler(self, node)
        raise unsupported(node, "expected a tabular expression")

    def _table(self, source: TableSource) -> Relation:
        columns = []
        for name, kql_type in source.columns:
            expr: S.Expr = S.Col(name)
            if kql_type == "dynamic":
                expr = T("toJSONString({0})", expr)
            columns.append((expr, name))
        hidden, bags = bag_paths.table_paths(source.bags, self.bag_paths)
        query = S.Select(
            columns=[*columns, *hidden], from_=S.TableRef(source.database, source.table)
        )
        relation = self._new_cte(query, source.columns)
        relation.bags = bags
        relation.stored = S.TableRef(source.database, source.table)
        return relation

    def _tabular_call(self, node: K.Call, input_rel: Relation | None) -> Relation:
        if node.name in ("materialize", "view") and node.args:
            return self.tabular(node.args[0], input_rel)
        fn = self.lets.get(node.name)
        if isinstance(fn, UserFunction):
            return self._call_user_tabular(node, fn, list(node.args), input_rel)
        raise unsupported(node, f"'{node.name}' is not a tabular function", code="UnknownFunction")

    def _bind_params(
        self, node: K.Node, fn: UserFunction, args: Sequence[K.Expr], input_rel: Relation | None
    ) -> dict[str, Any]:
        bound: dict[str, Any] = {}
        params = list(fn.params)
        positional = [a for a in args if not isinstance(a, K.NamedArg)]
        named = {a.name: a.value for a in args if isinstance(a, K.NamedArg)}
        if (
            params
            and params[0].type == "table"
            and input_rel is not None
            # The piped input fills the table parameter unless every parameter got an argument.
            and len(positional) < len(params)
        ):
            bound[params[0].name] = input_rel
            params = params[1:]
        for param in params:
            arg: K.Expr | None
            if param.name in named:
                arg = named[param.name]
            else:
                # Positional arguments fill the parameters not given by name, in order.
                slot = [p.name for p in params if p.name not in named].index(param.name)
                arg = positional[slot] if slot < len(positional) else param.default
            if arg is None:
                raise unsupported(
                    node, f"missing argument '{param.name}'", code="WrongArgumentCount"
                )
            if param.type == "table":
                bound[param.name] = self.tabular(arg)
            else:
                value = ExprCompiler(Scope(lets=self.lets)).compile(arg)
                if param.type and param.type not in ("dynamic", "") and value.type != param.type:
                    with contextlib.suppress(KeyError):
                        value = cast_to(value, normalize_kql_type(param.type))
                bound[param.name] = value
        return bound

    def _call_user_tabular(
        self,
        node: K.Node,
        fn: UserFunction,
        args: Sequence[K.Expr],
        input_rel: Relation | None = None,
    ) -> Relation:
        saved = self.lets
        self.lets = {**saved, **self._bind_params(node, fn, args, input_rel)}
        try:
            result: Relation | None = None
            for statement in fn.body:
                if isinstance(statement, K.LetStatement):
                    self.lets[statement.name] = self._let_value(statement.value)
                elif isinstance(statement, K.ExprStatement):
                    result = self.tabular(statement.expr)
            if result is None:
                raise unsupported(node, "the function has no tabular result")
            return result
        finally:
            self.lets = saved

    def _inline_scalar_function(self, c: ExprCompiler, node: K.Call, fn: UserFunction) -> Typed:
        saved = self.lets
        bound: dict[str, Any] = {}
        positional = [a for a in node.args if not isinstance(a, K.NamedArg)]
        named = {a.name: a.value for a in node.args if isinstance(a, K.NamedArg)}
        params = list(fn.params)
        for param in fn.params:
            arg: K.Expr | None
            if param.name in named:
                arg = named[param.name]
            else:
                # Positional arguments fill the parameters not given by name, in order.
                slot = [p.name for p in params if p.name not in named].index(param.name)
                arg = positional[slot] if slot < len(positional) else param.default
            if arg is None:
                raise unsupported(
                    node, f"missing argument '{param.name}'", code="WrongArgumentCount"
                )
            bound[param.name] = c.compile(arg)
        self.lets = {**saved, **bound}
        try:
            result: Typed | None = None
            for statement in fn.body:
                if isinstance(statement, K.LetStatement):
                    self.lets[statement.name] = self._let_value(statement.value)
                elif isinstance(statement, K.ExprStatement):
                    if self._looks_tabular(statement.expr):
                        raise unsupported(node, "a tabular function used as a scalar")
                    scope = Scope(
                        columns=c.scope.columns, lets=self.lets, row_window=c.scope.row_window
                    )
                    result = ExprCompiler(scope, aggregates=c.aggregates).compile(statement.expr)
            if result is None:
                raise unsupported(node, "the function has no result")
            return result
        finally:
            self.lets = saved

    # --- operators -------------------------------------------------------------------------

    def operator(self, op: K.QueryOperator, relation: Relation) -> Relation:
        handler = _OPERATORS.get(type(op))
        if handler is None:
            name = op.name if isinstance(op, K.GenericOperator) else type(op).__name__
            raise unsupported(op, f"operator '{name}' is not supported")
        return handler(self, op, relation)

    def expr(self, relation: Relation | None, node: K.Expr, *, window: bool = False) -> Typed:
        scope = relation.scope(self.lets) if relation is not None else Scope(lets=self.lets)
        if window:
            scope.row_window = self._row_window
        return ExprCompiler(scope).compile(node)

    def _row_window(self, name: str, args: list[Typed], node: K.Call) -> Typed:
        frame = (
            " OVER ("
            # Inside mv-apply/partition, prev() and next() stay within the row's group.
            + (f"PARTITION BY {S.quote_identifier(self.partition)} " if self.partition else "")
            + "ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
        )
        if name in ("prev", "next"):
            value = args[0]
            offset = cast_to(args[1], "long").sql if len(args) > 1 else lit(1)
            fname = "lagInFrame" if name == "prev" else "leadInFrame"
            if len(args) > 2:
                default = cast_to(args[2], value.type).sql
            elif value.type == "string":
                default = lit("")  # there is no null string
            else:
                default = S.Cast(lit(None), clickhouse_type(value.type))
            return Typed(
                T(
                    fname
                    + "(CAST({0}, "
                    + S.quote_string(clickhouse_type(value.type))
                    + "), toUInt64({1}), {2})"
                    + frame,
                    value.sql,
                    offset,
                    default,
                ),
                value.type,
            )
        group = self.window_groups.get(id(node))
        if name == "row_window_session" and group is not None:
            from bzrk.engine.compile.window_session import session_start

            return session_start(args, group)
        if name in ("row_rank_dense", "row_rank_min") and group is None:
            raise unsupported(node, f"'{name}' is not supported here")
        if name in ("row_rank_dense", "row_rank_min") and group is not None:
            grp = S.quote_identifier(group)
            # With a restart condition ranks count inside its segments (see _window_groups).
            segment = f"(PARTITION BY {S.quote_identifier(group + 'r')})" if len(args) > 1 else "()"
            if name == "row_rank_dense":
                return Typed(T(f"toInt64({grp} - min({grp}) OVER {segment} + 1)"), "long")
            return Typed(
                T(
                    "toInt64(min(`__rn`) OVER (PARTITION BY "
                    + grp
                    + f") - min(`__rn`) OVER {segment} + 1)"
                ),
                "long",
            )
        partition = f"PARTITION BY {S.quote_identifier(group)} " if group else ""
        if name == "row_number":
            start = cast_to(args[0], "long").sql if args else lit(1)
            return Typed(
                T("toInt64(row_number() OVER (" + partition + "ORDER BY `__rn`) - 1 + {0})", start),
                "long",
            )
        if name == "row_cumsum":
            value = args[0]
            if group is not None:
                return Typed(
                    T(
                        "sum({0}) OVER ("
                        + partition
                        + "ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
                        value.sql,
                    ),
                    value.type,
                )
            if len(args) > 1 and not (
                isinstance(args[1].sql, S.Lit) and args[1].sql.value is False
            ):
                raise unsupported(node, "row_cumsum with a restart condition is not supported")
            return Typed(
                T(
                    "sum({0}) OVER (ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
                    value.sql,
                ),
                value.type,
            )
        raise unsupported(node, f"'{name}' is not supported")


# --- operator implementations --------------------------------------------------------------


def _auto_name(node: K.Expr, index: int, used: set[str], fallback: str) -> str:
    name = _expr_name(node)
    if name is None:
        name = fallback
    return name


def _expr_name(node: K.Expr) -> str | None:
    if isinstance(node, K.NameRef):
        return node.name
    if isinstance(node, K.Member):
        inner = _expr_name(node.target)
        return f"{inner}_{node.name}" if inner else None
    if isinstance(node, K.Index):
        inner = _expr_name(node.target)
        if inner and isinstance(node.index, K.Literal) and isinstance(node.index.value, str):
            return f"{inner}_{node.index.value}"
        return None
    if isinstance(node, K.Paren):
        return _expr_name(node.expr)
    return None


def _unique(name: str, used: set[str]) -> str:
    if name not in used:
        return name
    for i in itertools.count(1):
        candidate = f"{name}{i}"
        if candidate not in used:
            return candidate
    raise AssertionError


def _projection(
    qc: QueryCompiler, relation: Relation, items: Sequence[K.NamedExpr], *, extend: bool
) -> Relation:
    scope = relation.scope(qc.lets)
    scope.row_window = qc._row_window
    window = any(_uses_window(item.expr) for item in items)
    if window:
        relation = _numbered(qc, relation)
        relation = _window_groups(qc, relation, items)
        scope = relation.scope(qc.lets)
        scope.row_window = qc._row_window
    input_names = {n for n, _ in relation.columns}
    scope.input_columns = {n: scope.columns[n] for n, _ in relation.columns}
    order: list[str] = [n for n, _ in relation.columns] if extend else []
    values: dict[str, Typed] = {n: scope.columns[n] for n, _ in relation.columns} if extend else {}
    column_counter = itertools.count(1)
    for item in items:
        compiler = ExprCompiler(scope)
        multi = _multi_column(compiler, item)
        if multi is not None:
            for name, value in multi:
                if name not in order:
                    order.append(name)
                values[name] = value
                scope.columns[name] = value
            continue
        if len(item.names) > 1:
            value = compiler.compile(item.expr)
            for i, name in enumerate(item.names):
                element = Typed(
                    T(
                        "nullIf(JSONExtractRaw({0}, toInt64(" + str(i + 1) + ")), '')",
                        to_json(value),
                    ),
                    "dynamic",
                )
                if name not in order:
                    order.append(name)
                values[name] = element
                scope.columns[name] = element
            continue
        value = compiler.compile(item.expr)
        if item.names:
            name = item.names[0]
        else:
            name = kql_expression_name(item.expr) or _expr_name(item.expr) or ""
            if not name:
                name = f"Column{next(column_counter)}"
                while name in values:
                    name = f"Column{next(column_counter)}"
        if name not in order:
            order.append(name)
        values[name] = value
        # project items see the input row (`project v = f(v), w = g(v)` reads the input v);
        # extend items see the items before them.
        if extend or name not in input_names:
            scope.columns[name] = value
    if window:
        order = [n for n in order if n != "__rn" and not n.startswith("__grp")]
        # project keeps the row number too, so that its output stays in serialized order.
        order += ["__rn"]
        values.setdefault("__rn", Typed(S.Col("__rn"), "long"))
    part = _partition(qc, relation)
    if part and part not in order:
        order.append(part)
        values[part] = Typed(S.Col(part), "long")
    out = [(n, values[n].type) for n in order]
    columns = [(values[n].sql, n) for n in order]
    result = qc._select(relation, columns, out)
    result.ordered = relation.ordered or window
    if window and not extend:
        result = _strip_rn(qc, result)
        result.ordered = True
    return result


_WINDOW_NAMES = (
    "prev",
    "next",
    "row_number",
    "row_cumsum",
    "row_rank_dense",
    "row_rank_min",
    "row_window_session",
)


def _uses_window(node: K.Node) -> bool:
    return any(isinstance(n, K.Call) and n.name in _WINDOW_NAMES for n in node.walk())


def _window_groups(qc: QueryCompiler, relation: Relation, items: Sequence[K.NamedExpr]) -> Relation:
    """Number the row groups of restarting window calls in two CTEs (windows cannot nest).

    `row_number(1, restart)` and `row_cumsum(x, restart)` restart where the condition holds;
    `row_rank_dense(x)` / `row_rank_min(x)` start a new group where x changes.
    """
    calls = []
    for item in items:
        for node in item.expr.walk():
            if not isinstance(node, K.Call):
                continue
            restart = node.name in ("row_number", "row_cumsum") and len(node.args) > 1
            if restart and isinstance(node.args[1], K.Literal) and node.args[1].value is False:
                restart = False
            if restart or node.name in ("row_rank_dense", "row_rank_min", "row_window_session"):
                calls.append(node)
    if not calls:
        return relation
    scope = relation.scope(qc.lets)
    scope.row_window = qc._row_window
    conditions: list[tuple[S.Expr, str]] = []
    for call in calls:
        k = next(qc._counter)
        compiler = ExprCompiler(scope)
        if call.name in ("row_number", "row_cumsum"):
            cond = compiler.as_bool(compiler.compile(call.args[1]))
        elif call.name == "row_window_session":
            from bzrk.engine.compile.window_session import group_start_condition

            cond = group_start_condition(
                compiler, call, lambda v, c=call: qc._row_window("prev", [v], c)
            )
        else:
            value = compiler.compile(call.args[0])
            previous = qc._row_window("prev", [value], call)
            cond = T("ifNull({0} != {1}, false)", value.sql, previous.sql)
            if len(call.args) > 1:
                # A rank restarts where its condition holds: `__grp{k}r` numbers those segments.
                restart = T("ifNull({0}, false)", compiler.as_bool(compiler.compile(call.args[1])))
                conditions.append((T("toInt64({0})", restart), f"__rc{k}r"))
                cond = T("({0} OR {1})", cond, restart)
        conditions.append((T("toInt64(ifNull({0}, false))", cond), f"__rc{k}"))
        qc.window_groups[id(call)] = f"__grp{k}"
    base = [(S.Col(n), n) for n, _ in relation.columns]
    flagged = qc._select(
        relation, base + conditions, [*relation.columns, *[(n, "long") for _, n in conditions]]
    )
    grouped_cols = [(S.Col(n), n) for n, _ in relation.columns] + [
        (
            T(
                "sum("
                + S.quote_identifier(rc)
                + ") OVER (ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
            ),
            "__grp" + rc[4:],
        )
        for _, rc in conditions
    ]
    return qc._select(
        flagged,
        grouped_cols,
        [*relation.columns, *[("__grp" + rc[4:], "long") for _, rc in conditions]],
    )


def _numbered(qc: QueryCompiler, relation: Relation) -> Relation:
    if any(n == "__rn" for n, _ in relation.columns):
        return relation
    columns = [(S.Col(n), n) for n, _ in relation.columns] + [(T("rowNumberInAllBlocks()"), "__rn")]
    return qc._select(relation, columns, [*relation.columns, ("__rn", "long")])


def _strip_rn(qc: QueryCompiler, relation: Relation) -> Relation:
    if not any(n == "__rn" for n, _ in relation.columns):
        return relation
    keep = [(n, t) for n, t in relation.columns if n != "__rn"]
    return qc._select(
        relation, [(S.Col(n), n) for n, _ in keep], keep, order_by=[(S.Col("__rn"), False, False)]
    )


def op_extend(qc: QueryCompiler, op: K.Extend, relation: Relation) -> Relation:
    result = _projection(qc, relation, op.items, extend=True)
    return _strip_rn(qc, result)


def op_project(qc: QueryCompiler, op: K.Project, relation: Relation) -> Relation:
    result = _projection(qc, relation, op.items, extend=False)
    return result


def op_where(qc: QueryCompiler, op: K.Where, relation: Relation) -> Relation:
    if _uses_window(op.predicate):
        # prev()/next() need the row order: compute the predicate as a column first.
        flag = f"__where{next(qc._counter)}"
        item = K.NamedExpr(op.span, (flag,), op.predicate)
        marked = op_extend(qc, K.Extend(op.span, (item,)), relation)
        keep = [(n, t) for n, t in marked.columns if n != flag]
        flag_value = ExprCompiler(marked.scope(qc.lets)).as_bool(
            Typed(S.Col(flag), dict(marked.columns)[flag])
        )
        return qc._select(
            marked,
            [(S.Col(n), n) for n, _ in keep],
            keep,
            where=T("ifNull({0}, false)", flag_value),
        )
    cond = qc.expr(relation, op.predicate)
    compiler = ExprCompiler(relation.scope(qc.lets))
    return qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        # A NULL condition drops the row in WHERE already; wrapping it in ifNull() would hide
        # the predicate from ClickHouse's primary-key and skip-index analysis.
        where=compiler.as_bool(cond),
    )


def _match(patterns: Sequence[str], columns: list[tuple[str, str]], node: K.Node) -> list[str]:
    names = [n for n, _ in columns]
    out: list[str] = []
    for pattern in patterns:
        hits = (
            [n for n in names if fnmatch.fnmatchcase(n, pattern)]
            if "*" in pattern
            else ([pattern] if pattern in names else [])
        )
        if not hits and "*" not in pattern:
            raise unsupported(node, f"unknown column '{pattern}'", code="UnknownName")
        out.extend(h for h in hits if h not in out)
    return out


def op_project_away(qc: QueryCompiler, op: K.ProjectAway, relation: Relation) -> Relation:
    drop = set(_match(op.patterns, relation.columns, op))
    keep = [(n, t) for n, t in relation.columns if n not in drop]
    return qc._select(relation, [(S.Col(n), n) for n, _ in keep], keep)


def op_project_keep(qc: QueryCompiler, op: K.ProjectKeep, relation: Relation) -> Relation:
    wanted = set(_match(op.patterns, relation.columns, op))
    keep = [(n, t) for n, t in relation.columns if n in wanted]
    return qc._select(relation, [(S.Col(n), n) for n, _ in keep], keep)


def op_project_rename(qc: QueryCompiler, op: K.ProjectRename, relation: Relation) -> Relation:
    mapping = {old: new for new, old in op.renames}
    names = [n for n, _ in relation.columns]
    for old in mapping:
        if old not in names:
            raise unsupported(op, f"unknown column '{old}'", code="UnknownName")
    out = [(mapping.get(n, n), t) for n, t in relation.columns]
    return qc._select(relation, [(S.Col(n), mapping.get(n, n)) for n, _ in relation.columns], out)


def op_project_reorder(qc: QueryCompiler, op: K.ProjectReorder, relation: Relation) -> Relation:
    first: list[str] = []
    for pattern, direction in op.patterns:
        hits = _match([pattern], relation.columns, op)
        if direction in ("asc", "granny-asc"):
            hits = sorted(hits)
        elif direction in ("desc", "granny-desc"):
            hits = sorted(hits, reverse=True)
        first.extend(h for h in hits if h not in first)
    types = dict(relation.columns)
    order = first + [n for n, _ in relation.columns if n not in first]
    return qc._select(relation, [(S.Col(n), n) for n in order], [(n, types[n]) for n in order])


def _order_items(
    qc: QueryCompiler, relation: Relation, keys: Sequence[K.OrderKey]
) -> list[tuple[S.Expr, bool, bool]]:
    items = []
    for key in keys:
        value = qc.expr(relation, key.expr)
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        expr = value.sql
        if value.type == "dynamic":
            expr = to_string(value)
        items.append((expr, key.descending, nulls_first))
    return items


def op_sort(qc: QueryCompiler, op: K.Sort, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    order = _order_items(qc, relation, op.keys)
    result = qc._select(
        relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, order_by=order
    )
    result.ordered = True
    return result


def _count_value(qc: QueryCompiler, node: K.Expr) -> S.Expr:
    value = qc.expr(None, node)
    return T("toUInt64(greatest({0}, 0))", cast_to(value, "long").sql)


def _partition(qc: QueryCompiler, relation: Relation) -> str | None:
    """The row-id column of an enclosing mv-apply, when this relation still carries it."""
    part = qc.partition
    return part if part and any(n == part for n, _ in relation.columns) else None


def _limit_kwargs(qc: QueryCompiler, relation: Relation, count: S.Expr) -> dict[str, Any]:
    part = _partition(qc, relation)
    if part:
        return {"limit_by": (count, [S.Col(part)])}
    return {"limit": count}


def op_take(qc: QueryCompiler, op: K.Take, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    return qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        **_limit_kwargs(qc, relation, _count_value(qc, op.count)),
    )


def op_top(qc: QueryCompiler, op: K.Top, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    order = _order_items(qc, relation, [op.key])
    result = qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=order,
        **_limit_kwargs(qc, relation, _count_value(qc, op.count)),
    )
    result.ordered = True
    return result


def op_count(qc: QueryCompiler, op: K.Count, relation: Relation) -> Relation:
    name = op.name or "Count"
    part = _partition(qc, relation)
    if part:
        return qc._select(
            relation,
            [(T("toInt64(count())"), name), (S.Col(part), part)],
            [(name, "long"), (part, "long")],
            group_by=[S.Col(part)],
        )
    if relation.stored is not None:
        # A whole table's count reads the table itself: ClickHouse then answers from part
        # metadata (the request window is a partition-key range), not by reading a column.
        query = S.Select(columns=[(T("toInt64(count())"), name)], from_=relation.stored)
        return qc._new_cte(query, [(name, "long")])
    return qc._select(relation, [(T("toInt64(count())"), name)], [(name, "long")], group_by=[])


def op_distinct(qc: QueryCompiler, op: K.Distinct, relation: Relation) -> Relation:
    if len(op.items) == 1 and isinstance(op.items[0], K.Star):
        return qc._select(
            relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, distinct=True
        )
    scope = relation.scope(qc.lets)
    columns, out = [], []
    for i, item in enumerate(op.items):
        value = ExprCompiler(scope).compile(item)
        name = _expr_name(item) or f"Column{i + 1}"
        columns.append((value.sql, name))
        out.append((name, value.type))
    return qc._select(relation, columns, out, distinct=True)


def op_summarize(qc: QueryCompiler, op: K.Summarize, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    row_scope = relation.scope(qc.lets)
    used: set[str] = set()
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    group_by: list[S.Expr] = []
    column_counter = itertools.count(1)
    keys: list[tuple[str, S.Expr, str]] = []
    part = _partition(qc, relation)
    if part:
        used.add(part)
        group_by.append(S.Col(part))
        columns.append((S.Col(part), part))
        out.append((part, "long"))
    for item in op.by:
        value = ExprCompiler(row_scope).compile(item.expr)
        if item.names:
            name = item.names[0]
        else:
            name = (
                kql_expression_name(item.expr)
                or _by_name(item.expr)
                or f"Column{next(column_counter)}"
            )
        name = _unique(name, used)
        used.add(name)
        group_by.append(value.sql)
        columns.append((value.sql, name))
        out.append((name, value.type))
        keys.append((name, value.sql, value.type))
    agg_ctx = AggregateContext(lambda: ExprCompiler(row_scope))
    for item in op.aggregates:
        expr = item.expr
        if isinstance(expr, K.Call) and expr.name in ("arg_max", "arg_min"):
            _arg_extreme(qc, expr, item, row_scope, relation, columns, out, used)
            continue
        if isinstance(expr, K.Call) and expr.name in _PERCENTILES:
            _percentiles(qc, expr, item, row_scope, columns, out, used)
            continue
        value = ExprCompiler(row_scope, aggregates=agg_ctx).compile(expr)
        if item.names:
            name = item.names[0]
        elif isinstance(expr, K.Call) and is_aggregate(expr.name):
            name = kql_expression_name(expr, aggregate=True) or default_name(expr)
            if expr.name == "percentile" and len(expr.args) >= 2:
                # percentile(x, 55) is named like percentiles(x, 55): percentile_x_55.
                with contextlib.suppress(CompileError):
                    name = f"{name}_{_percent_label(_const(expr.args[1]))}"
            if expr.name.startswith("covariance") and len(expr.args) >= 2:
                # covariance(x, y) is named after both columns.
                name = (
                    f"{expr.name}_{_expr_name(expr.args[0]) or ''}_{_expr_name(expr.args[1]) or ''}"
                )
        else:
            name = f"Column{next(column_counter)}"
        name = _unique(name, used)
        used.add(name)
        columns.append((value.sql, name))
        out.append((name, value.type))
    keep_series = series_filter(qc, op, relation, keys)
    return qc._select(relation, columns, out, group_by=group_by, where=keep_series)


def _by_name(node: K.Expr) -> str | None:
    name = _expr_name(node)
    if name:
        return name
    if (
        isinstance(node, K.Call)
        and node.name
        in (
            "bin",
            "floor",
            "bin_at",
            "bin_auto",
            "startofday",
            "startofweek",
            "startofmonth",
            "startofyear",
            "round",
        )
        and node.args
    ):
        return _expr_name(node.args[0])
    return None


def _arg_extreme(
    qc: QueryCompiler,
    call: K.Call,
    item: K.NamedExpr,
    scope: Scope,
    relation: Relation,
    columns: list[tuple[S.Expr, str]],
    out: list[tuple[str, str]],
    used: set[str],
) -> None:
    if not call.args:
        raise unsupported(call, f"{call.name} needs arguments", code="WrongArgumentCount")
    key = ExprCompiler(scope).compile(call.args[0])
    fname = "argMax" if call.name == "arg_max" else "argMin"
    key_name = (
        item.names[0]
        if item.names
        else (_expr_name(call.args[0]) or ("max_" if call.name == "arg_max" else "min_"))
    )
    key_name = _unique(key_name, used)
    used.add(key_name)
    key_sql = key.sql if key.type != "dynamic" else to_string(key)
    # Rows whose key is null never win (KQL ignores them).
    columns.append((T(("max" if fname == "argMax" else "min") + "({0})", key.sql), key_name))
    out.append((key_name, key.type))
    extra: list[tuple[str, Typed]] = []
    for arg in call.args[1:]:
        if isinstance(arg, K.Star):
            for n, _ in relation.columns:
                if n == _expr_name(call.args[0]) or n in used:
                    continue
                extra.append((n, scope.columns[n]))
        else:
            name = arg.name if isinstance(arg, K.NamedArg) else (_expr_name(arg) or "")
            value = ExprCompiler(scope).compile(arg.value if isinstance(arg, K.NamedArg) else arg)
            extra.append((name or f"{call.name}_arg", value))
    for name, value in extra:
        name = _unique(name, used)
        used.add(name)
        # Rows with a null key never win; when every key is null Kusto still returns a row.
        columns.append(
            (
                T(
                    "if(countIf(isNotNull({1})) > 0, "
                    + fname
                    + "If({0}, {1}, isNotNull({1})), any({0}))",
                    value.sql,
                    key_sql,
                ),
                name,
            )
        )
        out.append((name, value.type))


def _percentiles(
    qc: QueryCompiler,
    call: K.Call,
    item: K.NamedExpr,
    scope: Scope,
    columns: list[tuple[S.Expr, str]],
    out: list[tuple[str, str]],
    used: set[str],
) -> None:
    value = ExprCompiler(scope).compile(call.args[0])
    column = _expr_name(call.args[0]) or ""
    weighted = call.name.startswith("percentilesw")
    points = _percentile_points(call.args[2:] if weighted else call.args[1:], scope)

    def quantile(pct: Any) -> S.Expr:
        # A percentage from a parameter or let is a constant expression, folded by ClickHouse.
        level = (
            T("greatest(0, toFloat64({0}) / 100.0 - 1e-12)", pct.sql)
            if isinstance(pct, Typed)
            else S.Lit(nearest_rank_level(float(pct)))
        )
        if not weighted:
            return S.Func("quantileExactLow", [value.sql], params=[level])
        weight = cast_to(ExprCompiler(scope).compile(call.args[1]), "long").sql
        # A row's weight counts it that many times (null or negative weights: not at all).
        return S.Func(
            "quantileExactWeighted",
            [value.sql, T("toUInt64(greatest(ifNull({0}, 0), 0))", weight)],
            params=[level],
        )

    if call.name.endswith("_array"):
        sqls = [T("toJSONString({0})", quantile(p)) for p in points]
        name = item.names[0] if item.names else f"percentiles_{column}"
        name = _unique(name, used)
        used.add(name)
        columns.append(
            (T("concat('[', arrayStringConcat({0}, ','), ']')", S.Func("array", sqls)), name)
        )
        out.append((name, "dynamic"))
        return
    # Constant points share one aggregate state (ClickHouse computes the repeated call once)
    # instead of one exact state per point.
    shared: S.Expr | None = None
    if not weighted and points and not any(isinstance(p, Typed) for p in points):
        levels = [S.Lit(nearest_rank_level(float(p))) for p in points]
        shared = S.Func("quantilesExactLow", [value.sql], params=levels)
    for i, pct in enumerate(points):
        if item.names and i < len(item.names):
            name = item.names[i]
        else:
            # A computed percentage has no digits to show.
            label = "p" if isinstance(pct, Typed) else _percent_label(pct)
            name = f"percentile_{column}_{label}"
        name = _unique(name, used)
        used.add(name)
        if shared is None:
            columns.append((quantile(pct), name))
        else:
            # An empty group gives null, as quantileExactLow does (quantiles gives zeros).
            element = T("if(count({0}) = 0, NULL, {1}[" + str(i + 1) + "])", value.sql, shared)
            columns.append((element, name))
        out.append(
            (
                name,
                value.type
                if value.type in ("int", "long", "real", "timespan", "datetime")
                else "real",
            )
        )


def _percent_label(pct: Any) -> str:
    """`50` → `50`, `50.0` → `50`, `99.9` → `99_9` (as Kusto names percentile columns)."""
    label = str(pct).replace(".", "_")
    return label[:-2] if label.endswith("_0") else label


_PERCENTILES = ("percentiles", "percentiles_array", "percentilesw", "percentilesw_array")


def _percentile_points(nodes: list[K.Expr], scope: Scope) -> list[Any]:
    """Percentages: literals (one by one or one dynamic array) or constant expressions."""
    from bzrk.engine.compile.expressions import _reads_columns

    if len(nodes) == 1 and isinstance(nodes[0], K.Literal) and isinstance(nodes[0].value, list):
        return list(nodes[0].value)
    points: list[Any] = []
    for node in nodes:
        try:
            points.append(_const(node))
            continue
        except CompileError:
            pass
        value = ExprCompiler(scope).compile(node)
        if _reads_columns(value.sql):
            raise unsupported(node, "percentiles need constant percentages")
        points.append(value)
    return points


def _const(node: K.Expr, lets: dict[str, Any] | None = None) -> Any:
    if isinstance(node, K.Literal):
        return node.value
    if isinstance(node, K.Unary) and isinstance(node.operand, K.Literal):
        return -node.operand.value
    if isinstance(node, K.NameRef) and lets is not None and isinstance(lets.get(node.name), Typed):
        # A constant bound to a name (a function parameter, a let): its literal inside casts.
        sql: S.Expr = lets[node.name].sql
        while isinstance(sql, S.Cast | S.Template) and not isinstance(sql, S.Lit):
            inner = [sql.operand] if isinstance(sql, S.Cast) else list(sql.args)
            if len(inner) != 1:
                break
            sql = inner[0]
        if isinstance(sql, S.Lit) and isinstance(sql.value, int | float):
            return sql.value
    raise unsupported(node, "expected a constant")


def op_mv_expand(
    qc: QueryCompiler, op: K.MvExpand, relation: Relation, *, keep_null: bool = True
) -> Relation:
    relation = _strip_rn(qc, relation)
    scope = relation.scope(qc.lets)
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    bag_array = isinstance(kind_node, K.NameRef) and kind_node.name == "array"
    if "bagexpansion" in params:
        bag_array = (
            isinstance(params["bagexpansion"], K.NameRef) and params["bagexpansion"].name == "array"
        )
    index_name = None
    if "with_itemindex" in params and isinstance(params["with_itemindex"], K.NameRef):
        index_name = params["with_itemindex"].name
    names: list[str] = []
    arrays: list[S.Expr] = []
    target_types: list[str] = []
    for i, item in enumerate(op.items):
        value = ExprCompiler(scope).compile(item.item.expr)
        name = (
            item.item.names[0]
            if item.item.names
            else (_expr_name(item.item.expr) or f"Column{i + 1}")
        )
        json_value = value.sql if value.type == "dynamic" else to_json(value)
        bag = (
            "arrayMap(kv -> concat('[', toJSONString(kv.1), ',', kv.2, ']'), JSONExtractKeysAndValuesRaw({0}))"
            if bag_array
            else "arrayMap(kv -> concat('{{', toJSONString(kv.1), ':', kv.2, '}}'), JSONExtractKeysAndValuesRaw({0}))"
        )
        arrays.append(
            T(
                "multiIf(isNull({0}), "
                + ("['null']" if keep_null else "emptyArrayString()")
                + ", JSONType({0}) = 'Array', JSONExtractArrayRaw({0}), JSONType({0}) = 'Object', "
                + bag
                + ", [{0}])",
                json_value,
            )
        )
        names.append(name)
        target_types.append(normalize_kql_type(item.to_type) if item.to_type else "dynamic")
    limit = _count_value(qc, op.limit) if op.limit is not None else None
    existing = [n for n, _ in relation.columns]
    aliases = [f"__mv{i}" for i in range(len(names))]
    select_cols: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    for n, t in relation.columns:
        if n in names:
            k = names.index(n)
            conv = cast_to(
                Typed(T("nullIf({0}, '')", S.Col(aliases[k])), "dynamic"), target_types[k]
            )
            select_cols.append((conv.sql, n))
            out.append((n, target_types[k]))
        else:
            select_cols.append((S.Col(n), n))
            out.append((n, t))
    for k, n in enumerate(names):
        if n not in existing:
            conv = cast_to(
                Typed(T("nullIf({0}, '')", S.Col(aliases[k])), "dynamic"), target_types[k]
            )
            select_cols.append((conv.sql, n))
            out.append((n, target_types[k]))
    array_join = [(a, alias) for a, alias in zip(arrays, aliases, strict=True)]
    if index_name:
        array_join.append(
            (
                T("arrayEnumerate({0})", arrays[0])
                if len(arrays) == 1
                else T(
                    "range(1, greatest("
                    + ", ".join(f"length({{{i}}})" for i in range(len(arrays)))
                    + ") + 1)",
                    *arrays,
                ),
                "__mvi",
            )
        )
        select_cols.append((T("toInt64({0} - 1)", S.Col("__mvi")), index_name))
        out.append((index_name, "long"))
    query = S.Select(columns=select_cols, from_=relation.source(), array_join=array_join)
    result = qc._new_cte(query, out)
    if limit is not None:
        result = qc._select(result, [(S.Col(n), n) for n, _ in out], out, limit=limit)
    return result


def op_union(qc: QueryCompiler, op: K.Union, relation: Relation | None) -> Relation:
    labelled: list[tuple[Relation, str]] = []
    if relation is not None:
        labelled.append((relation, qc._result_names.get(relation.name, "union_arg0")))
    from bzrk.engine.compile.union_sources import union_inputs

    for index, (rel, table) in enumerate(union_inputs(qc, op)):
        label = (
            qc._result_names.get(rel.name)
            or _expr_name(table)
            or f"union_arg{index + len(labelled)}"
        )
        labelled.append((rel, label))
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    inner = isinstance(kind_node, K.NameRef) and kind_node.name == "inner"
    withsource = params.get("withsource")
    source_col = withsource.name if isinstance(withsource, K.NameRef) else None
    # A name whose type differs between inputs becomes one column per type: x_long, x_int.
    seen_types: dict[str, list[str]] = {}
    for rel, _ in labelled:
        for n, t in rel.columns:
            seen_types.setdefault(n, [])
            if t not in seen_types[n]:
                seen_types[n].append(t)
    out_names: list[tuple[str, str, str]] = []  # (output name, source name, type)
    used: set[str] = {source_col} if source_col else set()
    # Names that are real columns win over the name a split column is given (x_long1).
    reserved = {n for n, types in seen_types.items() if len(types) == 1}
    for rel, _ in labelled:
        for n, t in rel.columns:
            split = len(seen_types[n]) > 1
            if any(src == n and typ == t for _, src, typ in out_names) or (
                not split and any(src == n for _, src, _t in out_names)
            ):
                continue
            name = _unique(f"{n}_{t}", used | reserved) if split else _unique(n, used)
            used.add(name)
            out_names.append((name, n, t))
    if inner:
        out_names = [o for o in out_names if all(o[1] in dict(r.columns) for r, _ in labelled)]
    queries: list[S.Query] = []
    for rel, label in labelled:
        have = dict(rel.columns)
        cols: list[tuple[S.Expr, str]] = []
        if source_col:
            cols.append((lit(label), source_col))
        for name, src, typ in out_names:
            if have.get(src) == typ:
                cols.append((S.Col(src), name))
            else:
                cols.append(
                    (S.Cast(lit(None), clickhouse_type(typ)) if typ != "string" else lit(""), name)
                )
        queries.append(S.Select(columns=cols, from_=rel.source()))
    out = ([(source_col, "string")] if source_col else []) + [(n, t) for n, _, t in out_names]
    return qc._new_cte(S.UnionAll(queries), out)


_JOIN_KINDS = {
    "innerunique": "INNER",
    "inner": "INNER",
    "leftouter": "LEFT",
    "rightouter": "RIGHT",
    "fullouter": "FULL",
    "leftanti": "LEFT ANTI",
    "anti": "LEFT ANTI",
    "leftantisemi": "LEFT ANTI",
    "rightanti": "RIGHT ANTI",
    "rightantisemi": "RIGHT ANTI",
    "leftsemi": "LEFT SEMI",
    "rightsemi": "RIGHT SEMI",
}


def _join_keys(
    qc: QueryCompiler, on: Sequence[K.Expr], left: Relation, right: Relation, node: K.Node
) -> list[tuple[Typed, Typed]]:
    keys: list[tuple[Typed, Typed]] = []
    lcols, rcols = dict(left.columns), dict(right.columns)
    for item in on:
        if isinstance(item, K.NameRef):
            if item.name not in lcols or item.name not in rcols:
                raise unsupported(
                    item, f"join key '{item.name}' must exist on both sides", code="UnknownName"
                )
            keys.append(
                (
                    Typed(S.Col(item.name, "L"), lcols[item.name]),
                    Typed(S.Col(item.name, "R"), rcols[item.name]),
                )
            )
            continue
        if isinstance(item, K.Binary) and item.op == "==":
            sides = {}
            for side in (item.left, item.right):
                if (
                    isinstance(side, K.Member)
                    and isinstance(side.target, K.NameRef)
                    and side.target.name in ("$left", "$right")
                ):
                    tag = side.target.name
                    cols = lcols if tag == "$left" else rcols
                    if side.name not in cols:
                        raise unsupported(
                            side, f"unknown column {tag}.{side.name}", code="UnknownName"
                        )
                    sides[tag] = Typed(
                        S.Col(side.name, "L" if tag == "$left" else "R"), cols[side.name]
                    )
                else:
                    raise unsupported(
                        side, "join conditions compare $left.column with $right.column"
                    )
            if len(sides) != 2:
                raise unsupported(item, "join conditions compare $left.column with $right.column")
            keys.append((sides["$left"], sides["$right"]))
            continue
        raise unsupported(item, "unsupported join condition")
    return keys


def op_join(qc: QueryCompiler, op: K.Join | K.Lookup, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    kind = (
        kind_node.name.lower()
        if isinstance(kind_node, K.NameRef)
        else ("leftouter" if isinstance(op, K.Lookup) else "innerunique")
    )
    if kind not in _JOIN_KINDS:
        raise unsupported(op, f"join kind '{kind}' is not supported")
    right = _strip_rn(qc, qc.tabular(op.right))
    keys = _join_keys(qc, op.on, relation, right, op)
    left_source = relation
    if kind == "innerunique":
        left_source = qc._select(
            relation,
            [(S.Col(n), n) for n, _ in relation.columns],
            relation.columns,
            limit_by=(lit(1), [S.Col(k[0].sql.name) for k in keys if isinstance(k[0].sql, S.Col)]),
        )
    cond: S.Expr | None = None
    compiler = ExprCompiler(Scope())
    for lk, rk in keys:
        a, b = compiler.comparable(lk, rk)
        eq = S.BinOp("=", a.sql, b.sql)
        cond = eq if cond is None else S.BinOp("AND", cond, eq)
    sql_kind = _JOIN_KINDS[kind]
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    used: set[str] = set()
    left_only = sql_kind in ("LEFT ANTI", "LEFT SEMI")
    right_only = sql_kind in ("RIGHT ANTI", "RIGHT SEMI")
    same_name_keys = {item.name for item in op.on if isinstance(item, K.NameRef)}
    if not right_only:
        for n, t in relation.columns:
            expr: S.Expr = S.Col(n, "L")
            if isinstance(op, K.Lookup) or (
                sql_kind in ("RIGHT", "FULL") and n in same_name_keys and isinstance(op, K.Lookup)
            ):
                pass
            if t == "string" and sql_kind in ("RIGHT", "FULL"):
                expr = T("ifNull({0}, '')", expr)
            columns.append((expr, n))
            out.append((n, t))
            used.add(n)
    if not left_only:
        for n, t in right.columns:
            if isinstance(op, K.Lookup) and n in same_name_keys:
                continue
            name = _unique(n, used)
            used.add(name)
            right_expr: S.Expr = S.Col(n, "R")
            if t == "string" and sql_kind in ("LEFT", "FULL"):
                right_expr = T("ifNull({0}, '')", right_expr)
            columns.append((right_expr, name))
            out.append((name, t))
    query = S.Select(
        columns=columns,
        from_=left_source.source("L"),
        joins=[S.Join(sql_kind, right.source("R"), on=cond)],
    )
    return qc._new_cte(query, out)


def op_render(qc: QueryCompiler, op: K.Render, relation: Relation) -> Relation:
    properties: dict[str, str] = {}
    for p in op.properties:
        value = p.value
        if isinstance(value, K.Literal):
            properties[p.name] = str(value.value)
        elif isinstance(value, K.NameRef):
            properties[p.name] = value.name
        elif isinstance(value, K.ListExpr | K.Paren):
            properties[p.name] = ",".join(
                _expr_name(i) or ""
                for i in getattr(value, "items", [getattr(value, "expr", None)])
                if i is not None
            )
    qc.visualization = Visualization(type=op.chart, properties=properties)
    return relation


def op_as(qc: QueryCompiler, op: K.As, relation: Relation) -> Relation:
    qc.lets[op.name] = relation
    qc._result_names = {**qc._result_names, relation.name: op.name}
    return relation


def op_serialize(qc: QueryCompiler, op: K.Serialize, relation: Relation) -> Relation:
    relation.ordered = True
    if op.items:
        return op_extend(qc, K.Extend(op.span, op.items), relation)
    return relation


def op_getschema(qc: QueryCompiler, op: K.GetSchema, relation: Relation) -> Relation:
    dotnet = {
        "bool": "System.SByte",
        "int": "System.Int32",
        "long": "System.Int64",
        "real": "System.Double",
        "decimal": "System.Data.SqlTypes.SqlDecimal",
        "string": "System.String",
        "datetime": "System.DateTime",
        "timespan": "System.TimeSpan",
        "guid": "System.Guid",
        "dynamic": "System.Object",
    }
    rows = [
        (n, i, dotnet.get(t, "System.Object"), t)
        for i, (n, t) in enumerate(c for c in relation.columns if c[0] != "__rn")
    ]
    out = [
        ("ColumnName", "string"),
        ("ColumnOrdinal", "int"),
        ("DataType", "string"),
        ("ColumnType", "string"),
    ]
    return _values_relation(
        qc,
        out,
        [
            [
                literal("string", r[0]),
                literal("int", r[1]),
                literal("string", r[2]),
                literal("string", r[3]),
            ]
            for r in rows
        ],
    )


def _values_relation(
    qc: QueryCompiler, out: list[tuple[str, str]], rows: list[list[Typed]]
) -> Relation:
    if not rows:
        query = S.Select(
            columns=[
                (S.Cast(lit(None), clickhouse_type(t)) if t != "string" else lit(""), n)
                for n, t in out
            ],
            limit=lit(0),
        )
        return qc._new_cte(query, out)
    structure = ", ".join(f"{S.quote_identifier(n)} {clickhouse_type(t)}" for n, t in out)
    tuples = [
        T(
            "(" + ", ".join(f"{{{i}}}" for i in range(len(row))) + ")",
            *[v.sql for v in row],
        )
        for row in rows
    ]
    source = S.TableFunction("values", [lit(structure), *tuples])
    query = S.Select(columns=[(S.Col(n), n) for n, _ in out], from_=source)
    return qc._new_cte(query, out, ordered=True)


def src_print(qc: QueryCompiler, op: K.Print) -> Relation:
    scope = Scope(lets=qc.lets)
    columns, out = [], []
    used: set[str] = set()
    for i, item in enumerate(op.items):
        multi = _multi_column(ExprCompiler(scope), item)
        if multi is not None:
            for name, value in multi:
                columns.append((value.sql, _unique(name, used)))
                used.add(columns[-1][1])
                out.append((columns[-1][1], value.type))
            continue
        value = ExprCompiler(scope).compile(item.expr)
        name = item.names[0] if item.names else f"print_{i}"
        name = _unique(name, used)
        used.add(name)
        columns.append((value.sql, name))
        out.append((name, value.type))
    return qc._new_cte(S.Select(columns=columns), out)


def src_datatable(qc: QueryCompiler, op: K.DataTable) -> Relation:
    out: list[tuple[str, str]] = [(c.name, normalize_kql_type(c.type)) for c in op.columns]
    width = len(out)
    if width == 0:
        raise unsupported(op, "datatable needs columns")
    if len(op.values) % width:
        raise unsupported(op, "datatable values do not fill whole rows", code="InvalidArgument")
    scope = Scope(lets=qc.lets)
    rows: list[list[Typed]] = []
    for r in range(0, len(op.values), width):
        row = []
        for (_name, kql_type), node in zip(out, op.values[r : r + width], strict=True):
            value = ExprCompiler(scope).compile(node)
            if value.type != kql_type:
                if isinstance(node, K.Literal) and node.value is None:
                    value = literal(kql_type, None)
                else:
                    value = cast_to(value, kql_type)
            row.append(value)
        rows.append(row)
    return _values_relation(qc, out, rows)


def src_range(qc: QueryCompiler, op: K.Range) -> Relation:
    start, end, step = qc.expr(None, op.start), qc.expr(None, op.end), qc.expr(None, op.step)
    if start.type == "datetime":
        s, e = ticks(start.sql), ticks(end.sql)
        count = T("toUInt64(greatest(0, intDiv({1} - {0}, {2}) + 1))", s, e, step.sql)
        value = Typed(from_ticks(T("{0} + toInt64(number) * {1}", s, step.sql)), "datetime")
    elif (
        start.type in ("int", "long")
        and end.type in ("int", "long")
        and step.type in ("int", "long")
    ):
        count = T("toUInt64(greatest(0, intDiv({1} - {0}, {2}) + 1))", start.sql, end.sql, step.sql)
        value = Typed(T("toInt64({0} + toInt64(number) * {1})", start.sql, step.sql), "long")
        if start.type == end.type == step.type == "int":
            value = Typed(T("toInt32({0})", value.sql), "int")
    elif start.type == "timespan":
        count = T("toUInt64(greatest(0, intDiv({1} - {0}, {2}) + 1))", start.sql, end.sql, step.sql)
        value = Typed(T("toInt64({0} + toInt64(number) * {1})", start.sql, step.sql), "timespan")
    else:
        s, e, st = (cast_to(v, "real").sql for v in (start, end, step))
        count = T("toUInt64(greatest(0, floor(({1} - {0}) / {2} + 1e-9) + 1))", s, e, st)
        value = Typed(T("({0} + number * {1})", s, st), "real")
    # Bounds from toscalar() are Nullable; numbers() needs a plain count (null bounds: no rows).
    count = T("assumeNotNull(ifNull({0}, toUInt64(0)))", count)
    query = S.Select(columns=[(value.sql, op.name)], from_=S.TableFunction("numbers", [count]))
    return qc._new_cte(query, [(op.name, value.type)], ordered=True)


def src_union(qc: QueryCompiler, op: K.Union) -> Relation:
    return op_union(qc, op, None)


def op_union_pipe(qc: QueryCompiler, op: K.Union, relation: Relation) -> Relation:
    return op_union(qc, op, relation)


def op_fork(qc: QueryCompiler, op: K.Fork, relation: Relation) -> Relation:
    first: Relation | None = None
    for i, (branch, name) in enumerate(zip(op.branches, op.names, strict=True)):
        result = qc.tabular(branch, relation)
        # A branch is named by `name = (...)`, else by an `as` inside it, else GenericResult<i>.
        name = name or qc._result_names.get(result.name)
        if first is None:
            first = result
            qc._result_names = {**qc._result_names, result.name: name or "GenericResult"}
        else:
            qc._pending_forks.append(qc._finish(result, name or f"GenericResult{i}"))
    assert first is not None
    return first


def op_invoke(qc: QueryCompiler, op: K.Invoke, relation: Relation) -> Relation:
    fn = qc.lets.get(op.call.name)
    if not isinstance(fn, UserFunction):
        raise unsupported(op, f"unknown function '{op.call.name}'", code="UnknownFunction")
    return qc._call_user_tabular(op.call, fn, list(op.call.args), relation)


_OPERATORS: dict[type, Callable[..., Relation]] = {
    K.Where: op_where,
    K.Extend: op_extend,
    K.Project: op_project,
    K.ProjectAway: op_project_away,
    K.ProjectKeep: op_project_keep,
    K.ProjectRename: op_project_rename,
    K.ProjectReorder: op_project_reorder,
    K.Sort: op_sort,
    K.Take: op_take,
    K.Top: op_top,
    K.Count: op_count,
    K.Distinct: op_distinct,
    K.Summarize: op_summarize,
    K.MvExpand: op_mv_expand,
    K.Union: op_union_pipe,
    K.Join: op_join,
    K.Lookup: op_join,
    K.Render: op_render,
    K.As: op_as,
    K.Serialize: op_serialize,
    K.GetSchema: op_getschema,
    K.Fork: op_fork,
    K.Invoke: op_invoke,
    K.Parse: op_parse,
    K.ParseKv: op_parse_kv,
}

_SOURCE_OPERATORS: dict[type, Callable[..., Relation]] = {
    K.Print: src_print,
    K.DataTable: src_datatable,
    K.Range: src_range,
    K.Union: src_union,
}


def op_mv_apply(qc: QueryCompiler, op: K.MvApply, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    rid = f"__rid{next(qc._counter)}"
    base_cols = [(S.Col(n), n) for n, _ in relation.columns] + [(T("rowNumberInAllBlocks()"), rid)]
    base = qc._select(relation, base_cols, [*relation.columns, (rid, "long")])
    expand = K.MvExpand(op.span, op.params, op.items, op.limit)
    # mv-expand keeps a row for a null array; mv-apply gives such a row no subtable at all.
    expanded = op_mv_expand(qc, expand, base, keep_null=False)
    saved = qc.partition
    qc.partition = rid
    try:
        sub = qc.tabular(op.subquery, expanded)
    finally:
        qc.partition = saved
    sub_types = dict(sub.columns)
    if rid not in sub_types:
        raise unsupported(op.subquery, "this mv-apply subquery is not supported")
    # Columns expanded in place belong to the subquery; the other input columns carry over.
    in_place = {
        _expr_name(i.item.expr) for i in op.items if not i.item.names and _expr_name(i.item.expr)
    }
    original = [n for n, _ in relation.columns if n not in in_place]
    expanded_names = [n for n, _ in expanded.columns]
    out_names = original + [n for n, _ in sub.columns if n not in original and n != rid]
    if all(n in sub_types for n in original):
        out = [(n, sub_types[n]) for n in out_names]
        return qc._select(sub, [(S.Col(n), n) for n in out_names], out)
    base_types = dict(relation.columns)
    columns: list[tuple[S.Expr, str]] = []
    out = []
    for n in out_names:
        if (
            n in sub_types and (n not in base_types or (n in expanded_names and n not in original))
        ) or (
            n in sub_types
            and n in original
            and n not in [i.item.names[0] if i.item.names else "" for i in op.items]
        ):
            columns.append((S.Col(n, "S"), n))
            out.append((n, sub_types[n]))
        else:
            columns.append((S.Col(n, "B"), n))
            out.append((n, base_types[n]))
    query = S.Select(
        columns=columns,
        from_=base.source("B"),
        joins=[S.Join("INNER", sub.source("S"), on=S.BinOp("=", S.Col(rid, "B"), S.Col(rid, "S")))],
    )
    return qc._new_cte(query, out)


def op_make_series(qc: QueryCompiler, op: K.MakeSeries, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    scope = relation.scope(qc.lets)
    on = ExprCompiler(scope).compile(op.on)
    if on.type != "datetime":
        raise unsupported(op.on, "make-series is supported on datetime axes")
    step = qc.expr(None, op.step)
    step_ticks = step.sql if step.type == "timespan" else cast_to(step, "long").sql
    if op.start is None or op.end is None:
        raise unsupported(op, "make-series needs from and to")
    start = ticks(qc.expr(None, op.start).sql)
    end = ticks(qc.expr(None, op.end).sql)
    t = ticks(on.sql)
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    nonempty = isinstance(kind_node, K.NameRef) and kind_node.name == "nonempty"
    used: set[str] = set()
    by_cols: list[tuple[S.Expr, str]] = []
    by_out: list[tuple[str, str]] = []
    for i, item in enumerate(op.by):
        value = ExprCompiler(scope).compile(item.expr)
        name = _unique(
            item.names[0] if item.names else (_by_name(item.expr) or f"Column{i + 1}"), used
        )
        used.add(name)
        by_cols.append((value.sql, name))
        by_out.append((name, value.type))
    agg_ctx = AggregateContext(lambda: ExprCompiler(scope))
    agg_cols: list[tuple[S.Expr, str]] = []
    agg_names: list[tuple[str, str]] = []
    for item in op.aggregates:
        value = ExprCompiler(scope, aggregates=agg_ctx).compile(item.expr)
        if item.names:
            name = item.names[0]
        elif isinstance(item.expr, K.Call):
            name = default_name(item.expr)
        else:
            name = "Column1"
        name = _unique(name, used)
        used.add(name)
        agg_cols.append((value.sql, name))
        agg_names.append((name, value.type))
    on_name = _unique(_expr_name(op.on) or "Column1", used)
    bin_expr = T("intDiv({0} - {1}, {2})", t, start, step_ticks)
    per_bin = qc._select(
        relation,
        [*by_cols, (bin_expr, "__bin"), *agg_cols],
        [*by_out, ("__bin", "long"), *agg_names],
        where=T("ifNull({0} >= {1} AND {0} < {2}, false)", t, start, end),
        group_by=[e for e, _ in by_cols] + [bin_expr],
    )
    nbins = T("toUInt64(greatest(0, intDiv({1} - {0} + {2} - 1, {2})))", start, end, step_ticks)
    series_cols: list[tuple[S.Expr, str]] = [(S.Col(n), n) for _, n in by_cols]
    for (name, kql_type), default in zip(agg_names, op.defaults, strict=True):
        default_value = qc.expr(None, default) if default is not None else Typed(lit(0), "long")
        default_json = T("ifNull({0}, 'null')", to_json(default_value))
        series_cols.append(
            (
                T(
                    "concat('[', arrayStringConcat(arrayMap(i -> if(indexOf(groupArray(`__bin`), i) > 0, "
                    "ifNull({0}, 'null'), {1}), range(0, {2})), ','), ']')",
                    to_json(
                        Typed(
                            T(
                                "arrayElement(groupArray({0}), indexOf(groupArray(`__bin`), __i))",
                                S.Col(name),
                            ),
                            kql_type,
                        )
                    ),
                    default_json,
                    nbins,
                ),
                name,
            )
        )
    axis = T(
        "concat('[', arrayStringConcat(arrayMap(i -> concat('\"', formatDateTime(reinterpret(toInt64({0} + i * {1}), "
        "'DateTime64(7, \\'UTC\\')'), '%Y-%m-%dT%H:%i:%S'), '.', leftPad(toString(positiveModulo({0} + i * {1}, 10000000)), 7, '0'), "
        "'Z\"'), range(0, {2})), ','), ']')",
        start,
        step_ticks,
        nbins,
    )
    series_cols.append((axis, on_name))
    out = by_out + [(n, "dynamic") for n, _ in agg_names] + [(on_name, "dynamic")]
    query = S.Select(
        columns=series_cols, from_=per_bin.source(), group_by=[S.Col(n) for _, n in by_cols]
    )
    if not by_cols and not nonempty:
        query.having = T("count() > 0")
    return qc._new_cte(query, out)


_OPERATORS[K.MvApply] = op_mv_apply
_OPERATORS[K.MakeSeries] = op_make_series


_JSON_TYPE_TO_KQL = {
    "Int64": "long",
    "UInt64": "long",
    "Double": "real",
    "String": "string",
    "Bool": "bool",
}


def _ipv4_lookup(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    """`evaluate ipv4_lookup(Lookup, ip_column, range_column [, return_unmatched])`.

    Each row meets the lookup rows whose CIDR range holds its address (a filtered cross join:
    lookup tables are small); unmatched rows stay when asked, with empty lookup columns.
    """
    relation = _strip_rn(qc, relation)
    args = [a for a in op.plugin.args if not isinstance(a, K.NamedArg)]
    named = {a.name.lower(): a.value for a in op.plugin.args if isinstance(a, K.NamedArg)}
    if len(args) < 3:
        raise unsupported(
            op.plugin, "ipv4_lookup needs a table and two columns", code="WrongArgumentCount"
        )
    lookup = _strip_rn(qc, qc.tabular(args[0]))
    ip_col, range_col = _expr_name(args[1]), _expr_name(args[2])
    if ip_col not in dict(relation.columns) or range_col not in dict(lookup.columns):
        raise unsupported(op.plugin, "ipv4_lookup columns must exist", code="UnknownName")
    unmatched_node = named.get("return_unmatched", args[3] if len(args) > 3 else None)
    keep_unmatched = isinstance(unmatched_node, K.Literal) and unmatched_node.value is True
    left_names = [n for n, _ in relation.columns]
    right = [(n, t) for n, t in lookup.columns if n not in left_names]
    out = list(relation.columns) + right
    cidr = "if(position({1}, '/') > 0, {1}, concat({1}, '/32'))"
    cond = T(
        "(isIPv4String(splitByChar('/', {0})[1]) AND isIPAddressInRange(splitByChar('/', {0})[1], "
        + cidr
        + "))",
        S.Col(ip_col, "L"),
        S.Col(range_col, "R"),
    )
    matched = S.Select(
        columns=[(S.Col(n, "L"), n) for n in left_names] + [(S.Col(n, "R"), n) for n, _ in right],
        from_=relation.source("L"),
        joins=[S.Join("CROSS", lookup.source("R"))],
        where=cond,
    )
    if not keep_unmatched:
        return qc._new_cte(matched, out)
    matched_rel = qc._new_cte(matched, out)
    rest = S.Select(
        columns=[(S.Col(n), n) for n in left_names]
        + [
            (lit("") if t == "string" else S.Cast(lit(None), clickhouse_type(t)), n)
            for n, t in right
        ],
        from_=relation.source(),
        where=S.InList(
            S.Col(ip_col),
            S.Select(columns=[(S.Col(ip_col), None)], from_=matched_rel.source()),
            negated=True,
        ),
    )
    return qc._new_cte(
        S.UnionAll(
            [S.Select(columns=[(S.Col(n), n) for n, _ in out], from_=matched_rel.source()), rest]
        ),
        out,
    )


def _bag_unpack(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    args = [a for a in op.plugin.args if not isinstance(a, K.NamedArg)]
    named = {a.name.lower(): a.value for a in op.plugin.args if isinstance(a, K.NamedArg)}
    if not args:
        raise unsupported(op.plugin, "bag_unpack needs a column", code="WrongArgumentCount")
    scope = relation.scope(qc.lets)
    bag = ExprCompiler(scope).compile(args[0])
    bag_name = _expr_name(args[0])
    prefix = ""
    if len(args) > 1 and isinstance(args[1], K.Literal) and isinstance(args[1].value, str):
        prefix = args[1].value
    conflict_node = named.get("columnsconflict")
    conflict = conflict_node.value if isinstance(conflict_node, K.Literal) else "error"
    ignored: set[str] = set()
    ignored_node = named.get("ignoredproperties")
    if isinstance(ignored_node, K.Literal) and isinstance(ignored_node.value, list):
        ignored = {str(v) for v in ignored_node.value}
    keys: list[tuple[str, str]] = []
    # `: (*, k: type, ...)` keeps every input column; without `*` the schema is the whole output.
    keep_all = any(c.name == "*" for c in op.schema)
    listed = [c.name for c in op.schema if c.name != "*"]
    if op.schema:
        keys = [
            (c.name, normalize_kql_type(c.type))
            for c in op.schema
            if c.name != "*" and c.name not in dict(relation.columns)
        ]
    else:
        if qc.probe is None:
            raise unsupported(op, "bag_unpack needs a discovery query, which is not available here")
        discovery = S.Select(
            columns=[(T("kv.1"), "k"), (T("groupUniqArray(toString(JSONType(kv.2)))"), "types")],
            from_=S.Subquery(
                S.Select(
                    columns=[
                        (
                            T("arrayJoin(JSONExtractKeysAndValuesRaw(ifNull({0}, '')))", bag.sql),
                            "kv",
                        )
                    ],
                    from_=relation.source(),
                )
            ),
            group_by=[T("kv.1")],
            order_by=[(S.Col("k"), False, False)],
            ctes=list(qc.ctes),
        )
        for row in qc.probe(S.render(discovery)):
            kinds = [t for t in row["types"] if t != "Null"]
            kql_type = _JSON_TYPE_TO_KQL.get(kinds[0], "dynamic") if len(kinds) == 1 else "dynamic"
            keys.append((str(row["k"]), kql_type))
    keys = [(k, t) for k, t in keys if k not in ignored]
    existing = [(n, t) for n, t in relation.columns if n != bag_name]
    if op.schema and not keep_all:
        existing = [(n, t) for n, t in existing if n in listed]
    existing_names = {n for n, _ in existing}
    values: dict[str, Typed] = {}
    for key, kql_type in keys:
        column = prefix + key
        raw = T("nullIf(JSONExtractRaw(ifNull({0}, ''), {1}), '')", bag.sql, S.Lit(key))
        values[column] = cast_to(Typed(raw, "dynamic"), kql_type)
        if column in existing_names and conflict == "error":
            raise unsupported(
                op, f"bag_unpack: column '{column}' already exists", code="InvalidArgument"
            )
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    for n, t in existing:
        if n in values and conflict == "replace_source":
            columns.append((values[n].sql, n))
            out.append((n, values[n].type))
        else:
            columns.append((S.Col(n), n))
            out.append((n, t))
    for n, value in values.items():
        if n in existing_names:
            continue
        columns.append((value.sql, n))
        out.append((n, value.type))
    if op.schema and not keep_all:
        order = {name: i for i, name in enumerate(listed)}
        ranked = sorted(
            zip(columns, out, strict=True), key=lambda pair: order.get(pair[1][0], len(order))
        )
        columns, out = [c for c, _ in ranked], [o for _, o in ranked]
    return qc._select(relation, columns, out)


def op_sample(qc: QueryCompiler, op: K.Sample, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    return qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=[(T("rand()"), False, False)],
        limit=_count_value(qc, op.count),
    )


_OPERATORS[K.Sample] = op_sample


def _multi_column(compiler: ExprCompiler, item: K.NamedExpr) -> list[tuple[str, Typed]] | None:
    """`series_stats(x)`, `series_fit_line(y)`: one column per field of the function's result."""
    from bzrk.engine.compile.functions import FUNCTIONS
    from bzrk.engine.compile.functions_arrays import SORTS, sorted_array_columns
    from bzrk.engine.compile.series import MULTI_COLUMN_FUNCTIONS

    expr = item.expr
    if isinstance(expr, K.Call) and expr.name in SORTS and len(item.names) <= 1:
        return sorted_array_columns(compiler, expr, _expr_name)
    if not isinstance(expr, K.Call) or expr.name not in MULTI_COLUMN_FUNCTIONS:
        return None
    builder_name, fields = MULTI_COLUMN_FUNCTIONS[expr.name]
    args = [compiler.compile(a) for a in expr.args]
    bag = FUNCTIONS[builder_name](compiler, args, expr)
    arg_name = _expr_name(expr.args[0]) if expr.args else ""
    out = []
    for i, (field_name, kql_type) in enumerate(fields):
        if len(item.names) > 1:
            if i >= len(item.names):
                break
            name = item.names[i]
        else:
            name = f"{expr.name}_{arg_name}_{field_name}"
        raw = Typed(T("nullIf(JSONExtractRaw({0}, {1}), '')", bag.sql, lit(field_name)), "dynamic")
        out.append((name, cast_to(raw, kql_type)))
    return out


def op_project_by_names(qc: QueryCompiler, op: K.ProjectByNames, relation: Relation) -> Relation:
    patterns: list[str] = []
    compiler = ExprCompiler(Scope(lets=qc.lets))
    for item in op.items:
        value = compiler.compile(item)
        if not isinstance(value.sql, S.Lit) or not isinstance(value.sql.value, str):
            raise unsupported(item, "project-by-names needs constant names")
        if value.type == "dynamic":
            import json

            names = json.loads(value.sql.value)
            patterns.extend(str(n) for n in (names if isinstance(names, list) else [names]))
        else:
            patterns.append(value.sql.value)
    chosen: list[str] = []
    available = [n for n, _ in relation.columns]
    for pattern in patterns:
        for name in available:
            if fnmatch.fnmatchcase(name, pattern) and name not in chosen:
                chosen.append(name)
    types = dict(relation.columns)
    return qc._select(relation, [(S.Col(n), n) for n in chosen], [(n, types[n]) for n in chosen])


_OPERATORS[K.ProjectByNames] = op_project_by_names

from bzrk.engine.compile.partition import op_partition  # noqa: E402
from bzrk.engine.compile.plugins import op_evaluate  # noqa: E402
from bzrk.engine.compile.reduce import op_reduce  # noqa: E402
from bzrk.engine.compile.scan import op_scan  # noqa: E402
from bzrk.engine.compile.search import op_search, src_search  # noqa: E402
from bzrk.engine.compile.topnested import op_top_nested  # noqa: E402
from bzrk.engine.compile.union_sources import src_external_data  # noqa: E402

_OPERATORS[K.Scan] = op_scan
_OPERATORS[K.Evaluate] = op_evaluate
_OPERATORS[K.Partition] = op_partition
_OPERATORS[K.TopNested] = op_top_nested
_OPERATORS[K.Reduce] = op_reduce
_OPERATORS[K.Search] = op_search
_SOURCE_OPERATORS[K.Search] = src_search
_SOURCE_OPERATORS[K.ExternalData] = src_external_data

from bzrk.engine.compile.graph import (  # noqa: E402
    op_graph_mark_components,
    op_graph_match,
    op_graph_to_table,
    op_make_graph,
)

_OPERATORS[K.MakeGraph] = op_make_graph
_OPERATORS[K.GraphMatch] = op_graph_match
_OPERATORS[K.GraphToTable] = op_graph_to_table
_OPERATORS[K.GraphMarkComponents] = op_graph_mark_components
