"""The binder: resolves names, types every expression and computes every operator's schema.

`Binder.bind_query` walks statements in order, keeping `let` symbols in a scope stack;
expressions bind against a row schema (`Ctx.row`). Query operators are bound by the
handlers in `binder/operators.py` (one per operator class). All results land in the
`BoundQuery` side tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Union

from bzrk.kql import syntax as s
from bzrk.kql.binder.bound import BoundQuery, CallInfo
from bzrk.kql.binder.call_rules import GRAPH_ONLY, check_shape
from bzrk.kql.binder.typing_rules import (
    arithmetic_type,
    between_defined,
    choose_signature,
    common_arguments,
    compatible,
    expected_words,
    first_mismatch,
    lacks_common_type,
    literal_shape_refused,
    mismatch_code,
    operator_defined,
    promoted,
    return_type,
)
from bzrk.kql.catalog import AGGREGATES, FUNCTIONS, Signature
from bzrk.kql.diagnostics import (
    MAX_ERRORS,
    KqlError,
    aggregate_outside_summarize,
    collected,
    element_access_not_allowed,
    incompatible_arguments,
    no_common_type,
    not_scalar,
    not_tabular,
    operator_not_defined,
    too_deep,
    too_slow,
    type_mismatch,
    unknown_function,
    unknown_name,
    unknown_table,
    wrong_argument_count,
)
from bzrk.kql.symbols import (
    BOOL,
    DYNAMIC,
    EMPTY_SCHEMA,
    LONG,
    NUMERIC_TYPES,
    RAW_COLUMN,
    REAL,
    STRING,
    UNKNOWN,
    Column,
    ColumnSymbol,
    GlobalState,
    PatternSymbol,
    RawPathSymbol,
    Symbol,
    TableRefSymbol,
    TableSchema,
    UserFunctionSymbol,
    VariableSymbol,
)

Value = Union[str, TableSchema]  # a scalar type name or a tabular schema  # noqa: UP007
# Nesting of expressions and operators the binder accepts; a chain of binary operators
# (`1 + 1 + … + 1`) counts each operator as a level. Deeper input is `QueryTooComplex`.
MAX_BIND_DEPTH = 300
# The deadline is read every this many bound nodes.
_DEADLINE_EVERY = 256
SpecialBinder = Callable[["Binder", s.Call, "Ctx"], Value]

_COMPARISON = frozenset({"==", "!=", "<>", "<", "<=", ">", ">=", "=~", "!~", "matches regex"})


@dataclass(frozen=True, slots=True)
class Ctx:
    """Where an expression binds: the row schema, join sides, and whether aggregates are allowed."""

    row: TableSchema | None = None
    left: TableSchema | None = None
    right: TableSchema | None = None
    aggregates: bool = False
    # a `search` predicate: a bare string literal in it is a term (`"a" and "b"`), a bool
    search: bool = False


class Binder:
    def __init__(self, globals: GlobalState, bound: BoundQuery) -> None:
        self.globals = globals
        self.bound = bound
        self.scopes: list[dict[str, Symbol]] = [{}]
        self.depth = 0
        self.text = ""
        # graph values (make-graph output): schema identity → (node schema, edge schema)
        self.graphs: dict[int, tuple[TableSchema, TableSchema]] = {}
        self.graph_values: list[TableSchema] = []
        # >0 inside graph-match's where/project, where the graph functions exist
        self.graph_depth = 0
        self.poisoned: set[str] = set()  # `let` names whose definition failed to bind
        # A time.monotonic() instant past which binding stops (None: no deadline).
        self.deadline: float | None = None
        self.steps = 0
        # A user function sees the names in scope where it is defined (lexical scope), so its
        # body binds once per argument signature, not once per call site: a chain of
        # functions each calling the previous one twice stays linear (it doubled per level).
        self.closures: dict[UserFunctionSymbol, list[dict[str, Symbol]]] = {}
        self.invocations: dict[tuple[object, ...], Value] = {}
        self.call_depth = 0

    # --- scopes --------------------------------------------------------------------------

    def lookup_local(self, name: str) -> Symbol | None:
        for scope in reversed(self.scopes):
            sym = scope.get(name)
            if sym is not None:
                return sym
        return None

    def local_names(self) -> list[str]:
        """The names the query declares (let, views, parameters) that are in scope here."""
        seen: dict[str, None] = {}
        for scope in self.scopes:
            seen.update(dict.fromkeys(scope))
        return list(seen)

    def declare(self, name: str, sym: Symbol) -> None:
        self.scopes[-1][name] = sym

    # --- statements ----------------------------------------------------------------------

    def bind_query(self, query: s.Query) -> None:
        errors: list[KqlError] = []
        for stmt in query.statements:
            try:
                self.bind_statement(stmt, top=True)
            except _Cascade:  # the statement uses a `let` that already failed: reported once
                if isinstance(stmt, s.LetStatement):
                    self.poisoned.add(stmt.name)
                continue
            except KqlError as err:
                if err.code == "QueryTooComplex":
                    errors.append(err)
                    break
                errors.append(err)
                if isinstance(stmt, s.LetStatement):
                    self.poisoned.add(stmt.name)
                if len(errors) >= MAX_ERRORS:
                    break
        if errors:
            raise collected(errors)

    def bind_statement(self, stmt: s.Statement, top: bool) -> Value | None:
        if isinstance(stmt, s.LetStatement):
            value = stmt.value
            if isinstance(value, s.Lambda):
                function = UserFunctionSymbol(stmt.name, value)
                self.closures[function] = [dict(scope) for scope in self.scopes]
                self.declare(stmt.name, function)
                return None
            bound = self.bind(value, Ctx())
            if isinstance(bound, TableSchema):
                self.declare(stmt.name, VariableSymbol(stmt.name, None, bound, value, "let"))
            else:
                self.declare(stmt.name, VariableSymbol(stmt.name, bound, None, value, "let"))
            return None
        if isinstance(stmt, s.DeclareParameters):
            for p in stmt.params:
                if p.default is not None:
                    self.bind(p.default, Ctx())
                self.declare(p.name, VariableSymbol(p.name, p.type, None, None, "query_parameter"))
            return None
        if isinstance(stmt, s.SetOption):
            return None
        if isinstance(stmt, s.DeclarePattern):
            self.declare(stmt.name, PatternSymbol(stmt.name, stmt))
            return None
        assert isinstance(stmt, s.ExprStatement)
        result = self.bind(stmt.expr, Ctx())
        if top:
            if isinstance(result, TableSchema):
                self.bound.results.append((stmt, result))
            else:
                self.bound.results.append((stmt, TableSchema((Column("print_0", result),))))
        return result

    # --- expressions ---------------------------------------------------------------------

    def bind(self, expr: s.Node, ctx: Ctx) -> Value:
        self.depth += 1
        if self.depth > MAX_BIND_DEPTH:
            raise too_deep().at(expr.span)
        self.steps += 1
        if (
            self.deadline is not None
            and self.steps % _DEADLINE_EVERY == 0
            and time.monotonic() > self.deadline
        ):
            raise too_slow().at(expr.span)
        try:
            method = _EXPR_BINDERS.get(type(expr))
            if method is None:
                if isinstance(expr, s.QueryOperator):
                    result: Value = self.bind_source_operator(expr, ctx)
                else:
                    raise not_scalar(self.snippet(expr)).at(expr.span)
            else:
                result = method(self, expr, ctx)
        finally:
            self.depth -= 1
        if isinstance(result, TableSchema):
            self.bound.schemas[expr] = result
        else:
            self.bound.types[expr] = result
        return result

    def scalar(self, expr: s.Node, ctx: Ctx) -> str:
        value = self.bind(expr, ctx)
        if isinstance(value, TableSchema):
            # a single-column tabular value used as a scalar (e.g. `let n = toscalar(...)` misuse)
            raise not_scalar(self.snippet(expr)).at(expr.span)
        return value

    def tabular(self, expr: s.Node, ctx: Ctx) -> TableSchema:
        value = self.bind(expr, ctx)
        if not isinstance(value, TableSchema):
            raise not_tabular(self.snippet(expr)).at(expr.span)
        return value

    def snippet(self, node: s.Node) -> str:
        return self.text[node.span.start : node.span.end]

    def _literal(self, e: s.Literal, ctx: Ctx) -> Value:
        return e.type

    def _star(self, e: s.Star, ctx: Ctx) -> Value:
        return UNKNOWN

    def _typeof(self, e: s.TypeOf, ctx: Ctx) -> Value:
        return "type"  # a type literal: only meaningful as an argument (extract, mv-apply, ...)

    def _paren(self, e: s.Paren, ctx: Ctx) -> Value:
        return self.bind(e.expr, ctx)

    def _list(self, e: s.ListExpr, ctx: Ctx) -> Value:
        for item in e.items:
            self.bind(item, ctx)
        return DYNAMIC

    def _named_arg(self, e: s.NamedArg, ctx: Ctx) -> Value:
        return self.bind(e.value, ctx)

    def _name(self, e: s.NameRef, ctx: Ctx) -> Value:
        name = e.name
        row = ctx.row
        if name in self.poisoned and self.lookup_local(name) is None:
            raise _Cascade()
        if row is not None:
            col = row.find(name)
            if col is not None:
                self.bound.symbols[e] = ColumnSymbol(col.name, col.type)
                return col.type
        sym = self.lookup_local(name)
        if sym is not None:
            self.bound.symbols[e] = sym
            if isinstance(sym, VariableSymbol):
                if sym.schema is not None:
                    return sym.schema
                return sym.type or UNKNOWN
            if isinstance(sym, UserFunctionSymbol):
                return self.invoke_user(sym, (), e, ctx, None)
            if isinstance(sym, ColumnSymbol):
                return sym.type
            if isinstance(sym, TableRefSymbol):
                return sym.table.schema
        table = self.globals.find_table(name)
        if table is not None:
            self.bound.symbols[e] = TableRefSymbol(table)
            return table.schema
        if row is not None:
            if name == RAW_COLUMN and row.raw:
                self.bound.symbols[e] = RawPathSymbol(())
                return DYNAMIC
            if row.opaque:
                self.bound.symbols[e] = ColumnSymbol(name, UNKNOWN)
                return UNKNOWN
            if row.raw and self.globals.permissive and not name.startswith("$"):
                self.bound.symbols[e] = RawPathSymbol((name,))
                return DYNAMIC
        if ctx.left is not None and name in ("$left", "$right"):
            return DYNAMIC
        if row is None and self.lookup_local("$tables_unknown") is not None:
            return TableSchema((), raw=True)
        raise unknown_name(name).at(e.span)

    def _member(self, e: s.Member, ctx: Ctx) -> Value:
        target = e.target
        if isinstance(target, s.NameRef) and target.name in ("$left", "$right"):
            side = ctx.left if target.name == "$left" else ctx.right
            if side is not None:
                col = side.find(e.name)
                if col is not None:
                    sym = ColumnSymbol(col.name, col.type, target.name[1:])
                    self.bound.symbols[e] = sym
                    return col.type
                if side.opaque or side.raw:
                    self.bound.symbols[e] = ColumnSymbol(e.name, DYNAMIC, target.name[1:])
                    return DYNAMIC
            raise unknown_name(f"{target.name}.{e.name}").at(e.span)
        if isinstance(target, s.Call) and isinstance(self.lookup_local(target.name), PatternSymbol):
            return self.invoke_pattern(target, e.name, e)
        if isinstance(target, s.Call) and target.name in ("database", "cluster"):
            self.bind(target, Ctx())
            db_name = _literal_string(target.args[0]) if target.args else None
            table = self.globals.find_table(e.name, db_name if target.name == "database" else None)
            if table is None:
                raise unknown_table(e.name).at(e.span)
            self.bound.symbols[e] = TableRefSymbol(table)
            return table.schema
        dotted = s.dotted_name(e)
        col = ctx.row.find(dotted) if dotted is not None and ctx.row is not None else None
        if col is not None:  # a column whose name has a dot (syntax.dotted_name)
            self.bound.symbols[e] = ColumnSymbol(col.name, col.type)
            return col.type
        base = self.bind(target, ctx)
        if isinstance(base, TableSchema):
            col = base.find(e.name)
            if col is not None:
                self.bound.symbols[e] = ColumnSymbol(col.name, col.type)
                return col.type
            return UNKNOWN if base.opaque else DYNAMIC
        if base not in (DYNAMIC, UNKNOWN):  # `x.a` over a long: no element to take
            raise element_access_not_allowed(base).at(e.span)
        tsym = self.bound.symbols.get(target)
        if isinstance(tsym, RawPathSymbol):
            self.bound.symbols[e] = RawPathSymbol((*tsym.path, e.name))
        return DYNAMIC if base != UNKNOWN else UNKNOWN

    def _index(self, e: s.Index, ctx: Ctx) -> Value:
        base = self.bind(e.target, ctx)
        index = self.scalar(e.index, ctx)
        if isinstance(base, TableSchema):
            return UNKNOWN
        if base not in (DYNAMIC, UNKNOWN):  # `tostring(x)[0]`, `n['a']` over a long: KS147
            raise element_access_not_allowed(base).at(e.span)
        if index not in _INDEX_TYPES:  # `a[1.5]`, `a[1h]`: Kusto's KS141
            raise type_mismatch("An element index", "int, long or string", index, "KS141").at(
                e.index.span
            )
        tsym = self.bound.symbols.get(e.target)
        key = _literal_string(e.index)
        if isinstance(tsym, RawPathSymbol) and key is not None:
            self.bound.symbols[e] = RawPathSymbol((*tsym.path, key))
        return DYNAMIC if base != UNKNOWN else UNKNOWN

    def _unary(self, e: s.Unary, ctx: Ctx) -> Value:
        t = self.scalar(e.operand, ctx)
        if t in (BOOL, "string", "guid"):
            raise type_mismatch(f"Operator '{e.op}'", "a number, timespan or datetime", t).at(
                e.span
            )
        return (
            LONG if t == "int" else t
        )  # (a negative int *literal* stays int: the parser folds it)

    def _binary(self, e: s.Binary, ctx: Ctx) -> Value:
        # long `a or b or c ...` chains are left-nested: walk the left spine iteratively so the
        # recursion depth does not grow with the chain length
        spine = [e]
        node: s.Expr = e.left
        while isinstance(node, s.Binary):
            spine.append(node)
            node = node.left
        if self.depth + len(spine) > MAX_BIND_DEPTH:
            # the engine compiles (and ClickHouse analyses) such a chain as nested calls
            raise too_deep().at(e.span)
        left = self.scalar(node, ctx)
        result: str = left
        for b in reversed(spine):
            right = self.scalar(b.right, ctx)
            if b.op in ("and", "or"):
                left, right = (
                    self._term_type(b.left, left, ctx),
                    self._term_type(b.right, right, ctx),
                )
            result = self._binary_type(b, left, right)
            if b is not e:
                self.bound.types[b] = result
            left = result
        return result

    @staticmethod
    def _term_type(node: s.Expr, t: str, ctx: Ctx) -> str:
        """A search term (a string literal joined by `and`/`or` in a `search` predicate) is a
        condition; beside `has` or `==` it stays a string."""
        if ctx.search and t == "string" and isinstance(node, s.Literal):
            return BOOL
        return t

    def _binary_type(self, e: s.Binary, left: str, right: str) -> str:
        op = e.op
        if op in ("+", "-", "*", "/", "%"):
            result = arithmetic_type(op, left, right)
            if result is None:
                raise type_mismatch(
                    f"Operator '{op}' cannot combine {left} and {right}",
                    "compatible operands",
                    f"{left}, {right}",
                ).at(e.span)
            return result
        if not operator_defined(op, left, right):
            raise operator_not_defined(op, left, right).at(e.span)
        return BOOL

    def _in(self, e: s.InList, ctx: Ctx) -> Value:
        left = self.scalar(e.left, ctx)
        if e.op.lower() not in ("in", "!in") and left not in (STRING, DYNAMIC, UNKNOWN):
            # `n has_any ('a')`, `n in~ ('a')` over a long: Kusto's KS107
            raise type_mismatch(f"The left operand of {e.op}", "string or dynamic", left).at(
                e.left.span
            )
        compares = e.op.lower() in ("in", "!in")  # `has_any` and `in~` take any values as text
        for item in e.items:
            tabular = _is_tabular_syntax(item)
            value = self.bind(item, Ctx(row=None) if tabular else ctx)
            if compares and not tabular and isinstance(value, str) and not compatible(left, value):
                # `n in ("a")` over a long: ADX compares as `==` does
                raise operator_not_defined(e.op, left, value).at(item.span)
        if e.op.lower() in _MEMBERSHIP:
            _check_homogeneous_literals(e.items)
        return BOOL

    def _between(self, e: s.Between, ctx: Ctx) -> Value:
        types = (self.scalar(e.value, ctx), self.scalar(e.low, ctx), self.scalar(e.high, ctx))
        if not between_defined(*types):
            raise operator_not_defined("!between" if e.negated else "between", *types).at(e.span)
        return BOOL

    def _lambda(self, e: s.Lambda, ctx: Ctx) -> Value:
        return UNKNOWN

    def _pipeline(self, e: s.Pipeline, ctx: Ctx) -> Value:
        from bzrk.kql.binder.operators import bind_operator

        source = e.source
        if isinstance(source, s.Star):
            schema = ctx.row if ctx.row is not None else EMPTY_SCHEMA
            self.bound.schemas[source] = schema
        elif isinstance(source, s.QueryOperator):
            schema = self.bind_source_operator(source, ctx)
        else:
            if isinstance(source, s.NameRef) and self._unresolvable_table(source.name):
                raise unknown_table(source.name).at(source.span)
            schema = self.tabular(source, Ctx())
        for op in e.operators:
            self.bound.inputs[op] = schema
            schema = bind_operator(self, op, schema)
            self.bound.schemas[op] = schema
        return schema

    def _unresolvable_table(self, name: str) -> bool:
        return self.lookup_local(name) is None and self.globals.find_table(name) is None

    def bind_source_operator(self, op: s.QueryOperator, ctx: Ctx) -> TableSchema:
        from bzrk.kql.binder.operators import bind_operator

        self.bound.inputs[op] = EMPTY_SCHEMA
        schema = bind_operator(self, op, None)
        self.bound.schemas[op] = schema
        return schema

    # --- calls ---------------------------------------------------------------------------

    def _call(self, e: s.Call, ctx: Ctx) -> Value:
        name = e.name
        if e.target is not None:
            if name == "database" or name == "cluster":
                self.bind(e.target, Ctx())
                for a in e.args:
                    self.bind(a, Ctx())
                self.bound.calls[e] = CallInfo("special", None, None, UNKNOWN)
                return UNKNOWN
            raise unknown_function(name).at(e.span)
        special = _SPECIAL_CALLS.get(name)
        if special is not None:
            return special(self, e, ctx)
        sym = self.lookup_local(name)
        if isinstance(sym, UserFunctionSymbol):
            self.bound.symbols[e] = sym
            return self.invoke_user(sym, e.args, e, ctx, None)
        if isinstance(sym, PatternSymbol):
            return self.invoke_pattern(e, None, e)
        if isinstance(sym, VariableSymbol) and sym.schema is not None and not e.args:
            return sym.schema
        fn = None
        kind = "scalar"
        if ctx.aggregates:
            fn = AGGREGATES.get(name)
            kind = "aggregate"
        if fn is None and (name not in GRAPH_ONLY or self.graph_depth):
            fn = FUNCTIONS.get(name)
            kind = "scalar"
        if fn is None:
            agg = AGGREGATES.get(name)
            if agg is not None:
                raise aggregate_outside_summarize(name).at(e.span)
            raise unknown_function(name).at(e.span)
        inner = replace(ctx, aggregates=False) if kind == "aggregate" else ctx
        arg_types: list[str] = []
        for a in e.args:
            if isinstance(a, s.Star):
                self.bound.types[a] = UNKNOWN
                arg_types.append(UNKNOWN)
                continue
            v = self.bind(a, inner)
            arg_types.append(v if isinstance(v, str) else UNKNOWN)
        sig = choose_signature(fn, arg_types)
        if sig is None:
            raise wrong_argument_count(name, len(e.args), fn.min_args, fn.max_args).at(e.span)
        check_shape(name, e.args, arg_types, e.span)
        # count(x) of any x runs in Kusto (its catalogued parameter is a bool predicate)
        mismatch = first_mismatch(sig, arg_types, declared=kind == "scalar" or name != "count")
        if mismatch is not None:
            i, param = mismatch
            if sum(1 for other in fn.signatures if other.accepts_count(len(arg_types))) > 1:
                raise incompatible_arguments(name, arg_types).at(e.span)
            raise type_mismatch(
                f"Argument '{param.name}' of {name}()",
                expected_words(param),
                arg_types[i],
                mismatch_code(param),
            ).at(e.args[i].span)
        _check_literal_shapes(name, sig, e.args)
        if lacks_common_type(sig, arg_types):
            raise no_common_type(name, common_arguments(sig, arg_types)).at(e.span)
        # a `typeof(t)` argument stands for the type it names when it decides the result type
        value_types = [
            a.type if isinstance(a, s.TypeOf) and not a.type.startswith("(") else t
            for a, t in zip(e.args, arg_types, strict=False)
        ]
        result = _custom_return(fn.name, value_types, kind) or return_type(fn, sig, value_types)
        if fn.name == "datetime_diff" and (_literal_string(e.args[0]) or "").lower() == "week":
            result = REAL  # the real engine's answer (docs-emulator datetime-diff-function-00)
        self.bound.calls[e] = CallInfo(kind, fn, sig, result)
        return result

    def invoke_pattern(self, call: s.Call, path: str | None, site: s.Node) -> Value:
        sym = self.lookup_local(call.name)
        assert isinstance(sym, PatternSymbol)
        self.bound.symbols[site] = sym
        for a in call.args:
            self.scalar(a, Ctx())
        wanted = [_literal_value(a) for a in call.args]
        chosen = None
        for case in sym.declaration.cases:
            if [_literal_value(a) for a in case.args] != wanted:
                continue
            if path is not None and (case.path is None or _literal_value(case.path) != path):
                continue
            chosen = case
            break
        if chosen is None:
            # no matching case in the query: the pattern is resolved at run time (opaque)
            return TableSchema((), opaque=True)
        self.scopes.append({})
        try:
            # The body sees the pattern's arguments and path by their declared names.
            declaration = sym.declaration
            for param, arg in zip(declaration.params, call.args, strict=False):
                self.declare(param.name, VariableSymbol(param.name, param.type, None, arg, "let"))
            for param in declaration.path_params:
                self.declare(param.name, VariableSymbol(param.name, param.type, None, None, "let"))
            if isinstance(chosen.body, s.Lambda):
                result: Value = UNKNOWN
                for stmt in chosen.body.body:
                    r = self.bind_statement(stmt, top=False)
                    if r is not None:
                        result = r
                return result
            return self.bind(chosen.body, Ctx())
        finally:
            self.scopes.pop()

    def invoke_user(
        self,
        sym: UserFunctionSymbol,
        args: tuple[s.Expr, ...],
        site: s.Node,
        ctx: Ctx,
        input_schema: TableSchema | None,
    ) -> Value:
        params = sym.declaration.params
        given = list(args)
        if input_schema is not None:
            given_types: list[Value] = [input_schema]
        else:
            given_types = []
        for a in given:
            given_types.append(self.bind(a, ctx))
        required = sum(1 for p in params if p.default is None)
        if not (required <= len(given_types) <= len(params)):
            raise wrong_argument_count(sym.name, len(given_types), required, len(params)).at(
                site.span
            )
        if self.call_depth > 64:
            raise too_deep().at(site.span)
        expressions = _padded(given, input_schema)
        _check_arguments(sym, given_types, expressions)
        key = (
            sym,
            *(_argument_key(self, v, a) for v, a in zip(given_types, expressions, strict=True)),
        )
        result = self.invocations.get(key)
        if result is None:
            result = self._bind_body(sym, given, given_types, input_schema)
            self.invocations[key] = result
        self.bound.calls[site] = CallInfo(
            "user", None, None, result if isinstance(result, str) else "table", user=sym
        )
        return result

    def _bind_body(
        self,
        sym: UserFunctionSymbol,
        given: list[s.Expr],
        given_types: list[Value],
        input_schema: TableSchema | None,
    ) -> Value:
        """Bind ``sym``'s body for one argument signature, in the scope of its definition."""
        params = sym.declaration.params
        saved = self.scopes
        self.scopes = [*self.closures.get(sym, saved), {}]
        self.call_depth += 1
        try:
            for i, p in enumerate(params):
                if i < len(given_types):
                    gv = given_types[i]
                else:
                    gv = self.bind(p.default, Ctx()) if p.default is not None else UNKNOWN
                if p.type == "table":
                    schema = gv if isinstance(gv, TableSchema) else EMPTY_SCHEMA
                    self.declare(p.name, VariableSymbol(p.name, None, schema, None, "parameter"))
                else:
                    ptype = p.type if isinstance(gv, str) else UNKNOWN
                    # the argument expression (or default) travels with the parameter, so
                    # constant arguments can be read statically (project-by-names)
                    offset = 1 if input_schema is not None else 0
                    arg = given[i - offset] if 0 <= i - offset < len(given) else p.default
                    self.declare(p.name, VariableSymbol(p.name, ptype, None, arg, "parameter"))
            result: Value = UNKNOWN
            for stmt in sym.declaration.body:
                r = self.bind_statement(stmt, top=False)
                if r is not None:
                    result = r
            return result
        finally:
            self.scopes = saved
            self.call_depth -= 1


def _check_arguments(
    sym: UserFunctionSymbol, values: list[Value], expressions: list[s.Expr | None]
) -> None:
    """Each scalar argument of a user function call fits its parameter's declared type (by
    position, or by name for ``f(c=7)``); ADX refuses ``f("x")`` for ``(a:int)``."""
    params = sym.declaration.params
    by_name = {p.name: p for p in params}
    for position, (value, expr) in enumerate(zip(values, expressions, strict=True)):
        if not isinstance(value, str) or expr is None:
            continue
        param = by_name.get(expr.name) if isinstance(expr, s.NamedArg) else None
        if param is None and not isinstance(expr, s.NamedArg) and position < len(params):
            param = params[position]
        if param is not None and not compatible(param.type, value):
            what = f"Argument '{param.name}' of {sym.name}()"
            raise type_mismatch(what, param.type, value).at(expr.span)


_SHAPES: dict[type, str] = {list: "array", dict: "bag"}  # a dynamic literal's JSON value


def _check_literal_shapes(name: str, sig: Signature, args: tuple[s.Expr, ...]) -> None:
    """A literal dynamic array or bag is refused where its parameter cannot take one:
    ``atan2(dynamic([1]), 1)``, ``array_length(dynamic({}))`` (Kusto.Language's KS137,
    KS234, …; a value of that shape is never a number, a string or the other shape)."""
    # which parameter takes which argument is ambiguous past a repeatable one
    # (array_sort_asc(a1, a2, …, nulls_last)): only kinds that take no dynamic are judged there
    variadic = any(p.repeatable for p in sig.params)
    for param, arg in zip(sig.param_for(len(args)), args, strict=False):
        if not isinstance(arg, s.Literal) or arg.type != DYNAMIC:
            continue
        if variadic and param.type_kind == "Declared":
            continue
        shape = _SHAPES.get(type(arg.value))
        expected = literal_shape_refused(param, shape) if shape else None
        if expected is not None:
            raise type_mismatch(
                f"Argument '{param.name}' of {name}()", expected, f"a dynamic {shape}"
            ).at(arg.span)


def _padded(given: list[s.Expr], input_schema: TableSchema | None) -> list[s.Expr | None]:
    """The argument expressions aligned with the argument values (None for a piped input)."""
    return [None, *given] if input_schema is not None else list(given)


def _argument_key(b: Binder, value: Value, expr: s.Expr | None) -> object:
    """What of one argument can change how a function body binds: its type or schema, and
    its constant (a literal, or the symbol a name refers to: project-by-names reads it)."""
    if isinstance(expr, s.Literal):
        return (value, "literal", expr.type, repr(expr.value))
    if isinstance(expr, s.NameRef):
        return (value, "symbol", b.bound.symbols.get(expr))
    return value


class _Cascade(Exception):  # internal control flow; never escapes the binder
    """A reference to a `let` whose definition already failed."""


def _literal_value(expr: s.Expr) -> object:
    if isinstance(expr, s.Literal):
        return expr.value
    if isinstance(expr, s.NameRef):
        return expr.name
    return None


def _literal_string(expr: s.Expr) -> str | None:
    if isinstance(expr, s.Literal) and isinstance(expr.value, str):
        return expr.value
    return None


_MEMBERSHIP = frozenset({"in", "!in", "in~", "!in~"})
# What indexes a dynamic value: a position or a key (a dynamic one is looked up at run time).
_INDEX_TYPES = frozenset({"int", "long", "string", DYNAMIC, UNKNOWN})


def _literal_family(t: str) -> str:
    return "number" if t in NUMERIC_TYPES else t


def _check_homogeneous_literals(items: tuple[s.Node, ...]) -> None:
    """`x in (1, "a")` is an error: a list of constants is of one type (ints and reals are one
    family; the vendor's scalar-operator page, and Kusto)."""
    first: s.Literal | None = None
    for item in items:
        if not isinstance(item, s.Literal) or item.value is None or item.type == DYNAMIC:
            continue
        if first is None:
            first = item
        elif _literal_family(item.type) != _literal_family(first.type):
            raise type_mismatch(
                "The values of an 'in' list must be of one type",
                first.type,
                item.type,
            ).at(item.span)


def _is_tabular_syntax(expr: s.Expr) -> bool:
    return isinstance(expr, s.Pipeline)


# Return kinds whose type follows from the argument types alone (the others are computed by
# the engine from values or are tabular).
_DETERMINED_RETURNS = frozenset(
    {
        "Declared",
        "Parameter0",
        "Parameter1",
        "Parameter2",
        "Parameter0Promoted",
        "Common",
        "CommonNonDynamic",
        "Widest",
    }
)


def scalar_result_type(name: str, args: list[str]) -> str | None:
    """The type the catalogue gives a call of the scalar function ``name`` on arguments of the
    types ``args``: the binder's own rule for a call (overload choice, return kind), or None
    where the catalogue does not decide it (unknown function or overload, a computed type).

    >>> scalar_result_type("strlen", ["string"]), scalar_result_type("abs", ["real"])
    ('long', 'real')
    """
    fn = FUNCTIONS.get(name)
    if fn is None or UNKNOWN in args:
        return None
    custom = _custom_return(name, args, "scalar")
    if custom is not None:
        return custom
    sig = choose_signature(fn, args)
    if sig is None or sig.return_kind not in _DETERMINED_RETURNS:
        return None
    result = return_type(fn, sig, args)
    return None if result == UNKNOWN else result


def _custom_return(name: str, args: list[str], kind: str) -> str | None:
    """Return types Kusto computes in code rather than declares."""
    if kind == "aggregate":
        if name in ("percentile", "percentiles", "percentilew", "percentilesw"):
            return promoted(args[0]) if args else UNKNOWN
        if name in ("take_any", "any", "arg_max", "arg_min", "anyif", "take_anyif"):
            return args[0] if args else UNKNOWN
        return None
    if name in ("pack", "bag_pack", "pack_array", "pack_dictionary"):
        return DYNAMIC
    return REAL_ENGINE_RESULTS.get(name)


# Scalar functions the real engine answers in another type than Kusto.Language declares (the
# docs-emulator corpus: A/getyear-function-00, A/hour-of-day-function-00,
# A/monthofyear-function-00, A/datetime-part-function-00, A/ceiling-function-00,
# A/jaccard-index-function-00); getmonth and week_of_year/weekofyear are declared int beside
# them and answered as long.
REAL_ENGINE_RESULTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "getyear",
            "getmonth",
            "hourofday",
            "monthofyear",
            "week_of_year",
            "weekofyear",
            "datetime_part",
            "datepart",
        ),
        "long",
    ),
    "ceiling": "real",
    "jaccard_index": "real",
}


def _toscalar(b: Binder, e: s.Call, ctx: Ctx) -> Value:
    if len(e.args) != 1:
        raise wrong_argument_count("toscalar", len(e.args), 1, 1).at(e.span)
    v = b.bind(e.args[0], Ctx())
    result = (
        v.columns[0].type
        if isinstance(v, TableSchema) and v.columns
        else (v if isinstance(v, str) else UNKNOWN)
    )
    b.bound.calls[e] = CallInfo("special", FUNCTIONS.get("toscalar"), None, result)
    return result


def _materialize(b: Binder, e: s.Call, ctx: Ctx) -> Value:
    if len(e.args) != 1:
        raise wrong_argument_count(e.name, len(e.args), 1, 1).at(e.span)
    v = b.tabular(e.args[0], Ctx())
    b.bound.calls[e] = CallInfo("special", None, None, "table")
    return v


def _table(b: Binder, e: s.Call, ctx: Ctx) -> Value:
    name = _literal_string(e.args[0]) if e.args else None
    for a in e.args:
        b.bind(a, Ctx())
    b.bound.calls[e] = CallInfo("special", None, None, "table")
    if name is None:
        raise wrong_argument_count("table", len(e.args), 1, 2).at(e.span)
    sym = b.lookup_local(name)
    if isinstance(sym, VariableSymbol) and sym.schema is not None:
        return sym.schema
    table = b.globals.find_table(name)
    if table is None:
        raise unknown_table(name).at(e.span)
    b.bound.symbols[e] = TableRefSymbol(table)
    return table.schema


def _column_ifexists(b: Binder, e: s.Call, ctx: Ctx) -> Value:
    if len(e.args) != 2:
        raise wrong_argument_count("column_ifexists", len(e.args), 2, 2).at(e.span)
    b.scalar(e.args[0], ctx)
    default = b.scalar(e.args[1], ctx)
    name = _literal_string(e.args[0])
    col = ctx.row.find(name) if (ctx.row is not None and name is not None) else None
    result = col.type if col is not None else default
    b.bound.calls[e] = CallInfo("special", FUNCTIONS.get("column_ifexists"), None, result)
    return result


def _database(b: Binder, e: s.Call, ctx: Ctx) -> Value:
    for a in e.args:
        b.bind(a, Ctx())
    b.bound.calls[e] = CallInfo("special", None, None, UNKNOWN)
    return UNKNOWN


def _dynamic_call(name: str) -> SpecialBinder:
    def bind_args(b: Binder, e: s.Call, ctx: Ctx) -> Value:
        types = [b.bind(a, ctx) for a in e.args]
        check_shape(name, e.args, [t if isinstance(t, str) else UNKNOWN for t in types], e.span)
        fn = FUNCTIONS.get(name)
        b.bound.calls[e] = CallInfo("scalar", fn, fn.signatures[0] if fn else None, DYNAMIC)
        return DYNAMIC

    return bind_args


_SPECIAL_CALLS: dict[str, SpecialBinder] = {
    "toscalar": _toscalar,
    "materialize": _materialize,
    "table": _table,
    "column_ifexists": _column_ifexists,
    "database": _database,
    "cluster": _database,
    "pack": _dynamic_call("pack"),
    "bag_pack": _dynamic_call("bag_pack"),
    "pack_array": _dynamic_call("pack_array"),
    "pack_dictionary": _dynamic_call("pack_dictionary"),
    "bag_pack_columns": _dynamic_call("bag_pack_columns"),
}

_EXPR_BINDERS: dict[type, Callable[[Binder, Any, Ctx], Value]] = {
    s.Literal: Binder._literal,
    s.NameRef: Binder._name,
    s.Star: Binder._star,
    s.TypeOf: Binder._typeof,
    s.Paren: Binder._paren,
    s.ListExpr: Binder._list,
    s.NamedArg: Binder._named_arg,
    s.Member: Binder._member,
    s.Index: Binder._index,
    s.Unary: Binder._unary,
    s.Binary: Binder._binary,
    s.InList: Binder._in,
    s.Between: Binder._between,
    s.Lambda: Binder._lambda,
    s.Pipeline: Binder._pipeline,
    s.Call: Binder._call,
}
