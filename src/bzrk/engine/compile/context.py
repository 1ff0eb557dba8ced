"""The compile context: everything an operator module may use while it compiles its operator.

An operator is a function ``(ctx, op, relation) -> Relation`` (a source: ``(ctx, op) ->
Relation``) listed in ``operators/table.py``. It reads and extends the query's state only
through this class: new CTEs and selects over a relation, fresh ids, expression scopes, the
lets in scope (and :meth:`bound` to add some for a while), user functions, sub-pipelines,
discovery queries, and result tables. The context is also the :class:`ExpressionHost` of every
scope it builds, so the expression compiler can compile a tabular argument (``toscalar``,
``in (T)``), inline a user function and read a ``set`` option without a service locator.

The dispatch tables are given by the compiler (``query.QueryCompiler``), which sits above the
operators: this module never imports an operator.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile import annotated, bag_paths, bag_search, deadline
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.functions.window import row_window
from bzrk.engine.compile.join_filters import filters_before_join
from bzrk.engine.compile.passes.render import result_table
from bzrk.engine.compile.relation import (
    CompiledTable,
    QueryWindow,
    Relation,
    TableResolver,
    TableSource,
    UserFunction,
)
from bzrk.engine.compile.scope import QueryEnvironment, Scope
from bzrk.engine.compile.sharing import bind_repeated
from bzrk.engine.compile.summarize_budget import BudgetPolicy, SummarizeBudget
from bzrk.engine.compile.typed import T, Typed, cast_to
from bzrk.engine.events import Visualization
from bzrk.engine.types import normalize_kql_type
from bzrk.kql import syntax as K
from bzrk.kql.binder.bound import BoundQuery

Operator = Callable[["CompileContext", Any, Relation], Relation]
Source = Callable[["CompileContext", Any], Relation]
Probe = Callable[[S.Query], list[dict[str, Any]]]


class CompileContext:
    """The state of one compilation and the services operator modules call."""

    # Filled by the compiler: syntax node type -> the function compiling it, and the function
    # compiling an invocation of a declared pattern.
    operators: Mapping[type, Operator] = {}
    sources: Mapping[type, Source] = {}
    pattern_source: Source | None = None

    def __init__(self, resolver: TableResolver | None = None, probe: Probe | None = None) -> None:
        self.resolver = resolver or TableResolver()
        # Runs a discovery query while compiling, for operators whose output schema depends
        # on the data (bag_unpack); None means such operators are rejected.
        self.probe = probe
        # Registry name -> how a run reads its facts (TableSource.registry_reader).
        self.registry_readers: dict[str, Callable[[str], list[dict[str, Any]]]] = {}
        self.ctes: list[tuple[str, S.Query]] = []
        # One counter for CTE names and every fresh id, so generated names never collide.
        self._counter = itertools.count()
        self.visualization: Visualization | None = None
        # The names in scope: let values (Typed, Relation, UserFunction) and join sides.
        self.lets: dict[str, Any] = {}
        # `set` options the expressions read (bin_auto's size and origin), by lower-case name.
        self.options: dict[str, K.Expr] = {}
        # The request's time window (ticks, [start, end)), set by the query service; None when
        # the request has no start. `window_read` records that the plan depends on it.
        self.request_window: QueryWindow | None = None
        # The request's database and principal (current_database(), current_principal()).
        self.query_environment = QueryEnvironment()
        # Objects the SQL reads that the service creates once per backend, by key.
        self.preparations: dict[str, Callable[[Any], None]] = {}
        self.window_read = False
        # `declare pattern` statements by pattern name.
        self.patterns: dict[str, K.DeclarePattern] = {}
        # Result tables finished while compiling a statement (fork branches), and the names
        # given with `as`. Instance attributes: a class-level list would leak between queries.
        self.pending_results: list[CompiledTable] = []
        self.result_names: dict[str, str] = {}
        # Set while compiling an mv-apply subquery: operators then work per source row.
        self.partition: str | None = None
        # Window calls with a restart (or rank) → the column numbering their row groups.
        self.window_groups: dict[int, str] = {}
        # Constant bag paths the query names (root name -> paths), read natively by tables.
        self.bag_paths: dict[str, set[bag_paths.Path]] = {}
        # Terms the query searches stored bags for (bag -> (operator, literal)), tested per path.
        self.bag_searches: dict[str, set[bag_search.Term]] = {}
        # The summarize memory budget; set by the query service, None elsewhere.
        self.budget_policy: BudgetPolicy | None = None
        self.budgets: list[SummarizeBudget] = []
        # (database, table) -> column names of every stored table read (for the fuse pass).
        self.stored_columns: dict[tuple[str, str], frozenset[str]] = {}
        # Scalar user-function calls compiled so far (see inline_function).
        self._inlined: dict[tuple[Any, ...], tuple[Typed, Any]] = {}
        # What the binder found (kql.bind: names, types, schemas); None when compiling a tree
        # nobody bound (a compiler unit test).
        self.binding: BoundQuery | None = None

    # --- what the binder found -------------------------------------------------------------

    def bound_names(self, item: K.Node) -> tuple[str, ...] | None:
        """The output column names the binder gave ``item`` (a projection, aggregate or by
        item), after KQL's naming rules; None where the binder did not bind it."""
        return None if self.binding is None else self.binding.names.get(item)

    # --- names and CTEs --------------------------------------------------------------------

    def next_id(self) -> int:
        """A number no other CTE or generated column of this query uses."""
        return next(self._counter)

    def new_cte(
        self, query: S.Query, columns: list[tuple[str, str]], ordered: bool = False
    ) -> Relation:
        """Add ``query`` as the next CTE; the relation reading it has ``columns``."""
        deadline.check()
        name = f"_q{self.next_id()}"
        self.ctes.append((name, query))
        return Relation(name, list(columns), ordered)

    def select(
        self,
        relation: Relation,
        columns: Sequence[tuple[S.Expr, str]],
        out: list[tuple[str, str]],
        **kw: Any,
    ) -> Relation:
        """A CTE selecting ``columns`` from ``relation`` (``kw``: where, group_by, …).

        Bag columns passed through as themselves keep their native path columns.
        """
        hidden, bags = bag_paths.carry(relation.bags, columns, kw)
        query = S.Select(
            columns=[*((e, n) for e, n in columns), *hidden], from_=relation.source(), **kw
        )
        result = self.new_cte(query, out, ordered=relation.ordered and not kw.get("group_by"))
        result.bags = bags
        result.annotations = annotated.carry(relation.annotations, columns, relation.columns)
        return result

    def discover(self, query: S.Select) -> list[dict[str, Any]]:
        """Run a discovery query over the CTEs so far (see :attr:`probe`); the probe renders it
        (with the run's time window at each stored-table read) and runs it."""
        assert self.probe is not None
        return self.probe(dataclasses.replace(query, ctes=list(self.ctes)))

    # --- expressions -----------------------------------------------------------------------

    def scope(
        self, relation: Relation | None = None, *, columns: dict[str, Typed] | None = None
    ) -> Scope:
        """The scope of an expression over ``relation``'s row (or ``columns``), with the lets."""
        declared: Mapping[tuple[str, ...], str] = {}
        if relation is not None:
            columns = {n: Typed(relation.column(n), t) for n, t in relation.columns}
            declared = relation.annotations
        return Scope(
            columns=columns if columns is not None else {},
            lets=self.lets,
            host=self,
            annotations=declared,
        )

    def expr(self, relation: Relation | None, node: K.Expr, *, window: bool = False) -> Typed:
        """Compile the scalar ``node`` over ``relation``'s row (``window``: prev/next allowed)."""
        scope = self.scope(relation)
        if window:
            scope.row_window = self.row_window
        return ExprCompiler(scope).compile(node)

    def row_window(self, name: str, args: list[Typed], node: K.Call) -> Typed:
        """A row-window call (prev, next, row_number, …) over the serialized `__rn` order."""
        return row_window(name, args, node, partition=self.partition, groups=self.window_groups)

    def option(self, name: str) -> K.Expr | None:
        """The value of a ``set`` option of this query (None when it is not set)."""
        return self.options.get(name.lower())

    def query_window(self) -> QueryWindow | None:
        """The request's time window, for what is sized by it (bin_auto, make-series' axis).

        Reading it ties the compiled plan to this window (``CompiledQuery.window_dependent``).
        """
        self.window_read = True
        return self.request_window

    def environment(self) -> QueryEnvironment:
        return self.query_environment

    def prepare(self, key: str, create: Callable[[Any], None]) -> None:
        self.preparations[key] = create

    # --- scopes and user functions ---------------------------------------------------------

    @contextlib.contextmanager
    def bound(self, bindings: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Names added to the lets for the duration of the block (a let body's own scope)."""
        saved = self.lets
        self.lets = {**saved, **bindings}
        try:
            yield self.lets
        finally:
            self.lets = saved

    def let_value(self, value: K.Expr) -> Any:
        """What a `let` name stands for: a user function, a relation or a scalar."""
        if isinstance(value, K.Lambda):
            return UserFunction(value.params, value.body)
        if self.looks_tabular(value):
            return self.tabular(value)
        try:
            return self.shared(ExprCompiler(self.scope()).compile(value))
        except CompileError as scalar_error:
            try:
                return self.tabular(value)
            except CompileError:
                raise scalar_error from None

    def shared(self, value: Typed) -> Typed:
        """``value`` with the sub-trees it repeats bound once (:mod:`..sharing`).

        A ``let`` name is replaced by its SQL at every use, so ``let a1 = a0 + a0; let a2 =
        a1 + a1; …`` would double the SQL per level.
        """
        bound = bind_repeated(value.sql, f"__let{self.next_id()}")
        return value if bound is value.sql else Typed(bound, value.type)

    def looks_tabular(self, node: K.Expr) -> bool:
        if isinstance(node, K.Pipeline):
            return True
        if isinstance(node, K.Paren):
            return self.looks_tabular(node.expr)
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
                return isinstance(last, K.ExprStatement) and self.looks_tabular(last.expr)
        return False

    def run_block(self, statements: Sequence[K.Statement], node: K.Node, empty: str) -> Relation:
        """Run a `{ let …; … }` body in the current scope: its last tabular statement's result."""
        result: Relation | None = None
        for statement in statements:
            if isinstance(statement, K.LetStatement):
                self.lets[statement.name] = self.let_value(statement.value)
            elif isinstance(statement, K.ExprStatement):
                result = self.tabular(statement.expr)
        if result is None:
            raise unsupported(node, empty)
        return result

    def call_user_tabular(
        self,
        node: K.Node,
        fn: UserFunction,
        args: Sequence[K.Expr],
        input_rel: Relation | None = None,
    ) -> Relation:
        """Run the tabular user function ``fn`` with ``args`` (``input_rel``: the piped input)."""
        with self.bound(self._bind_params(node, fn, args, input_rel)):
            return self.run_block(fn.body, node, "the function has no tabular result")

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
            arg = _argument(node, param, params, positional, named)
            if param.type == "table":
                bound[param.name] = self.tabular(arg)
            else:
                bound[param.name] = _as_declared(param, ExprCompiler(self.scope()).compile(arg))
        return bound

    def inline_function(self, c: ExprCompiler, node: K.Call, fn: UserFunction) -> Typed:
        """The scalar user function ``fn`` called at ``node``, compiled in ``c``'s scope.

        A call with the same arguments (the same compiled values) in the same scope is the
        same value: it is compiled once, so ``f(x) + f(x)`` inside ``g`` inside ``h`` … does
        not double the work per level.
        """
        deadline.check()
        positional = [a for a in node.args if not isinstance(a, K.NamedArg)]
        named = {a.name: a.value for a in node.args if isinstance(a, K.NamedArg)}
        params = list(fn.params)
        bound: dict[str, Any] = {}
        for param in fn.params:
            value = c.compile(_argument(node, param, params, positional, named))
            bound[param.name] = _as_declared(param, value)
        key = (
            id(fn),
            tuple((name, id(v.sql), v.type) for name, v in bound.items()),
            id(c.scope.columns),
            id(self.lets),
            c.aggregates is None,
            c.scope.row_window is None,
        )
        known = self._inlined.get(key)
        if known is not None:
            return known[0]
        result = self._inline(c, node, fn, bound)
        # The key's ids stay valid while the objects they name are kept alive with the value.
        self._inlined[key] = (result, (fn, bound, c.scope.columns, self.lets))
        return result

    def _inline(
        self, c: ExprCompiler, node: K.Call, fn: UserFunction, bound: dict[str, Any]
    ) -> Typed:
        with self.bound(bound):
            result: Typed | None = None
            for statement in fn.body:
                if isinstance(statement, K.LetStatement):
                    self.lets[statement.name] = self.let_value(statement.value)
                elif isinstance(statement, K.ExprStatement):
                    if self.looks_tabular(statement.expr):
                        raise unsupported(node, "a tabular function used as a scalar")
                    scope = Scope(
                        columns=c.scope.columns,
                        lets=self.lets,
                        row_window=c.scope.row_window,
                        host=self,
                    )
                    result = ExprCompiler(scope, aggregates=c.aggregates).compile(statement.expr)
            if result is None:
                raise unsupported(node, "the function has no result")
            return self.shared(result) if c.aggregates is None else result

    # --- tabular expressions ---------------------------------------------------------------

    def tabular(self, node: K.Node, input_rel: Relation | None = None) -> Relation:
        """Compile a tabular expression (a pipeline, a name, a call, a source operator)."""
        if isinstance(node, K.Pipeline):
            if isinstance(node.source, K.Star) and input_rel is not None:
                relation = input_rel
            else:
                relation = self.tabular(node.source, input_rel)
            operators = node.operators
            index = 0
            while index < len(operators):
                op = operators[index]
                # A `where` Kusto pushes through an innerunique join runs before it.
                pushed = 0
                if isinstance(op, K.Join):
                    names = (name for name, _ in relation.columns)
                    pushed = filters_before_join(op, operators[index + 1 :], names)
                for where in operators[index + 1 : index + 1 + pushed]:
                    relation = self.operator(where, relation)
                relation = self.operator(op, relation)
                index += 1 + pushed
            return relation
        if isinstance(node, K.Paren):
            return self.tabular(node.expr, input_rel)
        if isinstance(node, K.NameRef):
            value = self.lets.get(node.name)
            if isinstance(value, Relation):
                return value
            if isinstance(value, UserFunction) and not value.params:
                return self.call_user_tabular(node, value, [])
            source = self.resolver.resolve(node.name)
            if source is None:
                raise unsupported(node, f"unknown table '{node.name}'", code="UnknownTable")
            return self.read_table(source)
        if self.pattern_source is not None and self.is_pattern_call(node):
            return self.pattern_source(self, node)
        if isinstance(node, K.Call):
            return self._tabular_call(node, input_rel)
        if isinstance(node, K.QueryOperator):
            handler = self.sources.get(type(node))
            if handler is None:
                raise unsupported(node, f"'{type(node).__name__}' cannot start a query here")
            return handler(self, node)
        raise unsupported(node, "expected a tabular expression")

    def is_pattern_call(self, node: K.Node) -> bool:
        """Whether ``node`` is ``p(…)``, ``p(…).path`` or ``p(…)[path]`` of a declared pattern."""
        if isinstance(node, K.Member | K.Index) and isinstance(node.target, K.Call):
            node = node.target
        return isinstance(node, K.Call) and node.name in self.patterns

    def operator(self, op: K.QueryOperator, relation: Relation) -> Relation:
        """Compile one pipe operator over ``relation``."""
        deadline.check()
        handler = self.operators.get(type(op))
        if handler is None:
            name = op.name if isinstance(op, K.GenericOperator) else type(op).__name__
            raise unsupported(op, f"operator '{name}' is not supported")
        return handler(self, op, relation)

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

    def read_table(self, source: TableSource) -> Relation:
        """A stored table read as is: its columns, native bag paths and its `S.ScanBounds` node."""
        columns = [(absent_as_null(name, kql_type, source.absent.get(name),
                                   source.computed.get(name), source.distinct_parts.get(name, ()),
                                   _declared_paths(source.absent, name)),
                     name)
                   for name, kql_type in source.columns]  # fmt: skip
        hidden, bags = bag_paths.table_paths(
            source.bags,
            self.bag_paths,
            source.path_registry,
            source.columns,
            source.table,
            source.computed,
            source.absent,
        )
        searches, tested = bag_search.table_items(
            source.bags, self.bag_searches, source.path_registry
        )
        hidden = [*hidden, *searches]
        for bag, paths in tested.items():
            bags[bag] = {**bags.get(bag, {}), **paths}
        if source.path_registry and source.registry_reader is not None:
            self.registry_readers[source.path_registry] = source.registry_reader
        query = S.Select(
            columns=[*columns, *hidden],
            from_=S.TableRef(source.database, source.table),
            where=S.ScanBounds(),
        )
        relation = self.new_cte(query, source.columns)
        relation.bags = bags
        relation.stored = S.TableRef(source.database, source.table)
        self.stored_columns[(source.database, source.table)] = frozenset(
            name for name, _ in source.columns if name not in source.computed
        )
        return relation

    def _tabular_call(self, node: K.Call, input_rel: Relation | None) -> Relation:
        if node.name in ("materialize", "view") and node.args:
            return self.tabular(node.args[0], input_rel)
        fn = self.lets.get(node.name)
        if isinstance(fn, UserFunction):
            return self.call_user_tabular(node, fn, list(node.args), input_rel)
        raise unsupported(node, f"'{node.name}' is not a tabular function", code="UnknownFunction")

    # --- results ---------------------------------------------------------------------------

    def result_table(self, relation: Relation, name: str) -> CompiledTable:
        """``relation`` as a finished result table named ``name`` (passes run, SQL rendered)."""
        return result_table(name, relation, self.ctes, self.stored_columns)


def _declared_paths(absent: dict[str, str], bag: str) -> tuple[str, ...]:
    """The declared typed paths of a stored bag, as the table's absence facts name them
    (``resource.service.name``: storage/schema.py ABSENCE)."""
    prefix = f"{bag}."
    return tuple(sorted(key[len(prefix) :] for key in absent if key.startswith(prefix)))


def absent_as_null(
    name: str,
    kql_type: str,
    absent: str | None,
    computed: str | None = None,
    parts: tuple[str, ...] = (),
    typed_paths: tuple[str, ...] = (),
) -> S.Expr:
    """A stored column as KQL reads it: an absent field is null, however it is stored.

    A whole bag or array reads as JSON text; one stored empty (``{}``, ``[]``: a record without
    attributes, a span without events) is an absent field, so null. A bag's declared typed
    paths (``typed_paths``: ``resource.service.name``) appear in its text only where the record
    has them: a row that lacks one is cast to an untyped bag first (5× the cost of the text,
    paid only by such rows: ClickHouse evaluates ``if`` branches lazily). A column the table
    computes on read (``computed``: the catalogue's expression, ``$raw``) is that expression,
    with the stored columns that hold its distinct values (``parts``, for ``dcount``).
    """
    expr: S.Expr = S.Col(name) if computed is None else S.Computed(S.verbatim(computed), parts)
    if kql_type == "dynamic":
        if typed_paths:
            unset = [S.IsNull(S.SubColumn(name, tuple(p.split(".")))) for p in typed_paths]
            n = len(unset)
            expr = T(
                "if(" + " OR ".join(f"{{{i}}}" for i in range(n)) + ", "
                f"toJSONString(CAST({{{n}}}, 'JSON')), toJSONString({{{n}}}))",
                *unset,
                expr,
            )
        else:
            expr = T("toJSONString({0})", expr)
        if absent in ("[]", "{}"):
            expr = T("nullIf({0}, " + ("'[]'" if absent == "[]" else "'{{}}'") + ")", expr)
    elif absent == "''":
        expr = T("nullIf({0}, '')", expr)
    return expr


def _as_declared(param: K.Param, value: Typed) -> Typed:
    """An argument as its parameter's declared type (``let f = (a:real) {a}; f(1)`` is 1.0)."""
    if param.type and param.type not in ("dynamic", "") and value.type != param.type:
        with contextlib.suppress(KeyError):
            return cast_to(value, normalize_kql_type(param.type))
    return value


def _argument(
    node: K.Node,
    param: K.Param,
    params: list[K.Param],
    positional: list[K.Expr],
    named: dict[str, K.Expr],
) -> K.Expr:
    """The argument a call gives ``param``: by name, else the next positional, else its default."""
    arg: K.Expr | None
    if param.name in named:
        arg = named[param.name]
    else:
        # Positional arguments fill the parameters not given by name, in order.
        slot = [p.name for p in params if p.name not in named].index(param.name)
        arg = positional[slot] if slot < len(positional) else param.default
    if arg is None:
        raise unsupported(node, f"missing argument '{param.name}'", code="WrongArgumentCount")
    return arg
