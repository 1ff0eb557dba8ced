"""KQL statements and tabular operators → one ClickHouse query (a chain of CTEs) per result.

Each operator becomes one CTE reading the previous one, so the SQL reads in the same order as
the KQL pipeline. The compiler tracks the schema (names and KQL types) of every step itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.expressions import WINDOW_FUNCTIONS, ExprCompiler, Scope, literal
from bzrk.engine.compile.fuse import fuse_chain
from bzrk.engine.compile.naming import _expr_name
from bzrk.engine.compile.parsing import op_parse, op_parse_kv
from bzrk.engine.compile.prune import prune_columns
from bzrk.engine.compile.relation import (
    CompiledQuery,
    CompiledTable,
    Relation,
    TableResolver,
    TableSource,
    UserFunction,
)
from bzrk.engine.compile.row_order import _numbered, _partition, _strip_rn
from bzrk.engine.compile.summarize_budget import BudgetPolicy, SummarizeBudget
from bzrk.engine.compile.typed import T, Typed, cast_to, lit, to_json
from bzrk.engine.events import PRIMARY_RESULT, Column, Visualization
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import expression_name as kql_expression_name


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
        # (database, table) -> column names of every stored table read (for fuse_chain).
        self.stored_columns: dict[tuple[str, str], frozenset[str]] = {}

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
        ctes, select = fuse_chain(list(self.ctes), select, self.stored_columns)
        # A copy: after fusion `select` may be a CTE that other results still render.
        cappable = select.limit is None
        select = dataclasses.replace(
            select,
            ctes=prune_columns(ctes, select),
            limit=S.RowCap() if cappable else select.limit,
        )
        return CompiledTable(
            name,
            S.render(select),
            tuple(Column(n, t) for n, t in relation.columns),  # type: ignore[arg-type]
            cappable,
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
        hidden, bags = bag_paths.table_paths(source.bags, self.bag_paths, source.path_registry)
        query = S.Select(
            columns=[*columns, *hidden],
            from_=S.TableRef(source.database, source.table),
            where=S.ScanBounds(),
        )
        relation = self._new_cte(query, source.columns)
        relation.bags = bags
        relation.stored = S.TableRef(source.database, source.table)
        self.stored_columns[(source.database, source.table)] = frozenset(
            name for name, _ in source.columns
        )
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
            return self.run_block(fn.body, node, "the function has no tabular result")
        finally:
            self.lets = saved

    def run_block(self, statements: Sequence[K.Statement], node: K.Node, empty: str) -> Relation:
        """Run a `{ let …; … }` body in the current scope: its last tabular statement's result."""
        result: Relation | None = None
        for statement in statements:
            if isinstance(statement, K.LetStatement):
                self.lets[statement.name] = self._let_value(statement.value)
            elif isinstance(statement, K.ExprStatement):
                result = self.tabular(statement.expr)
        if result is None:
            raise unsupported(node, empty)
        return result

    def tabular_per_partition(
        self, node: K.Node, input_rel: Relation, partition_column: str
    ) -> Relation:
        """``node`` over ``input_rel`` with operators working per value of ``partition_column``."""
        saved = self.partition
        self.partition = partition_column
        try:
            return self.tabular(node, input_rel)
        finally:
            self.partition = saved

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


def _uses_window(node: K.Node) -> bool:
    return any(isinstance(n, K.Call) and n.name in WINDOW_FUNCTIONS for n in node.walk())


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
        where=filter_form(compiler.as_bool(cond)),
    )


def filter_form(condition: S.Expr) -> S.Expr:
    """``condition`` as a WHERE clause may read it, where NULL drops a row as false does.

    Through AND and OR only (never NOT), ``ifNull(s, '') = 'text'`` with non-empty text becomes
    ``s = 'text'``: a NULL ``s`` then gives NULL instead of false, which drops the row all the
    same, and ClickHouse compares a LowCardinality column through its dictionary instead of
    first building ifNull's full column (``where resource.service.name == "checkout"``).
    """
    if not isinstance(condition, S.BinOp):
        return condition
    if condition.op in ("AND", "OR"):
        return S.BinOp(condition.op, filter_form(condition.left), filter_form(condition.right))
    if condition.op == "=":
        left, right = _unless_empty(condition.left, condition.right)
        return S.BinOp("=", left, right)
    return condition


def _unless_empty(left: S.Expr, right: S.Expr) -> tuple[S.Expr, S.Expr]:
    """The sides of ``left = right`` without an ``ifNull(s, '')`` facing non-empty text."""

    def text(side: S.Expr) -> bool:
        return isinstance(side, S.Lit) and isinstance(side.value, str) and side.value != ""

    def unwrapped(side: S.Expr) -> S.Expr | None:
        if isinstance(side, S.Template) and side.text == bag_paths.EMPTY_WHEN_NULL:
            return side.args[0]
        return None

    if text(right) and (inner := unwrapped(left)) is not None:
        return inner, right
    if text(left) and (inner := unwrapped(right)) is not None:
        return left, inner
    return left, right


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


# Operators with modules of their own; they import this module's helpers, defined above.
from bzrk.engine.compile.lookups import _bag_unpack, _ipv4_lookup  # noqa: E402, F401
from bzrk.engine.compile.ops_combine import op_join, op_union  # noqa: E402
from bzrk.engine.compile.ops_expand import op_make_series, op_mv_apply, op_mv_expand  # noqa: E402
from bzrk.engine.compile.ops_project import (  # noqa: E402
    _multi_column,
    op_project_away,
    op_project_by_names,
    op_project_keep,
    op_project_rename,
    op_project_reorder,
)
from bzrk.engine.compile.ops_rows import (  # noqa: E402
    op_count,
    op_distinct,
    op_sample,
    op_sort,
    op_take,
    op_top,
)
from bzrk.engine.compile.ops_summarize import op_summarize  # noqa: E402
from bzrk.engine.compile.sources import (  # noqa: E402
    _values_relation,
    src_datatable,
    src_print,
    src_range,
)

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


_OPERATORS[K.MvApply] = op_mv_apply
_OPERATORS[K.MakeSeries] = op_make_series


_OPERATORS[K.Sample] = op_sample


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
