"""Scalar KQL expressions → typed ClickHouse SQL, with KQL's operator semantics.

The compiler types every expression itself (literal types, column types of the input,
function result types from :mod:`bzrk.engine.compile.functions.table`), because the SQL it must
emit depends on them: ``datetime - datetime`` is a timespan in ticks, ``%`` is a mathematical
modulo, ``/`` on integers truncates, ``has`` matches whole terms, strings are never null.
"""

from __future__ import annotations

from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile import annotated, bag_paths, bag_search, deadline
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions import star
from bzrk.engine.compile.expressions.special import SPECIAL
from bzrk.engine.compile.functions.dynamic import DYN_TEXT_X
from bzrk.engine.compile.functions.series.table import MULTI_COLUMN_FUNCTIONS
from bzrk.engine.compile.functions.table import lookup
from bzrk.engine.compile.functions.window import WINDOW_FUNCTIONS
from bzrk.engine.compile.literals import literal
from bzrk.engine.compile.scope import Scope
from bzrk.engine.compile.semantics import (
    arithmetic,
    as_number,
    coerce_dynamic_args,
    comparable,
    compare,
    expand_dynamic,
    in_values,
    string_op,
)
from bzrk.engine.compile.typed import (
    NUMERIC_RANK,
    T,
    Typed,
    cast_to,
    from_dynamic,
    from_ticks,
    lit,
    stored_value,
    ticks,
    to_json,
)
from bzrk.kql import catalog
from bzrk.kql import syntax as K


class ExprCompiler:
    """Compiles one scalar expression tree in a :class:`Scope`."""

    def __init__(self, scope: Scope, *, aggregates: Any = None) -> None:
        self.scope = scope
        self.aggregates = aggregates  # an AggregateContext inside summarize, else None

    # --- entry ---------------------------------------------------------------------------

    def compile(self, node: K.Expr) -> Typed:
        deadline.check()
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise unsupported(node, f"{type(node).__name__} expressions are not supported")
        return method(node)

    def as_bool(self, value: Typed) -> S.Expr:
        if value.type == "bool":
            return value.sql
        if value.type == "dynamic":
            # Berserk's asbool: a stored bool; the string "true" or a number is not one (it
            # was converted, though `attributes.b == true` already compared the stored bool)
            return stored_value(value.sql, "bool")
        if value.type in NUMERIC_RANK:
            return T("({0} != 0)", value.sql)
        if value.type == "string":
            return T("(lower({0}) = 'true')", value.sql)
        return value.sql

    # --- leaves --------------------------------------------------------------------------

    def _Literal(self, node: K.Literal) -> Typed:
        return literal(node.type, node.value)

    def _NameRef(self, node: K.NameRef) -> Typed:
        name = node.name
        if name in self.scope.columns:
            return self.scope.columns[name]
        if name in self.scope.lets:
            value = self.scope.lets[name]
            if isinstance(value, Typed):
                return value
            host = self.scope.host
            if host is not None and getattr(value, "params", None) == () and hasattr(value, "body"):
                # A function without parameters may be named without parentheses.
                return host.inline_function(self, K.Call(node.span, name, ()), value)
            raise unsupported(node, f"'{name}' is not a scalar value here")
        lowered = name.lower()
        if lowered in ("true", "false"):
            return Typed(lit(lowered == "true"), "bool")
        if bag_paths.RAW in self.scope.columns and not name.startswith("$"):
            # Permissive resolution: a name that is no column reads the record's field
            # (`where level == "INFO"` is `$raw.level`).
            return self._Member(K.Member(node.span, K.NameRef(node.span, bag_paths.RAW), name))
        raise unsupported(node, f"unknown name '{name}'", code="UnknownName")

    def _NamedArg(self, node: K.NamedArg) -> Typed:
        # `sum(x = a)`, `arg_min(t, service = …)`: the name names the result column (the
        # binder's rule); a built-in's arguments are positional whatever their names, as
        # Kusto.Language binds them.
        return self.compile(node.value)

    def _Paren(self, node: K.Paren) -> Typed:
        return self.compile(node.expr)

    def _Unary(self, node: K.Unary) -> Typed:
        value = self.compile(node.operand)
        if node.op == "-":
            if value.type == "string":
                raise unsupported(node, "cannot negate a string")
            if value.type == "int":
                return Typed(T("toInt64(-{0})", value.sql), "long")
            if value.type == "dynamic":  # an attribute's number, as binary arithmetic reads it
                value = as_number(value)
            return Typed(S.Neg(value.sql), value.type)
        return value

    def _TypeOf(self, node: K.TypeOf) -> Typed:
        # Only meaningful as a type argument (extract(..., typeof(int))); builders read the node.
        return Typed(lit(node.type), "string")

    # --- dynamic access ------------------------------------------------------------------

    def _Member(self, node: K.Member) -> Typed:
        if star.has_wildcard(node):
            return star.values(self, node)
        target = node.target
        if isinstance(target, K.NameRef) and target.name in ("$left", "$right"):
            side = self.scope.lets.get(target.name)
            if isinstance(side, dict) and node.name in side:
                return side[node.name]
            raise unsupported(node, f"unknown column {target.name}.{node.name}", code="UnknownName")
        dotted = K.dotted_name(node)
        if dotted is not None and dotted in self.scope.columns:
            return self.scope.columns[dotted]  # a column whose name has a dot
        raw = self._raw_member(node)
        if raw is not None:
            return raw
        value = self._member(self.compile(target), node.name)
        return annotated.typed_member(self.scope.annotations, node, value)

    def _member(self, base: Typed, name: str) -> Typed:
        native = bag_paths.member(base.sql, (name,))
        if native is not None:
            return Typed(native, "dynamic")
        if base.type != "dynamic":
            base = Typed(to_json(base), "dynamic")
        return Typed(T("nullIf(JSONExtractRaw({0}, {1}), '')", base.sql, lit(name)), "dynamic")

    def _Index(self, node: K.Index) -> Typed:
        if star.has_wildcard(node):
            return star.values(self, node)
        raw = self._raw_member(node)
        if raw is not None:
            return raw
        return annotated.typed_member(self.scope.annotations, node, self._index(node))

    def _raw_member(self, node: K.Member | K.Index) -> Typed | None:
        """``$raw.<bag>.<path>`` read from the bag's native path in one step."""
        raw = self.scope.columns.get(bag_paths.RAW)
        native = bag_paths.raw_member(raw.sql if raw is not None else None, node)
        return None if native is None else Typed(native, "dynamic")

    def _index(self, node: K.Index) -> Typed:
        base = self.compile(node.target)
        key = bag_paths.index_key(node.index)
        native = bag_paths.member(base.sql, key) if key is not None else None
        if native is not None:
            return Typed(native, "dynamic")
        index = self.compile(node.index)
        if base.type != "dynamic":
            base = Typed(to_json(base), "dynamic")
        if index.type == "string":
            key = node.index.value if isinstance(node.index, K.Literal) else None
            if isinstance(key, str) and "." in key.strip("."):
                # Bags keep OTel's dotted keys ("service.name") as nested paths (ClickHouse JSON
                # splits them), so a dotted key is read flat first, then as that nested path.
                parts = [p for p in key.split(".") if p]
                path = ", ".join("{" + str(i + 2) + "}" for i in range(len(parts)))
                template = (
                    "coalesce(nullIf(JSONExtractRaw({0}, {1}), ''), "
                    f"nullIf(JSONExtractRaw({{0}}, {path}), ''))"
                )
                return Typed(T(template, base.sql, index.sql, *(lit(p) for p in parts)), "dynamic")
            return Typed(T("nullIf(JSONExtractRaw({0}, {1}), '')", base.sql, index.sql), "dynamic")
        if index.type == "dynamic":
            index = from_dynamic(index.sql, "long")
        i = cast_to(index, "long").sql
        return Typed(
            T("nullIf(JSONExtractRaw({0}, toInt64(if({1} >= 0, {1} + 1, {1}))), '')", base.sql, i),
            "dynamic",
        )

    # --- operators -----------------------------------------------------------------------

    def _Binary(self, node: K.Binary) -> Typed:
        if isinstance(node.left, K.Star):
            return star.any_column(self, node)
        if star.has_wildcard(node.left) or star.has_wildcard(node.right):
            return star.any_element(self, node)
        op = node.op
        if op in ("and", "or"):
            left, right = self.compile(node.left), self.compile(node.right)
            return Typed(S.BinOp(op.upper(), self.as_bool(left), self.as_bool(right)), "bool")
        left, right = self.compile(node.left), self.compile(node.right)
        if op in ("+", "-", "*", "/", "%"):
            return arithmetic(node, op, left, right)
        if op in ("==", "!=", "<", "<=", ">", ">=", "<>"):
            return compare(node, "!=" if op == "<>" else op, left, right)
        return bag_search.string_test(op, left, right, node)

    def _InList(self, node: K.InList) -> Typed:
        if star.has_wildcard(node.left):
            return star.any_element(self, node)
        op = node.op
        negated = op.startswith("!")
        base = op[1:] if negated else op
        left = self.compile(node.left)
        values: list[Typed] = []
        subquery: S.Query | None = None
        for item in node.items:
            while isinstance(item, K.Paren):  # `in ((T | where …))`, as the reference writes it
                item = item.expr
            if isinstance(item, K.Pipeline) or self._is_tabular(item):
                subquery = self.tabular_values(item)
                continue
            values.append(self.compile(item))
        if base in ("in", "in~"):
            return in_values(node, left, values, subquery, base == "in~", negated)
        if base.startswith("has_any") or base.startswith("has_all"):
            return self._has_any_all(node, left, values, subquery, base, negated)
        raise unsupported(node, f"operator '{op}' is not supported")

    def _has_any_all(
        self,
        node: K.InList,
        left: Typed,
        values: list[Typed],
        subquery: S.Query | None,
        base: str,
        negated: bool,
    ) -> Typed:
        """``has_any`` / ``has_all`` over literal terms, arrays known only when the query runs
        (a column, ``toscalar``, ``pack_array``) and a table's first column."""
        mode_all = base.startswith("has_all")
        op = "has_cs" if base.endswith("_cs") else "has"
        parts: list[S.Expr] = []
        for value in expand_dynamic(values):
            if value.type != "dynamic" or isinstance(value.sql, S.Lit):
                parts.append(bag_search.string_test(op, left, value, node).sql)
                continue
            terms = T("arrayMap(x -> " + DYN_TEXT_X + ", JSONExtractArrayRaw({0}))", value.sql)
            parts.append(self._each_term(op, left, terms, mode_all, node))
        if subquery is not None:
            terms = T("(SELECT groupArray(toString(*)) FROM ({0}))", S.ScalarSubquery(subquery))
            parts.append(self._each_term(op, left, terms, mode_all, node))
        if not parts:
            return Typed(lit(mode_all), "bool")
        expr = parts[0]
        for p in parts[1:]:
            expr = S.BinOp("AND" if mode_all else "OR", expr, p)
        return Typed(S.Not(expr) if negated else expr, "bool")

    @staticmethod
    def _each_term(op: str, left: Typed, terms: S.Expr, every: bool, node: K.Node) -> S.Expr:
        term = Typed(T("__term"), "string")
        test = string_op(op, left, term, node).sql
        return T(("arrayAll" if every else "arrayExists") + "(__term -> {0}, {1})", test, terms)

    def _is_tabular(self, item: K.Expr) -> bool:
        if isinstance(item, K.NameRef):
            value = self.scope.lets.get(item.name)
            return value is not None and not isinstance(value, Typed) and hasattr(value, "columns")
        return False

    def tabular_values(self, item: K.Expr) -> S.Query:
        host = self.scope.host
        if host is None:
            raise unsupported(item, "a tabular expression is not allowed here")
        relation = host.tabular(item)
        first = relation.columns[0]
        return S.Select(columns=[(S.Col(first[0]), None)], from_=relation.source())

    def _Between(self, node: K.Between) -> Typed:
        value = self.compile(node.value)
        low, high = self.compile(node.low), self.compile(node.high)
        if (
            value.type in ("datetime", "dynamic")
            and low.type == "datetime"
            and high.type == "timespan"
        ):
            high = Typed(from_ticks(S.BinOp("+", ticks(low.sql), high.sql)), "datetime")
        if value.type == "dynamic":
            # an attribute is in range by its stored type, as `>=` and `<=` compare it: the
            # string "5" is not between 1 and 6 (it was converted)
            above, below = compare(node, ">=", value, low), compare(node, "<=", value, high)
            expr = S.BinOp("AND", above.sql, below.sql)
            return Typed(S.Not(expr) if node.negated else expr, "bool")
        a, lo = comparable(value, low)
        a2, hi = comparable(value, high)
        expr = S.BinOp("AND", S.BinOp(">=", a.sql, lo.sql), S.BinOp("<=", a2.sql, hi.sql))
        return Typed(S.Not(expr) if node.negated else expr, "bool")

    # --- calls ---------------------------------------------------------------------------

    def _Call(self, node: K.Call) -> Typed:
        name = node.name
        if node.target is not None:
            raise unsupported(node, f"dotted call '{name}' is not supported")
        user = self.scope.lets.get(name)
        if user is not None and hasattr(user, "params") and hasattr(user, "body"):
            host = self.scope.host
            if host is not None:
                return host.inline_function(self, node, user)
        if self.aggregates is not None:
            handled = self.aggregates.try_aggregate(self, node)
            if handled is not None:
                return handled
        if self.scope.row_window is not None and name in WINDOW_FUNCTIONS:
            return self.scope.row_window(name, [self.compile(a) for a in node.args], node)
        special = SPECIAL.get(name)
        if special is not None:
            return special(self, node)
        builder = lookup(name)
        if builder is None and name in MULTI_COLUMN_FUNCTIONS:
            raise unsupported(
                node,
                f"{name}() gives several columns: use it as a whole extend or project item, "
                f"as in extend (a, b) = {name}(…)",
            )
        if builder is None:
            raise unsupported(node, f"function '{name}' is not supported", code="UnknownFunction")
        args = coerce_dynamic_args(
            catalog.lookup_function(name), [self.compile(a) for a in node.args]
        )
        try:
            return builder(self, args, node)
        except IndexError as exc:
            raise unsupported(
                node, f"wrong number of arguments to '{name}'", code="WrongArgumentCount"
            ) from exc
        except ValueError as exc:  # a translation refusing an argument (a bad part name, …)
            raise unsupported(node, f"{name}(): {exc}", code="InvalidArgument") from exc

    # --- helpers used by the function table ------------------------------------------------
