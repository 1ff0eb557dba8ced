"""KQL's binary operators on typed SQL: arithmetic, comparisons, string predicates, `in` lists.

Plain functions of their operands (no compiler state), so the function table can use them too:
``datetime - datetime`` is a timespan in ticks, ``%`` is a mathematical modulo, ``/`` on
integers truncates, ``has`` matches whole terms, ``==`` follows Kusto's null rules.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.literals import literal_from_json
from bzrk.engine.compile.typed import (
    NUMERIC_RANK,
    Filtered,
    T,
    Typed,
    cast_to,
    decimal_checked,
    extract_as,
    from_dynamic,
    from_ticks,
    lit,
    stored_value,
    ticks,
    to_string,
    unwrap_text,
    widest,
)
from bzrk.engine.types import DECIMAL_SCALE
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.kql.catalog import FunctionSymbol, Parameter


def arithmetic(node: K.Node, op: str, a: Typed, b: Typed) -> Typed:
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
    if ta == "timespan" and tb in NUMERIC_RANK and op == "%":
        # a remainder of ticks, as `%` on numbers (never negative; by 0 null): 1h % 7 is
        # 36,000,000,000 ticks % 7 (Kusto.Language types timespan % number a timespan)
        remainder = arithmetic(node, op, Typed(a.sql, "long"), b)
        return Typed(T("toInt64({0})", remainder.sql), "timespan")
    if tb == "timespan" and ta in NUMERIC_RANK and op == "*":
        return Typed(T("toInt64({0} * {1})", a.sql, b.sql), "timespan")
    if ta not in NUMERIC_RANK or tb not in NUMERIC_RANK:
        if "bool" in (ta, tb):
            a = cast_to(a, "long") if ta == "bool" else a
            b = cast_to(b, "long") if tb == "bool" else b
            return arithmetic(node, op, a, b)
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
        return _decimal_arithmetic(op, cast_to(a, "decimal").sql, cast_to(b, "decimal").sql)
    fa, fb = cast_to(a, "real").sql, cast_to(b, "real").sql
    if op == "%":
        return Typed(T("({0} - {1} * floor({0} / {1}))", fa, fb), "real")
    return Typed(S.BinOp(op, fa, fb), "real")


def _decimal_arithmetic(op: str, a: S.Expr, b: S.Expr) -> Typed:
    """Decimal arithmetic as .NET's: exact, rounded to 28 digits after the point (half away
    from zero), and null where the
    result leaves the decimal range (Kusto's decimal overflow; where ADX documents nothing,
    null, as division by zero and conversions that fail are null).

    Operands are in range (|x| < 7.93e28), so a sum or a remainder is exact in Decimal256; a
    product or quotient is exact with ``multiplyDecimal``/``divideDecimal``, which would throw
    on a result past Decimal256: one that is far out of range already in real gets zero
    operands (no exception on any row) and a null.
    """
    if op in ("+", "-"):
        return decimal_checked(S.BinOp(op, a, b))
    zero = T(f"toDecimal256(0, {DECIMAL_SCALE})")
    one = T(f"toDecimal256(1, {DECIMAL_SCALE})")
    if op == "%":
        # Kusto's % as a - b * floor(a / b) (the sign of b), from ClickHouse's exact remainder
        # (the sign of a, by a divisor that is never 0): never past |b|, so never out of range.
        # (ClickHouse computes under a null too, so a null divisor is never 0 either.)
        no_divisor = T("ifNull({0} = 0, true)", b)
        rem = T("({0} % if({2}, {1}, {3}))", a, one, no_divisor, b)
        return Typed(
            T(
                "if({2}, NULL, if({0} != 0 AND ({0} < 0) != ({1} < 0), {0} + {1}, {0}))",
                rem,
                b,
                no_divisor,
            ),
            "decimal",
        )
    if op == "*":
        far = T("(abs(toFloat64({0})) * abs(toFloat64({1})) > 1e30)", a, b)
        return _exact_or_null("multiplyDecimal", far, T("if({0}, {1}, {2})", far, zero, a), b)
    if op == "/":
        # Division by zero is null, as for the other numeric types; a null operand is taken
        # for far too, so that no row divides by a null's 0.
        far = T("ifNull({1} = 0 OR abs(toFloat64({0})) > abs(toFloat64({1})) * 1e30, true)", a, b)
        return _exact_or_null(
            "divideDecimal",
            far,
            T("if({0}, {1}, {2})", far, zero, a),
            T("if({0}, {1}, {2})", far, one, b),
        )
    raise ValueError(op)


def _exact_or_null(function: str, far: S.Expr, a: S.Expr, b: S.Expr) -> Typed:
    """ClickHouse's exact ``function`` (multiplyDecimal, divideDecimal) of operands made safe
    where ``far`` holds, rounded to Kusto's scale; null where ``far`` holds or past the range."""
    exact = T(f"round({function}({{0}}, {{1}}, {DECIMAL_SCALE + 1}), {DECIMAL_SCALE})", a, b)
    return decimal_checked(T("if({0}, NULL, {1})", far, exact))


def compare(node: K.Node, op: str, a: Typed, b: Typed) -> Typed:
    sql_op = {"==": "=", "!=": "!="}.get(op, op)
    stored = _stored_compare(op, a, b)
    if stored is not None:
        return stored
    a, b = comparable(a, b)
    if a.type == "string" and b.type == "string":
        # KQL reads an absent (null) string as empty, so == and != are never null here.
        x, y = to_string(a), to_string(b)
        value = S.BinOp(sql_op, x, y)
        if sql_op != "=":
            return Typed(value, "bool")
        return Typed(Filtered.of(value, S.BinOp("=", *_filter_sides(x, y))), "bool")
    if op in ("==", "!=") and (_non_null_constant(a.sql) or _non_null_constant(b.sql)):
        # Against a constant only the column can be null: == is then false, != true. A filter
        # reads the plain comparison (operators/where.py), which index analysis can see.
        default = "false" if op == "==" else "true"
        plain = S.BinOp(sql_op, a.sql, b.sql)
        answer = T("ifNull({0}, " + default + ")", plain)
        return Typed(Filtered.of(answer, plain) if op == "==" else answer, "bool")
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


def _filter_sides(x: S.Expr, y: S.Expr) -> tuple[S.Expr, S.Expr]:
    """``x = y`` as a filter may read it: a side facing non-empty text without its ifNull."""

    def text(side: S.Expr) -> bool:
        return isinstance(side, S.Lit) and isinstance(side.value, str) and side.value != ""

    if text(y):
        return unwrap_text(x), y
    if text(x):
        return x, unwrap_text(y)
    return x, y


# The kind a dynamic value must be stored as to compare with a scalar of each type.
_STORED_KIND = {"string": "string", "int": "long", "long": "long", "real": "real", "bool": "bool"}


def _stored_compare(op: str, a: Typed, b: Typed) -> Typed | None:
    """A dynamic compared with a string, number or bool: by its stored type, no coercion.

    Berserk compares dynamic values as stored: ``attributes.code == 500`` matches the number
    500 and not the string "500", ``dynamic(2.5) == long(2)`` is false, ``dynamic(2.0) == 2``
    true. A value of another type compares like null: ``==`` false, ``!=`` true, ordering null.
    """
    if (a.type == "dynamic") == (b.type == "dynamic"):
        return None
    flipped = b.type == "dynamic"
    dyn, other = (b, a) if flipped else (a, b)
    kind = _STORED_KIND.get(other.type)
    if kind is None:
        return None
    sql_op = {"==": "=", "!=": "!="}.get(op, op)
    if flipped:
        sql_op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(sql_op, sql_op)
    if kind == "string":
        value: S.Expr = S.BinOp(sql_op, stored_value(dyn.sql, "string"), to_string(other))
    elif kind == "long":
        # An integer compares exactly; a double (2.0, 2.5) as a double.
        exact = stored_value(dyn.sql, "long")
        value = T(
            "if(isNotNull({0}), {1}, {2})",
            exact,
            S.BinOp(sql_op, exact, cast_to(other, "long").sql),
            S.BinOp(sql_op, stored_value(dyn.sql, "real"), cast_to(other, "real").sql),
        )
    else:
        value = S.BinOp(sql_op, stored_value(dyn.sql, kind), other.sql)
    if op in ("==", "!="):
        plain = value
        value = T("ifNull({0}, " + ("false" if op == "==" else "true") + ")", plain)
        if op == "==" and kind == "string":
            return Typed(Filtered.of(value, plain), "bool")
    return Typed(value, "bool")


def comparable(a: Typed, b: Typed) -> tuple[Typed, Typed]:
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


def string_op(op: str, a: Typed, b: Typed, node: K.Node | None = None) -> Typed:
    negated = op.startswith("!")
    base = op[1:] if negated else op
    if base == "~":  # `!~`
        base, negated = "=~", True
    x, y = to_string(a), to_string(b)
    literal_needle = (
        b.sql.value if isinstance(b.sql, S.Lit) and isinstance(b.sql.value, str) else None
    )
    expr = _string_predicate(base, x, y, literal_needle, node, op)
    if negated:
        return Typed(S.Not(expr), "bool")
    if literal_needle and base in _FALSE_ON_EMPTY:
        # Nothing but '' is in an absent field, so a filter may test the column as stored.
        raw = unwrap_text(x)
        if raw is not x:
            expr = Filtered.of(expr, _string_predicate(base, raw, y, literal_needle, node, op))
    return Typed(expr, "bool")


# The string operators that are false on '' for a non-empty literal needle.
_FALSE_ON_EMPTY = frozenset(
    {
        "=~", "contains", "contains_cs", "startswith", "startswith_cs", "endswith",
        "endswith_cs", "has", "has_cs", "hasprefix", "hasprefix_cs", "hassuffix", "hassuffix_cs",
    }
)  # fmt: skip


def _string_predicate(
    base: str, x: S.Expr, y: S.Expr, literal_needle: str | None, node: K.Node | None, op: str
) -> S.Expr:
    expr: S.Expr
    if base == "=~":
        expr = T("(lowerUTF8({0}) = lowerUTF8({1}))", x, y)
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
            template = "hasToken(lower({0}), lower({1}))" if base == "has" else "hasToken({0}, {1})"
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
            expr = _substring_first(expr, x, literal_needle, base == "has_cs")
    elif base in ("hasprefix", "hasprefix_cs"):
        flags = "(?i)" if base == "hasprefix" else ""
        expr = T(
            "match({0}, concat('" + flags + "(^|[^[:alnum:]])', "
            "replaceRegexpAll({1}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1')))",
            x,
            y,
        )
        expr = _substring_first(expr, x, literal_needle, base == "hasprefix_cs")
    elif base in ("hassuffix", "hassuffix_cs"):
        flags = "(?i)" if base == "hassuffix" else ""
        expr = T(
            "match({0}, concat('" + flags + "', "
            "replaceRegexpAll({1}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1'), '($|[^[:alnum:]])'))",
            x,
            y,
        )
        expr = _substring_first(expr, x, literal_needle, base == "hassuffix_cs")
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
    return expr


# Runs of a needle the case-insensitive substring search finds wherever RE2's (?i) does:
# printable ASCII without s/S (RE2 folds the long s into s; positionCaseInsensitiveUTF8 not).
_FOLDS_ALIKE = re.compile("[ -RT-rt-~]+")


def _substring_first(regex_test: S.Expr, x: S.Expr, needle: str | None, cs: bool) -> S.Expr:
    """``regex_test`` (a term test holding only where the literal ``needle`` occurs in ``x``)
    behind a substring search for it: the regex then runs on the few values that have it,
    ~3x faster over a day of log bodies. Case-insensitive, the search looks for the longest
    run of the needle that both fold alike, when it has three characters or more."""
    if not needle:
        return regex_test
    if cs:
        found = T("(position({0}, {1}) > 0)", x, S.Lit(needle))
    else:
        piece = max(_FOLDS_ALIKE.findall(needle), key=len, default="")
        if len(piece) < 3:
            return regex_test
        found = T("(positionCaseInsensitiveUTF8({0}, {1}) > 0)", x, S.Lit(piece))
    return S.BinOp("AND", found, regex_test)


def expand_dynamic(values: list[Typed]) -> list[Typed]:
    out: list[Typed] = []
    for v in values:
        if v.type == "dynamic" and isinstance(v.sql, S.Lit) and isinstance(v.sql.value, str):
            parsed = json.loads(v.sql.value)
            if isinstance(parsed, list):
                out.extend(literal_from_json(x) for x in parsed)
                continue
        out.append(v)
    return out


def in_values(
    node: K.Node,
    left: Typed,
    values: list[Typed],
    subquery: S.Query | None,
    insensitive: bool,
    negated: bool,
) -> Typed:
    values = expand_dynamic(values)
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
        kinds = {_STORED_KIND.get(t) for t in types}
        if left.type == "dynamic" and len(kinds) == 1 and None not in kinds and not insensitive:
            # A dynamic is a member by its stored type (Berserk: no coercion).
            kind = kinds.pop()
            assert kind is not None
            stored = "real" if kind in ("long", "real") else kind
            value = stored_value(left.sql, stored)
            items = [to_string(v) if stored == "string" else cast_to(v, stored).sql for v in plain]
            member_of = S.InList(value, items)
            parts.append(Filtered.of(T("ifNull({0}, false)", member_of), member_of))
        elif left.type == "string" or "string" in types or left.type == "dynamic":
            lhs = to_string(left)
            items = [to_string(v) for v in plain]
            if insensitive:
                lhs = T("lowerUTF8({0})", lhs)
                items = [T("lowerUTF8({0})", i) for i in items]
            member: S.Expr = S.InList(lhs, items)
            if not insensitive and all(
                isinstance(i, S.Lit) and isinstance(i.value, str) and i.value for i in items
            ):
                member = Filtered.of(member, S.InList(unwrap_text(lhs), items))
            parts.append(member)
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
    # `in` is an OR of `==` and `!in` an AND of `!=`: a null value is in no list (false) and
    # so `!in` any (true), as `int(null) == 1` is false and `int(null) != 1` true.
    if negated:
        return Typed(S.Not(T("ifNull({0}, false)", expr)), "bool")
    if isinstance(expr, Filtered) and expr.in_filter is not None:
        return Typed(Filtered.of(T("ifNull({0}, false)", expr.args[0]), expr.in_filter), "bool")
    return Typed(T("ifNull({0}, false)", expr), "bool")


_ALNUM = re.compile(r"^[A-Za-z0-9]+$")


def _dyn_text(var: str) -> str:
    return (
        f"if({var} = 'null', '', if(JSONType({var}) = 'String', JSONExtractString({var}), {var}))"
    )


def _non_null_constant(expr: S.Expr) -> bool:
    """A literal (possibly inside a plain conversion template like ``toInt64(5)``) that is not
    null."""
    if isinstance(expr, S.Lit):
        return expr.value is not None
    if isinstance(expr, S.Template) and expr.args and "null" not in expr.text.lower():
        return all(_non_null_constant(arg) for arg in expr.args) and "(" in expr.text
    return False


def as_number(value: Typed) -> Typed:
    """A dynamic (an OTel attribute) read as its number, null when it is stored as no number
    (a string holding one included: Berserk's `asdouble`), as numeric aggregates read it
    (`sum`, `min`/`max`, `percentile`); any other value as it is."""
    return extract_as(value, "real") if value.type == "dynamic" else value


def dynamic_order(value: Typed) -> tuple[S.Expr, S.Expr]:
    """How dynamic values order (``sort``, ``top``, ``arg_max``): a number by its value, then by
    its text; so 9 < 10 < 100, where their text would give 10 < 100 < 9. Berserk compares a
    field "by native type"; a value that is no number (null here) orders by text alone."""
    return as_number(value).sql, to_string(value)


def dynamic_rank(value: Typed, *, largest: bool) -> S.Expr:
    """One comparable key for ``argMax``/``argMin`` over a dynamic: numbers win over the
    other values (they rank above them for max and below them for min), then by value, then
    by text."""
    number, text = dynamic_order(value)
    is_number = f"{'isNotNull' if largest else 'isNull'}({{0}})"
    return T(f"tuple({is_number}, ifNull({{0}}, 0.), {{1}})", number, text)


# A parameter family → the type a dynamic argument is read as there ("asXXX").
_DYNAMIC_AS = {
    "Number": "real",
    "Summable": "real",
    "RealOrDecimal": "real",
    "Integer": "long",
}


# Where Kusto.Language declares any scalar but Berserk's function takes a concrete type, so its
# binder reads a dynamic there with `asstring` / `asdouble` (the vendor's SKILL.md shows
# `tolower(level)`, `substring(attributes.path, 0, 8)`; ADX would spell a number as text in a
# string function): function → {argument position: type}.
_READ_AS: dict[str, dict[int, str]] = {
    **{name: {0: "string"} for name in ("tolower", "toupper", "substring", "strlen", "reverse")},
    **{name: {0: "string", 1: "string"} for name in ("indexof", "strcmp")},
    "split": {0: "string"},
    **{name: {0: "real"} for name in ("percentile", "percentiles", "percentiles_array")},
    **{name: {0: "real"} for name in ("percentilew", "percentilesw", "percentilesw_array")},
}


def coerce_dynamic_args(symbol: FunctionSymbol | None, args: list[Typed]) -> list[Typed]:
    """A dynamic argument (an OTel attribute) where a function declares a number, a string, a
    datetime or a timespan, read as that type first: Berserk's permissive mode, whose binder
    puts its ``asXXX`` extractor there (the vendor's SKILL.md), so
    `percentile(attributes.duration_ms, 95)` and `tolower(attributes.level)` run. A value
    stored as another kind is null: `tolower` of a number and `avg` of a string holding a
    number are (`typed.extract_as`). Left as it is where the overload is ambiguous or the
    parameter takes a dynamic."""
    if symbol is None or not any(a.type == "dynamic" for a in args):
        return args
    fits = [s for s in symbol.signatures if s.accepts_count(len(args))]
    if not fits:
        return args
    overloads = [s.param_for(len(args)) for s in fits]
    declared = _READ_AS.get(symbol.name, {})
    out: list[Typed] = []
    for i, arg in enumerate(args):
        if arg.type == "dynamic":
            target = declared.get(i) or _read_as(
                {_param_type(params[i]) for params in overloads if i < len(params)}
            )
            if target is not None:
                arg = extract_as(arg, target)
        out.append(arg)
    return out


def _param_type(param: Parameter) -> str | None:
    if param.type_kind == "Declared" and param.types and "dynamic" not in param.types:
        return "long" if set(param.types) <= {"int", "long"} else param.types[0]
    return _DYNAMIC_AS.get(param.type_kind)


def _read_as(targets: set[str | None]) -> str | None:
    """The one type the overloads agree on; over numbers (`abs`: an integer, a number or a
    timespan) a real; else none (the argument stays dynamic)."""
    if None in targets or "bool" in targets:
        return None
    if len(targets) == 1:
        return next(iter(targets))
    return "real" if "real" in targets else None
