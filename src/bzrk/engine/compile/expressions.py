"""Scalar KQL expressions → typed ClickHouse SQL, with KQL's operator semantics.

The compiler types every expression itself (literal types, column types of the input,
function result types from :mod:`bzrk.engine.compile.functions`), because the SQL it must
emit depends on them: ``datetime - datetime`` is a timespan in ticks, ``%`` is a mathematical
modulo, ``/`` on integers truncates, ``has`` matches whole terms, strings are never null.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.typed import (
    NUMERIC_RANK,
    T,
    Typed,
    cast_to,
    from_dynamic,
    from_ticks,
    json_or_null_literal,
    lit,
    ticks,
    to_json,
    to_string,
    typed_null,
    widest,
)
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K

_ALNUM = re.compile(r"^[A-Za-z0-9]+$")
_DATE_PARTS = {
    "year": ("toYear", 0),
    "quarter": ("toQuarter", 0),
    "month": ("toMonth", 0),
    "week_of_year": ("toISOWeek", 0),
    "week": ("toISOWeek", 0),
    "day": ("toDayOfMonth", 0),
    "dayofyear": ("toDayOfYear", 0),
    "hour": ("toHour", 0),
    "minute": ("toMinute", 0),
    "second": ("toSecond", 0),
}
_UNIT_TICKS = {
    "nanosecond": 0,
    "microsecond": 10,
    "millisecond": 10_000,
    "second": 10_000_000,
    "minute": 600_000_000,
    "hour": 36_000_000_000,
    "day": 864_000_000_000,
    "week": 6_048_000_000_000,
}


@dataclass
class Scope:
    """What names mean where an expression is compiled."""

    columns: dict[str, Typed] = field(default_factory=dict)
    lets: Mapping[str, Any] = field(default_factory=dict)
    # The operator's input row, when it differs from `columns` (extend items add to columns).
    input_columns: dict[str, Typed] | None = None
    row_window: Callable[[str, list[Typed], K.Call], Typed] | None = None


class ExprCompiler:
    """Compiles one scalar expression tree in a :class:`Scope`."""

    def __init__(self, scope: Scope, *, aggregates: Any = None) -> None:
        self.scope = scope
        self.aggregates = aggregates  # an AggregateContext inside summarize, else None

    # --- entry ---------------------------------------------------------------------------

    def compile(self, node: K.Expr) -> Typed:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise unsupported(node, f"{type(node).__name__} expressions are not supported")
        return method(node)

    def as_bool(self, value: Typed) -> S.Expr:
        if value.type == "bool":
            return value.sql
        if value.type == "dynamic":
            return from_dynamic(value.sql, "bool").sql
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
            inline = self.scope.lets.get("$inline")
            if (
                inline is not None
                and getattr(value, "params", None) == ()
                and hasattr(value, "body")
            ):
                # A function without parameters may be named without parentheses.
                from bzrk.kql import syntax as K

                return inline(self, K.Call(node.span, name, ()), value)
            raise unsupported(node, f"'{name}' is not a scalar value here")
        lowered = name.lower()
        if lowered in ("true", "false"):
            return Typed(lit(lowered == "true"), "bool")
        raise unsupported(node, f"unknown name '{name}'", code="UnknownName")

    def _Paren(self, node: K.Paren) -> Typed:
        return self.compile(node.expr)

    def _Unary(self, node: K.Unary) -> Typed:
        value = self.compile(node.operand)
        if node.op == "-":
            if value.type == "string":
                raise unsupported(node, "cannot negate a string")
            if value.type == "int":
                return Typed(T("toInt64(-{0})", value.sql), "long")
            return Typed(S.Neg(value.sql), value.type)
        return value

    def _TypeOf(self, node: K.TypeOf) -> Typed:
        # Only meaningful as a type argument (extract(..., typeof(int))); builders read the node.
        return Typed(lit(node.type), "string")

    # --- dynamic access ------------------------------------------------------------------

    def _Member(self, node: K.Member) -> Typed:
        target = node.target
        if isinstance(target, K.NameRef) and target.name in ("$left", "$right"):
            side = self.scope.lets.get(target.name)
            if isinstance(side, dict) and node.name in side:
                return side[node.name]
            raise unsupported(node, f"unknown column {target.name}.{node.name}", code="UnknownName")
        base = self.compile(target)
        native = bag_paths.member(base.sql, (node.name,))
        if native is not None:
            return Typed(native, "dynamic")
        if base.type != "dynamic":
            base = Typed(to_json(base), "dynamic")
        return Typed(T("nullIf(JSONExtractRaw({0}, {1}), '')", base.sql, lit(node.name)), "dynamic")

    def _Index(self, node: K.Index) -> Typed:
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
        op = node.op
        if op in ("and", "or"):
            left, right = self.compile(node.left), self.compile(node.right)
            return Typed(S.BinOp(op.upper(), self.as_bool(left), self.as_bool(right)), "bool")
        left, right = self.compile(node.left), self.compile(node.right)
        if op in ("+", "-", "*", "/", "%"):
            return self.arithmetic(node, op, left, right)
        if op in ("==", "!=", "<", "<=", ">", ">=", "<>"):
            return self.compare(node, "!=" if op == "<>" else op, left, right)
        return self.string_op(op, left, right, node)

    def arithmetic(self, node: K.Node, op: str, a: Typed, b: Typed) -> Typed:
        ta, tb = a.type, b.type
        if "dynamic" in (ta, tb):
            a = from_dynamic(a.sql, "real") if ta == "dynamic" else a
            b = from_dynamic(b.sql, "real") if tb == "dynamic" else b
            if ta == "dynamic" and tb in ("int", "long"):
                a = from_dynamic(a.sql, "long") if False else a
            ta, tb = a.type, b.type
        if ta == "datetime" and tb == "timespan" and op in ("+", "-"):
            return Typed(from_ticks(S.BinOp(op, ticks(a.sql), b.sql)), "datetime")
        if ta == "timespan" and tb == "datetime" and op == "+":
            return Typed(from_ticks(S.BinOp("+", ticks(b.sql), a.sql)), "datetime")
        if ta == "datetime" and tb == "datetime" and op == "-":
            return Typed(S.BinOp("-", ticks(a.sql), ticks(b.sql)), "timespan")
        if ta == "datetime" and tb == "timespan" and op == "%":
            return Typed(
                T("if({1} = 0, NULL, positiveModulo({0}, {1}))", ticks(a.sql), b.sql), "timespan"
            )
        if ta == "timespan" and tb == "timespan":
            if op in ("+", "-"):
                return Typed(S.BinOp(op, a.sql, b.sql), "timespan")
            if op == "/":
                return Typed(T("({0} / {1})", a.sql, b.sql), "real")
            if op == "%":
                return Typed(T("(({0} % {1}) + {1}) % {1}", a.sql, b.sql), "timespan")
        if ta == "timespan" and tb in NUMERIC_RANK and op in ("*", "/"):
            return Typed(T("toInt64({0} " + op + " {1})", a.sql, b.sql), "timespan")
        if tb == "timespan" and ta in NUMERIC_RANK and op == "*":
            return Typed(T("toInt64({0} * {1})", a.sql, b.sql), "timespan")
        if ta not in NUMERIC_RANK or tb not in NUMERIC_RANK:
            if "bool" in (ta, tb):
                a = cast_to(a, "long") if ta == "bool" else a
                b = cast_to(b, "long") if tb == "bool" else b
                return self.arithmetic(node, op, a, b)
            raise unsupported(
                node, f"operator '{op}' is not defined on {ta} and {tb}", code="TypeMismatch"
            )
        result = widest(ta, tb)
        if result in ("int", "long"):
            if op == "/":
                return Typed(T("if({1} = 0, NULL, intDiv({0}, {1}))", a.sql, b.sql), "long")
            if op == "%":
                # Kusto's % is never negative: -14 % 12 == 10 and 14 % -12 == 2.
                return Typed(
                    T("if({1} = 0, NULL, positiveModulo({0}, abs({1})))", a.sql, b.sql), "long"
                )
            # Kusto promotes int arithmetic to long.
            return Typed(T("toInt64({0})", S.BinOp(op, a.sql, b.sql)), "long")
        if result == "decimal":
            return Typed(T("toDecimal128({0}, 18)", S.BinOp(op, a.sql, b.sql)), "decimal")
        fa, fb = cast_to(a, "real").sql, cast_to(b, "real").sql
        if op == "%":
            return Typed(T("({0} - {1} * floor({0} / {1}))", fa, fb), "real")
        return Typed(S.BinOp(op, fa, fb), "real")

    def compare(self, node: K.Node, op: str, a: Typed, b: Typed) -> Typed:
        sql_op = {"==": "=", "!=": "!="}.get(op, op)
        a, b = self.comparable(a, b)
        if a.type == "string" and b.type == "string":
            return Typed(S.BinOp(sql_op, a.sql, b.sql), "bool")
        if op in ("==", "!=") and (_non_null_constant(a.sql) or _non_null_constant(b.sql)):
            # Against a constant only the column can be null: == is then false, != true. The
            # plain comparison stays visible to ClickHouse's index analysis.
            default = "false" if op == "==" else "true"
            return Typed(T("ifNull({0}, " + default + ")", S.BinOp(sql_op, a.sql, b.sql)), "bool")
        if op in ("==", "!="):
            # Kusto: null == non-null is false (!= true); only null == null is null.
            return Typed(
                T(
                    "if(isNull({0}) OR isNull({1}), if(isNull({0}) AND isNull({1}), NULL, "
                    + ("false" if op == "==" else "true")
                    + "), {2})",
                    a.sql,
                    b.sql,
                    S.BinOp(sql_op, a.sql, b.sql),
                ),
                "bool",
            )
        return Typed(S.BinOp(sql_op, a.sql, b.sql), "bool")

    def comparable(self, a: Typed, b: Typed) -> tuple[Typed, Typed]:
        if a.type == b.type:
            return a, b
        if a.type == "dynamic":
            return from_dynamic(a.sql, b.type), b
        if b.type == "dynamic":
            return a, from_dynamic(b.sql, a.type)
        if a.type in NUMERIC_RANK and b.type in NUMERIC_RANK:
            w = widest(a.type, b.type)
            return cast_to(a, w), cast_to(b, w)
        if a.type == "string" or b.type == "string":
            return Typed(to_string(a), "string"), Typed(to_string(b), "string")
        if a.type == "bool" and b.type in NUMERIC_RANK:
            return cast_to(a, "long"), b
        if b.type == "bool" and a.type in NUMERIC_RANK:
            return a, cast_to(b, "long")
        return a, b

    def string_op(self, op: str, a: Typed, b: Typed, node: K.Node | None = None) -> Typed:
        negated = op.startswith("!")
        base = op[1:] if negated else op
        x, y = to_string(a), to_string(b)
        literal_needle = (
            b.sql.value if isinstance(b.sql, S.Lit) and isinstance(b.sql.value, str) else None
        )
        expr: S.Expr
        if base == "=~":
            expr = T("(lowerUTF8({0}) = lowerUTF8({1}))", x, y)
        elif base == "~":  # `!~`
            expr = T("(lowerUTF8({0}) = lowerUTF8({1}))", x, y)
            negated = True
        elif base == "contains":
            expr = T("(positionCaseInsensitiveUTF8({0}, {1}) > 0)", x, y)
        elif base == "contains_cs":
            expr = T("(position({0}, {1}) > 0)", x, y)
        elif base == "startswith":
            expr = T("startsWith(lowerUTF8({0}), lowerUTF8({1}))", x, y)
        elif base == "startswith_cs":
            expr = T("startsWith({0}, {1})", x, y)
        elif base == "endswith":
            expr = T("endsWith(lowerUTF8({0}), lowerUTF8({1}))", x, y)
        elif base == "endswith_cs":
            expr = T("endsWith({0}, {1})", x, y)
        elif base in ("has", "has_cs"):
            if literal_needle is not None and _ALNUM.match(literal_needle):
                # Case-insensitive `has` reads as hasToken over lower(): the form bzrk tables
                # index (a text index on lower(body)), so the index answers it.
                template = (
                    "hasToken(lower({0}), lower({1}))" if base == "has" else "hasToken({0}, {1})"
                )
                expr = T(template, x, y)
            else:
                flags = "(?i)" if base == "has" else ""
                expr = T(
                    "(({1} = '') OR match({0}, concat('" + flags + "(^|[^[:alnum:]])', "
                    "if(match({1}, '^[[:alnum:]]'), '', ''), "
                    "replaceRegexpAll({1}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1'), "
                    "'($|[^[:alnum:]])')))",
                    x,
                    y,
                )
        elif base in ("hasprefix", "hasprefix_cs"):
            flags = "(?i)" if base == "hasprefix" else ""
            expr = T(
                "match({0}, concat('" + flags + "(^|[^[:alnum:]])', "
                "replaceRegexpAll({1}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1')))",
                x,
                y,
            )
        elif base in ("hassuffix", "hassuffix_cs"):
            flags = "(?i)" if base == "hassuffix" else ""
            expr = T(
                "match({0}, concat('" + flags + "', "
                "replaceRegexpAll({1}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1'), '($|[^[:alnum:]])'))",
                x,
                y,
            )
        elif base == "matches regex":
            expr = T("match({0}, {1})", x, y)
        elif base == "like":
            expr = T("({0} LIKE {1})", x, y)
        else:
            raise (
                unsupported(node, f"operator '{op}' is not supported")
                if node is not None
                else ValueError(op)
            )
        return Typed(S.Not(expr) if negated else expr, "bool")

    def _InList(self, node: K.InList) -> Typed:
        op = node.op
        negated = op.startswith("!")
        base = op[1:] if negated else op
        left = self.compile(node.left)
        values: list[Typed] = []
        subquery: S.Query | None = None
        for item in node.items:
            if isinstance(item, K.Pipeline) or self._is_tabular(item):
                subquery = self.tabular_values(item)
                continue
            value = self.compile(item)
            if value.type == "dynamic" and isinstance(item, K.Literal | K.Call | K.NameRef):
                values.append(value)
            else:
                values.append(value)
        if base in ("in", "in~"):
            return self._in(node, left, values, subquery, base == "in~", negated)
        if base.startswith("has_any") or base.startswith("has_all"):
            mode_all = base.startswith("has_all")
            cs = base.endswith("_cs")
            parts = [
                self.string_op("has_cs" if cs else "has", left, v, node).sql
                for v in self._expand_dynamic(values)
            ]
            if not parts:
                return Typed(lit(mode_all), "bool")
            expr = parts[0]
            for p in parts[1:]:
                expr = S.BinOp("AND" if mode_all else "OR", expr, p)
            return Typed(S.Not(expr) if negated else expr, "bool")
        raise unsupported(node, f"operator '{op}' is not supported")

    def _expand_dynamic(self, values: list[Typed]) -> list[Typed]:
        out: list[Typed] = []
        for v in values:
            if v.type == "dynamic" and isinstance(v.sql, S.Lit) and isinstance(v.sql.value, str):
                parsed = json.loads(v.sql.value)
                if isinstance(parsed, list):
                    out.extend(literal_from_json(x) for x in parsed)
                    continue
            out.append(v)
        return out

    def _in(
        self,
        node: K.Node,
        left: Typed,
        values: list[Typed],
        subquery: S.Query | None,
        insensitive: bool,
        negated: bool,
    ) -> Typed:
        values = self._expand_dynamic(values)
        parts: list[S.Expr] = []
        if subquery is not None:
            target = to_string(left) if left.type in ("string", "dynamic") else left.sql
            if insensitive:
                parts.append(
                    T(
                        "(lowerUTF8({0}) IN (SELECT lowerUTF8(toString(*)) FROM ({1})))",
                        target,
                        S.ScalarSubquery(subquery),
                    )
                )
            else:
                parts.append(S.InList(target, subquery))
        array_values = [v for v in values if v.type == "dynamic" and not isinstance(v.sql, S.Lit)]
        plain = [v for v in values if v not in array_values]
        if plain:
            types = {v.type for v in plain}
            if left.type == "string" or "string" in types or left.type == "dynamic":
                lhs = to_string(left)
                items = [to_string(v) for v in plain]
                if insensitive:
                    lhs = T("lowerUTF8({0})", lhs)
                    items = [T("lowerUTF8({0})", i) for i in items]
                parts.append(S.InList(lhs, items))
            else:
                target_type = widest(left.type, *types) if left.type in NUMERIC_RANK else left.type
                parts.append(
                    S.InList(
                        cast_to(left, target_type).sql, [cast_to(v, target_type).sql for v in plain]
                    )
                )
        for arr in array_values:
            needle = to_string(left)
            if insensitive:
                parts.append(
                    T(
                        "has(arrayMap(x -> lowerUTF8("
                        + _dyn_text("x")
                        + "), JSONExtractArrayRaw({0})), lowerUTF8({1}))",
                        arr.sql,
                        needle,
                    )
                )
            else:
                parts.append(
                    T(
                        "has(arrayMap(x -> " + _dyn_text("x") + ", JSONExtractArrayRaw({0})), {1})",
                        arr.sql,
                        needle,
                    )
                )
        if not parts:
            return Typed(lit(negated), "bool")
        expr = parts[0]
        for p in parts[1:]:
            expr = S.BinOp("OR", expr, p)
        return Typed(S.Not(expr) if negated else expr, "bool")

    def _is_tabular(self, item: K.Expr) -> bool:
        if isinstance(item, K.NameRef):
            value = self.scope.lets.get(item.name)
            return value is not None and not isinstance(value, Typed) and hasattr(value, "columns")
        return False

    def tabular_values(self, item: K.Expr) -> S.Query:
        compile_tabular = self.scope.lets.get("$tabular")
        if compile_tabular is None:
            raise unsupported(item, "a tabular expression is not allowed here")
        relation = compile_tabular(item)
        first = relation.columns[0]
        return S.Select(columns=[(S.Col(first[0]), None)], from_=relation.source())

    def _Between(self, node: K.Between) -> Typed:
        value = self.compile(node.value)
        low, high = self.compile(node.low), self.compile(node.high)
        if value.type == "datetime" and high.type == "timespan":
            high = Typed(from_ticks(S.BinOp("+", ticks(low.sql), high.sql)), "datetime")
        a, lo = self.comparable(value, low)
        a2, hi = self.comparable(value, high)
        expr = S.BinOp("AND", S.BinOp(">=", a.sql, lo.sql), S.BinOp("<=", a2.sql, hi.sql))
        return Typed(S.Not(expr) if node.negated else expr, "bool")

    # --- calls ---------------------------------------------------------------------------

    def _Call(self, node: K.Call) -> Typed:
        from bzrk.engine.compile.functions import lookup

        name = node.name
        if node.target is not None:
            raise unsupported(node, f"dotted call '{name}' is not supported")
        user = self.scope.lets.get(name)
        if user is not None and hasattr(user, "params") and hasattr(user, "body"):
            inline = self.scope.lets.get("$inline")
            if inline is not None:
                return inline(self, node, user)
        if self.aggregates is not None:
            handled = self.aggregates.try_aggregate(self, node)
            if handled is not None:
                return handled
        if self.scope.row_window is not None and name in WINDOW_FUNCTIONS:
            return self.scope.row_window(name, [self.compile(a) for a in node.args], node)
        special = _SPECIAL.get(name)
        if special is not None:
            return special(self, node)
        builder = lookup(name)
        if builder is None:
            raise unsupported(node, f"function '{name}' is not supported", code="UnknownFunction")
        args = [self.compile(a) for a in node.args]
        try:
            return builder(self, args, node)
        except IndexError as exc:
            raise unsupported(
                node, f"wrong number of arguments to '{name}'", code="WrongArgumentCount"
            ) from exc

    # --- helpers used by the function table ------------------------------------------------

    def type_arg(self, node: K.Expr) -> str:
        if isinstance(node, K.TypeOf):
            return normalize_kql_type(node.type)
        if isinstance(node, K.Literal) and isinstance(node.value, str):
            return normalize_kql_type(node.value)
        raise unsupported(node, "expected typeof(...)")

    def unify(self, values: list[Typed]) -> list[Typed]:
        types = [v.type for v in values]
        non_null = [v for v in values if not _is_null_literal(v)]
        if not non_null:
            return values
        target = non_null[0].type
        if all(t in NUMERIC_RANK for t in (v.type for v in non_null)):
            target = widest(*(v.type for v in non_null))
        elif any(v.type != target for v in non_null):
            if "dynamic" in types:
                target = "dynamic"
            elif "string" in types:
                target = "string"
        out = []
        for v in values:
            if _is_null_literal(v):
                out.append(typed_null(target))
            else:
                out.append(cast_to(v, target))
        return out

    def parse_timespan(self, text: S.Expr) -> Typed:
        # [-][d.]hh:mm[:ss[.fffffff]] — the clock form KQL's totimespan accepts.
        return Typed(
            T(
                "if(match({0}, '^\\\\s*-?(\\\\d+\\\\.)?\\\\d{{1,2}}:\\\\d{{1,2}}(:\\\\d{{1,2}}(\\\\.\\\\d{{1,7}})?)?\\\\s*$'), "
                "(if(startsWith(trimBoth({0}), '-'), -1, 1) * ("
                "toInt64OrZero(extract({0}, '(\\\\d+)\\\\.\\\\d{{1,2}}:')) * 864000000000 + "
                "toInt64OrZero(extract({0}, '(\\\\d{{1,2}}):\\\\d{{1,2}}')) * 36000000000 + "
                "toInt64OrZero(extract({0}, '\\\\d{{1,2}}:(\\\\d{{1,2}})')) * 600000000 + "
                "toInt64OrZero(extract({0}, '\\\\d{{1,2}}:\\\\d{{1,2}}:(\\\\d{{1,2}})')) * 10000000 + "
                "toInt64OrZero(rightPad(extract({0}, ':\\\\d{{1,2}}\\\\.(\\\\d{{1,7}})'), 7, '0')))), NULL)",
                text,
            ),
            "timespan",
        )

    def parse_json(self, value: Typed) -> Typed:
        if value.type == "dynamic":
            return value
        if value.type == "string":
            if isinstance(value.sql, S.Lit) and isinstance(value.sql.value, str):
                if not value.sql.value.strip():
                    return literal("dynamic", None)
                try:
                    parsed = json.loads(value.sql.value)
                except ValueError:
                    return Typed(T("toJSONString({0})", value.sql), "dynamic")
                return literal("dynamic", parsed)
            # Empty text is null; text that is not JSON stays a string value.
            return Typed(
                T(
                    "if(trimBoth({0}) = '', NULL, if(isValidJSON({0}), {0}, toJSONString({0})))",
                    value.sql,
                ),
                "dynamic",
            )
        return Typed(to_json(value), "dynamic")

    def datetime_add(self, part: Typed, amount: Typed, dt: Typed) -> Typed:
        unit = _const_string(part)
        n = cast_to(amount, "long").sql
        if unit in _UNIT_TICKS:
            step = _UNIT_TICKS[unit]
            delta = T("intDiv({0}, 100)", n) if step == 0 else T("{0} * " + str(step), n)
            return Typed(from_ticks(S.BinOp("+", ticks(dt.sql), delta)), "datetime")
        fname = {"year": "addYears", "quarter": "addQuarters", "month": "addMonths"}.get(unit or "")
        if fname is None:
            raise ValueError(f"datetime_add part {unit}")
        return Typed(T(fname + "({0}, {1})", dt.sql, n), "datetime")

    def datetime_diff(self, part: Typed, a: Typed, b: Typed) -> Typed:
        unit = _const_string(part)
        if unit in _UNIT_TICKS and unit != "week":
            step = _UNIT_TICKS[unit]
            # KQL counts boundaries crossed: floor each side to the unit, then subtract.
            if step == 0:
                return Typed(T("(({0}) - ({1})) * 100", ticks(a.sql), ticks(b.sql)), "long")
            return Typed(
                T(
                    "(intDiv({0} - positiveModulo({0}, "
                    + str(step)
                    + "), "
                    + str(step)
                    + ") - intDiv({1} - positiveModulo({1}, "
                    + str(step)
                    + "), "
                    + str(step)
                    + "))",
                    ticks(a.sql),
                    ticks(b.sql),
                ),
                "long",
            )
        if unit == "week":
            # Week boundaries crossed, weeks starting on Sunday; Kusto returns it as real.
            return Typed(
                T(
                    "toFloat64(intDiv(reinterpretAsInt64(toDateTime64(toStartOfWeek({0}, 0), 7, 'UTC')) - "
                    "reinterpretAsInt64(toDateTime64(toStartOfWeek({1}, 0), 7, 'UTC')), 6048000000000))",
                    a.sql,
                    b.sql,
                ),
                "real",
            )
        name = {"year": "year", "quarter": "quarter", "month": "month"}.get(unit or "")
        if name is None:
            raise ValueError(f"datetime_diff part {unit}")
        return Typed(
            T("toInt64(dateDiff(" + S.literal_sql(name) + ", {1}, {0}))", a.sql, b.sql), "long"
        )

    def datetime_part(self, part: Typed, dt: Typed) -> Typed:
        unit = _const_string(part) or ""
        if unit in _DATE_PARTS:
            fname, _ = _DATE_PARTS[unit]
            return Typed(T("toInt64(" + fname + "({0}))", dt.sql), "long")
        if unit == "millisecond":
            return Typed(
                T("toInt64(intDiv(positiveModulo({0}, 10000000), 10000))", ticks(dt.sql)), "long"
            )
        if unit == "microsecond":
            return Typed(
                T("toInt64(intDiv(positiveModulo({0}, 10000000), 10))", ticks(dt.sql)), "long"
            )
        if unit == "nanosecond":
            return Typed(T("toInt64(positiveModulo({0}, 10000000) * 100)", ticks(dt.sql)), "long")
        raise ValueError(f"datetime_part {unit}")

    def start_of(self, unit: str, args: list[Typed]) -> Typed:
        dt = args[0].sql
        offset = cast_to(args[1], "long").sql if len(args) > 1 else None
        base = {
            "day": "toStartOfDay({0})",
            "week": "toStartOfWeek({0}, 0)",
            "month": "toStartOfMonth({0})",
            "year": "toStartOfYear({0})",
        }[unit]
        if offset is not None:
            add = {"day": "addDays", "week": "addWeeks", "month": "addMonths", "year": "addYears"}[
                unit
            ]
            base = base.replace("{0}", add + "({0}, {1})")
        return Typed(
            T(
                "toDateTime64(" + base + ", 7, 'UTC')",
                dt,
                *([offset] if offset is not None else []),
            ),
            "datetime",
        )

    def end_of(self, unit: str, args: list[Typed]) -> Typed:
        start = self.start_of(unit, args)
        add = {"day": "addDays", "week": "addWeeks", "month": "addMonths", "year": "addYears"}[unit]
        return Typed(
            from_ticks(T("reinterpretAsInt64(" + add + "({0}, 1)) - 1", start.sql)), "datetime"
        )

    def make_timespan(self, args: list[Typed]) -> Typed:
        nums = [cast_to(a, "real").sql for a in args]
        if len(args) == 2:
            return Typed(T("toInt64(({0} * 3600 + {1} * 60) * 10000000)", *nums), "timespan")
        if len(args) == 3:
            return Typed(
                T("toInt64(round(({0} * 3600 + {1} * 60 + {2}) * 10000000))", *nums), "timespan"
            )
        return Typed(
            T("toInt64(round(({0} * 86400 + {1} * 3600 + {2} * 60 + {3}) * 10000000))", *nums[:4]),
            "timespan",
        )

    def make_datetime(self, args: list[Typed]) -> Typed:
        parts = [cast_to(a, "real").sql for a in args] + [lit(0)] * (7 - len(args))
        return Typed(
            T(
                "if({1} BETWEEN 1 AND 12 AND {2} BETWEEN 1 AND 31, reinterpret(toInt64("
                "reinterpretAsInt64(toDateTime64(makeDateTime(toInt32({0}), toInt32({1}), toInt32({2}), toInt32({3}), toInt32({4}), 0, 'UTC'), 7, 'UTC')) "
                "+ toInt64(round({5} * 10000000))), 'DateTime64(7, \\'UTC\\')'), NULL)",
                *parts[:6],
            ),
            "datetime",
        )

    def format_datetime(self, dt: Typed, fmt: Typed) -> Typed:
        pattern = _const_string(fmt, lower=False)
        if pattern is None:
            raise ValueError("format_datetime needs a constant format")
        return Typed(_format_datetime_sql(dt.sql, pattern), "string")

    def format_timespan(self, ts: Typed, fmt: Typed) -> Typed:
        pattern = _const_string(fmt, lower=False)
        if pattern is None:
            raise ValueError("format_timespan needs a constant format")
        return Typed(_format_timespan_sql(ts.sql, pattern), "string")

    def array_sort(self, args: list[Typed], *, descending: bool) -> Typed:
        """array_sort_asc/desc: sort the first array, reorder the others the same way.

        A trailing bool says where nulls go (default: last). Several arrays give an array of
        the sorted arrays.
        """
        nulls_last = True
        if args and args[-1].type == "bool":
            nulls_last = not (isinstance(args[-1].sql, S.Lit) and args[-1].sql.value is False)
            args = args[:-1]
        arrays = [T("JSONExtractArrayRaw({0})", a.sql) for a in args]
        # Numbers sort numerically, other values by their JSON text (ISO datetimes sort right);
        # nulls go first or last whatever the direction.
        numbers = T(
            "arraySort(__i -> toFloat64OrZero({0}[__i]), arrayFilter(__i -> {0}[__i] != 'null' "
            "AND toFloat64OrNull({0}[__i]) IS NOT NULL, range(1, length({0}) + 1)))",
            arrays[0],
        )
        others = T(
            "arraySort(__i -> {0}[__i], arrayFilter(__i -> {0}[__i] != 'null' "
            "AND toFloat64OrNull({0}[__i]) IS NULL, range(1, length({0}) + 1)))",
            arrays[0],
        )
        if descending:
            numbers, others = T("arrayReverse({0})", numbers), T("arrayReverse({0})", others)
        values = T("arrayConcat({0}, {1})", numbers, others)
        nulls = T("arrayFilter(__i -> {0}[__i] = 'null', range(1, length({0}) + 1))", arrays[0])
        order = (
            T("arrayConcat({0}, {1})", values, nulls)
            if nulls_last
            else T("arrayConcat({1}, {0})", values, nulls)
        )
        sorted_json = [
            T(
                "concat('[', arrayStringConcat(arrayMap(__i -> {1}[__i], {0}), ','), ']')",
                order,
                arr,
            )
            for arr in arrays
        ]
        if len(sorted_json) == 1:
            return Typed(sorted_json[0], "dynamic")
        return Typed(
            T("concat('[', arrayStringConcat({0}, ','), ']')", S.Func("array", sorted_json)),
            "dynamic",
        )

    def array_shift(self, args: list[Typed], *, left: bool) -> Typed:
        arr = T("JSONExtractArrayRaw({0})", args[0].sql)
        n = cast_to(args[1], "long").sql
        fill = json_or_null_literal(args[2]) if len(args) > 2 else lit("null")
        fname = "arrayShiftLeft" if left else "arrayShiftRight"
        return Typed(
            T(
                "concat('[', arrayStringConcat(" + fname + "({0}, toInt64({1}), {2}), ','), ']')",
                arr,
                n,
                fill,
            ),
            "dynamic",
        )

    def array_split(self, args: list[Typed]) -> Typed:
        arr = T("JSONExtractArrayRaw({0})", args[0].sql)
        idx = args[1]
        if idx.type == "dynamic":
            indexes = T("arrayMap(x -> toInt64OrZero(x), JSONExtractArrayRaw({0}))", idx.sql)
        else:
            indexes = T("[toInt64({0})]", idx.sql)
        return Typed(
            T(
                "concat('[', arrayStringConcat(arrayMap(b -> concat('[', arrayStringConcat(arraySlice({0}, b.1 + 1, b.2 - b.1), ','), ']'), "
                "arrayZip(arrayConcat([toInt64(0)], arrayMap(i -> toInt64(least(greatest(if(i < 0, length({0}) + i, i), 0), length({0}))), {1})), "
                "arrayConcat(arrayMap(i -> toInt64(least(greatest(if(i < 0, length({0}) + i, i), 0), length({0}))), {1}), [toInt64(length({0}))]))), ','), ']')",
                arr,
                indexes,
            ),
            "dynamic",
        )

    def bag_merge(self, args: list[Typed]) -> Typed:
        pairs = (
            S.Func("arrayConcat", [T("JSONExtractKeysAndValuesRaw({0})", a.sql) for a in args])
            if len(args) > 1
            else T("JSONExtractKeysAndValuesRaw({0})", args[0].sql)
        )
        # First bag wins on duplicate keys.
        return Typed(
            T(
                "concat('{{', arrayStringConcat(arrayMap(kv -> concat(toJSONString(kv.1), ':', kv.2), "
                "arrayFilter((kv, i) -> indexOf(arrayMap(p -> p.1, {0}), kv.1) = i, {0}, arrayEnumerate({0}))), ','), '}}')",
                pairs,
            ),
            "dynamic",
        )

    def gettype(self, value: Typed) -> Typed:
        if value.type != "dynamic":
            name = {
                "real": "real",
                "long": "long",
                "int": "int",
                "string": "string",
                "bool": "bool",
                "datetime": "datetime",
                "timespan": "timespan",
                "guid": "guid",
                "decimal": "decimal",
            }[value.type]
            return Typed(lit(name), "string")
        return Typed(
            T(
                "multiIf(isNull({0}) OR {0} = 'null', 'null', JSONType({0}) = 'Array', 'array', JSONType({0}) = 'Object', 'dictionary', "
                "JSONType({0}) = 'String', 'string', JSONType({0}) = 'Bool', 'bool', JSONType({0}) = 'Double', 'real', 'long')",
                value.sql,
            ),
            "string",
        )

    def array_iff(self, args: list[Typed]) -> Typed:
        return Typed(
            T(
                "concat('[', arrayStringConcat(arrayMap(i -> multiIf("
                "arrayElement(JSONExtractArrayRaw({0}), i) = 'true' OR ifNull(toFloat64OrNull(arrayElement(JSONExtractArrayRaw({0}), i)), 0) != 0, "
                "ifNull(arrayElementOrNull(JSONExtractArrayRaw({1}), i), 'null'), "
                "arrayElement(JSONExtractArrayRaw({0}), i) = 'false' OR toFloat64OrNull(arrayElement(JSONExtractArrayRaw({0}), i)) = 0, "
                "ifNull(arrayElementOrNull(JSONExtractArrayRaw({2}), i), 'null'), 'null'), "
                "range(1, length(JSONExtractArrayRaw({0})) + 1)), ','), ']')",
                args[0].sql,
                _as_json_array(args[1]),
                _as_json_array(args[2]),
            ),
            "dynamic",
        )


def _as_json_array(value: Typed) -> S.Expr:
    if value.type == "dynamic":
        return value.sql
    return T(
        "concat('[', arrayStringConcat(arrayMap(i -> {0}, range(1000)), ','), ']')",
        json_or_null_literal(value),
    )


def _dyn_text(var: str) -> str:
    return (
        f"if({var} = 'null', '', if(JSONType({var}) = 'String', JSONExtractString({var}), {var}))"
    )


def _is_null_literal(value: Typed) -> bool:
    return (
        isinstance(value.sql, S.Cast)
        and isinstance(value.sql.operand, S.Lit)
        and value.sql.operand.value is None
    )


def _const_string(value: Typed, *, lower: bool = True) -> str | None:
    if isinstance(value.sql, S.Lit) and isinstance(value.sql.value, str):
        return value.sql.value.lower() if lower else value.sql.value
    return None


def literal(kql_type: str, value: Any) -> Typed:
    """A KQL literal as typed SQL (values in the engine's Python forms)."""
    kql_type = normalize_kql_type(kql_type)
    if value is None and kql_type != "dynamic":
        if kql_type == "string":
            return Typed(lit(""), "string")
        return typed_null(kql_type)
    if kql_type == "long":
        return Typed(T("toInt64({0})", lit(int(value))), "long")
    if kql_type == "int":
        return Typed(T("toInt32({0})", lit(int(value))), "int")
    if kql_type == "real":
        return Typed(T("toFloat64({0})", lit(float(value))), "real")
    if kql_type == "decimal":
        return Typed(T("toDecimal128({0}, 18)", lit(str(value))), "decimal")
    if kql_type == "bool":
        return Typed(lit(bool(value)), "bool")
    if kql_type == "string":
        return Typed(lit(str(value)), "string")
    if kql_type == "datetime":
        return Typed(from_ticks(lit(int(value))), "datetime")
    if kql_type == "timespan":
        return Typed(T("toInt64({0})", lit(int(value))), "timespan")
    if kql_type == "guid":
        return Typed(T("toUUID({0})", lit(str(value))), "guid")
    if kql_type == "dynamic":
        if value is None:
            return Typed(S.Cast(lit(None), clickhouse_type("dynamic")), "dynamic")
        return Typed(lit(json.dumps(value, separators=(",", ":"), ensure_ascii=False)), "dynamic")
    raise ValueError(kql_type)


def literal_from_json(value: Any) -> Typed:
    if isinstance(value, bool):
        return literal("bool", value)
    if isinstance(value, int):
        return literal("long", value)
    if isinstance(value, float):
        return literal("real", value)
    if isinstance(value, str):
        return literal("string", value)
    return literal("dynamic", value)


_FORMAT_TOKENS = [
    ("yyyy", "%Y"),
    ("yy", "%y"),
    ("MM", "%m"),
    ("M", "%c"),
    ("dd", "%d"),
    ("d", "%e"),
    ("HH", "%H"),
    ("H", "%k"),
    ("hh", "%I"),
    ("h", "%l"),
    ("mm", "%i"),
    ("m", "%i"),
    ("ss", "%S"),
    ("s", "%S"),
    ("tt", "%p"),
]


def _format_datetime_sql(dt: S.Expr, pattern: str) -> S.Expr:
    parts: list[S.Expr] = []
    i = 0
    text = ""
    while i < len(pattern):
        if pattern[i] == "f" or pattern[i] == "F":
            j = i
            while j < len(pattern) and pattern[j] == pattern[i]:
                j += 1
            n = j - i
            if text:
                parts.append(lit(text))
                text = ""
            frac = T(
                "leftPad(toString(positiveModulo(reinterpretAsInt64({0}), 10000000)), 7, '0')", dt
            )
            piece = T("substring({0}, 1, " + str(n) + ")", frac)
            if pattern[i] == "F":
                piece = (
                    T("trimRight(BOTH '0' FROM {0})", piece)
                    if False
                    else T("replaceRegexpOne({0}, '0+$', '')", piece)
                )
            parts.append(piece)
            i = j
            continue
        for token, spec in _FORMAT_TOKENS:
            if pattern.startswith(token, i):
                if text:
                    parts.append(lit(text))
                    text = ""
                if spec in ("%c", "%e", "%k", "%l"):
                    fname = {"%c": "toMonth", "%e": "toDayOfMonth", "%k": "toHour", "%l": "toHour"}[
                        spec
                    ]
                    if spec == "%l":
                        parts.append(
                            T("toString(if(toHour({0}) % 12 = 0, 12, toHour({0}) % 12))", dt)
                        )
                    else:
                        parts.append(T("toString(" + fname + "({0}))", dt))
                elif token == "m":
                    parts.append(T("toString(toMinute({0}))", dt))
                elif token == "s":
                    parts.append(T("toString(toSecond({0}))", dt))
                else:
                    parts.append(T("formatDateTime({0}, " + S.literal_sql(spec) + ")", dt))
                i += len(token)
                break
        else:
            text += pattern[i]
            i += 1
    if text:
        parts.append(lit(text))
    return T("if(isNull({0}), '', {1})", dt, S.Func("concat", [*parts, lit("")]))


def _format_timespan_sql(ts: S.Expr, pattern: str) -> S.Expr:
    parts: list[S.Expr] = []
    i = 0
    text = ""
    units = {
        "d": "intDiv(abs({0}), 864000000000)",
        "h": "intDiv(abs({0}), 36000000000) % 24",
        "H": "intDiv(abs({0}), 36000000000) % 24",
        "m": "intDiv(abs({0}), 600000000) % 60",
        "s": "intDiv(abs({0}), 10000000) % 60",
    }
    while i < len(pattern):
        ch = pattern[i]
        j = i
        while j < len(pattern) and pattern[j] == ch:
            j += 1
        n = j - i
        if ch in units:
            if text:
                parts.append(lit(text))
                text = ""
            parts.append(T("leftPad(toString(" + units[ch] + "), " + str(n) + ", '0')", ts))
        elif ch in "fF":
            if text:
                parts.append(lit(text))
                text = ""
            piece = T(
                "substring(leftPad(toString(abs({0}) % 10000000), 7, '0'), 1, " + str(n) + ")", ts
            )
            if ch == "F":
                piece = T("replaceRegexpOne({0}, '0+$', '')", piece)
            parts.append(piece)
        else:
            text += pattern[i:j]
        i = j
    if text:
        parts.append(lit(text))
    return T("if(isNull({0}), '', {1})", ts, S.Func("concat", [*parts, lit("")]))


def _column_ifexists(c: ExprCompiler, node: K.Call) -> Typed:
    name_value = c.compile(node.args[0])
    name = name_value.sql.value if isinstance(name_value.sql, S.Lit) else None
    if isinstance(name, str) and name in c.scope.columns:
        return c.scope.columns[name]
    return c.compile(node.args[1])


def _typed_default(c: ExprCompiler, node: K.Call) -> Typed:
    raise unsupported(node, f"'{node.name}' is not supported")


def _non_null_constant(expr: S.Expr) -> bool:
    """A literal (possibly inside a plain conversion template like ``toInt64(5)``) that is not
    null."""
    if isinstance(expr, S.Lit):
        return expr.value is not None
    if isinstance(expr, S.Template) and expr.args and "null" not in expr.text.lower():
        return all(_non_null_constant(arg) for arg in expr.args) and "(" in expr.text
    return False


def _reads_columns(expr: Any) -> bool:
    """Whether an SQL tree reads a column of the current row (subqueries aside)."""
    import dataclasses

    if isinstance(expr, S.Col):
        return True
    if isinstance(expr, S.ScalarSubquery) or not dataclasses.is_dataclass(expr):
        return False
    for f in dataclasses.fields(expr):
        value = getattr(expr, f.name)
        items = value if isinstance(value, list | tuple) else [value]
        if any(_reads_columns(v) for v in items):
            return True
    return False


def _toscalar(c: ExprCompiler, node: K.Call) -> Typed:
    compile_tabular = c.scope.lets.get("$tabular")
    if compile_tabular is None or not node.args:
        raise unsupported(node, "toscalar needs a tabular argument")
    # toscalar() is evaluated once per query: it cannot use a value of the current row (a
    # function parameter bound to a column, say).
    for ref in node.args[0].walk():
        if isinstance(ref, K.NameRef):
            bound = c.scope.lets.get(ref.name)
            if isinstance(bound, Typed) and _reads_columns(bound.sql):
                raise unsupported(
                    ref,
                    f"toscalar() cannot depend on the row value '{ref.name}'",
                    code="InvalidArgument",
                )
    if isinstance(node.args[0], K.Pipeline):
        relation = compile_tabular(node.args[0])
    else:
        try:
            relation = compile_tabular(node.args[0])
        except CompileError:
            return c.compile(node.args[0])
    name, kql_type = relation.columns[0]
    query = S.Select(columns=[(S.Col(name), None)], from_=relation.source(), limit=lit(1))
    return Typed(S.ScalarSubquery(query), kql_type)


def _pack_all(c: ExprCompiler, node: K.Call) -> Typed:
    from bzrk.engine.compile.functions import FUNCTIONS

    skip_nulls = (
        bool(node.args) and isinstance(node.args[0], K.Literal) and node.args[0].value is True
    )
    args: list[Typed] = []
    pairs = []
    row = c.scope.input_columns if c.scope.input_columns is not None else c.scope.columns
    for name, value in row.items():
        if name.startswith("__"):
            continue
        pairs.append((name, value))
    for name, value in pairs:
        args += [Typed(lit(name), "string"), value]
    bag = FUNCTIONS["bag_pack"](c, args, node)
    if skip_nulls:
        return Typed(
            T(
                "concat('{{', arrayStringConcat(arrayMap(kv -> concat(toJSONString(kv.1), ':', kv.2), "
                "arrayFilter(kv -> kv.2 NOT IN ('null', '\"\"', '{{}}', '[]'), JSONExtractKeysAndValuesRaw({0}))), ','), '}}')",
                bag.sql,
            ),
            "dynamic",
        )
    return bag


def _estimate_data_size(c: ExprCompiler, node: K.Call) -> Typed:
    from bzrk.engine.compile.functions_misc import estimate_data_size

    return estimate_data_size(c, node)


_SPECIAL: dict[str, Callable[[ExprCompiler, K.Call], Typed]] = {
    "column_ifexists": _column_ifexists,
    "estimate_data_size": _estimate_data_size,
    "toscalar": _toscalar,
    "pack_all": _pack_all,
}


def _register_specials() -> None:
    from bzrk.engine.compile.functions import _column_names_of

    _SPECIAL["column_names_of"] = _column_names_of


# The row-window functions: they need a serialized input (a `__rn` order).
WINDOW_FUNCTIONS = frozenset(
    {
        "prev",
        "next",
        "row_number",
        "row_cumsum",
        "row_rank_dense",
        "row_rank_min",
        "row_window_session",
    }
)


_register_specials()
