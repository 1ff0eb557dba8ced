"""KQL scalar functions → ClickHouse expressions: one table entry per function.

Most entries are :func:`fn` records — a SQL template written here, the result type, and how
each argument is converted first (``s`` string, ``r`` real, ``l`` long, ``.`` as is; the last
code repeats for variadic functions). Functions whose translation depends on argument types
get a small builder. Nothing here sees user text: arguments arrive as typed SQL nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.function_table import (
    FUNCTIONS,
    TICKS_PER_DAY,
    Builder,
    fn,
    reg,
)

# Importing a family module registers its functions; functions registered below replace any of
# the same name.
from bzrk.engine.compile.functions_dynamic import _json_path, index_window, nth_match
from bzrk.engine.compile.functions_ip import _ipv4_masked
from bzrk.engine.compile.typed import (
    T,
    Typed,
    cast_to,
    dynamic_string,
    from_dynamic,
    from_ticks,
    json_or_null_literal,
    lit,
    ticks,
    to_json,
    to_string,
    typed_null,
)

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions import ExprCompiler
    from bzrk.kql import syntax as K

# --- strings -------------------------------------------------------------------------------
reg("strlen", fn("toInt64(lengthUTF8({0}))", "long", "s"))
reg("toupper", fn("upperUTF8({0})", "string", "s"))
reg("tolower", fn("lowerUTF8({0})", "string", "s"))
reg("reverse", fn("reverseUTF8({0})", "string", "s"))
reg("strrep", fn("repeat({0}, toUInt64(greatest({1}, 0)))", "string", "sl"))
reg("replace_string", fn("replaceAll({0}, {1}, {2})", "string", "s"))
reg("replace_regex", fn("replaceRegexpAll({0}, {1}, {2})", "string", "s"))
reg("url_encode url_encode_component", fn("encodeURLComponent({0})", "string", "s"))
reg("url_decode", fn("decodeURLComponent({0})", "string", "s"))
reg("base64_encode_tostring base64_encodestring", fn("base64Encode({0})", "string", "s"))
reg(
    "base64_decode_tostring base64_decodestring",
    fn("if(isValidUTF8(tryBase64Decode({0})), tryBase64Decode({0}), '')", "string", "s"),
)
reg("strcmp", fn("toInt64(if({0} < {1}, -1, if({0} > {1}, 1, 0)))", "long", "s"))
reg("isascii", fn("match({0}, '^[\\\\x00-\\\\x7F]*$')", "bool", "s"))
reg("isutf8", fn("isValidUTF8({0})", "bool", "s"))
reg(
    "regex_quote",
    fn(
        "replaceRegexpAll({0}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1')",
        "string",
        "s",
    ),
)
reg("countof", fn("toInt64(countSubstrings({0}, {1}))", "long", "s"))
reg("translate", fn("translateUTF8({2}, {0}, {1})", "string", "s"))
reg("hash_md5", fn("lower(hex(MD5({0})))", "string", "s"))
reg("hash_sha256", fn("lower(hex(SHA256({0})))", "string", "s"))
reg("hash_sha1", fn("lower(hex(SHA1({0})))", "string", "s"))


def _strcat(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    if not args:
        return Typed(lit(""), "string")
    return Typed(S.Func("concat", [to_string(a) for a in args] + [lit("")]), "string")


def _strcat_delim(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    items = [to_string(a) for a in args[1:]]
    return Typed(
        S.Func("arrayStringConcat", [S.Func("array", items), to_string(args[0])]), "string"
    )


reg("strcat", _strcat)
reg("strcat_delim", _strcat_delim)


def _substring(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s = to_string(args[0])
    start = cast_to(args[1], "long").sql
    if len(args) > 2:
        length = cast_to(args[2], "long").sql
        return Typed(
            T(
                "substringUTF8({0}, toInt64(greatest({1}, 0) + 1), toUInt64(greatest({2} + least({1}, 0), 0)))",
                s,
                start,
                length,
            ),
            "string",
        )
    return Typed(T("substringUTF8({0}, toInt64(greatest({1}, 0) + 1))", s, start), "string")


reg("substring", _substring)


def _indexof(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s, needle = to_string(args[0]), to_string(args[1])
    # Matches must start inside [begin, begin + length).
    begin, length, occurrence = index_window(args, T("lengthUTF8({0})", s))
    hits = T(
        "arrayFilter(p -> p >= {2} AND ({3} < 0 OR p < {2} + {3}), arrayDistinct(arrayFilter(p -> p >= 0, "
        "arrayMap(i -> toInt64(positionUTF8({0}, {1}, toUInt64(i))) - 1, range(1, toUInt64(lengthUTF8({0})) + 2)))))",
        s,
        needle,
        begin,
        length,
    )
    return nth_match(hits, occurrence)


reg("indexof", _indexof)


def _trim(side: str) -> Builder:
    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        pattern, s = to_string(args[0]), to_string(args[1])
        if side == "both":
            regex = T("concat('^(', {0}, ')+|(', {0}, ')+$')", pattern)
        elif side == "start":
            regex = T("concat('^(', {0}, ')+')", pattern)
        else:
            regex = T("concat('(', {0}, ')+$')", pattern)
        return Typed(T("replaceRegexpAll({0}, {1}, '')", s, regex), "string")

    return build


reg("trim", _trim("both"))
reg("trim_start", _trim("start"))
reg("trim_end", _trim("end"))


def _extract(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    regex, group, s = to_string(args[0]), cast_to(args[1], "long").sql, to_string(args[2])
    # Group 0 is the whole match; a group past the pattern's groups is empty, not an error.
    text = T(
        "if(match({1}, {0}), if(toInt64({2}) = 0, regexpExtract({1}, {0}, 0), "
        "arrayElement(extractGroups({1}, {0}), toInt64({2}))), '')",
        regex,
        s,
        group,
    )
    if len(args) > 3:
        return from_dynamic(T("toJSONString({0})", text), c.type_arg(node.args[3]))
    return Typed(text, "string")


reg("extract", _extract)


def _extract_all_simple(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    regex, s = to_string(args[0]), to_string(args[-1])
    chosen = _constant_group_numbers(args[1]) if len(args) == 3 else None
    if chosen is not None:
        # Chosen capture groups (0: the whole match) of every match; one group gives strings.
        whole = T("extractAllGroupsVertical({1}, concat('(', {0}, ')'))", regex, s)
        picks = ", ".join(f"__m[{g + 1}]" for g in chosen)
        shape = f"__m[{chosen[0] + 1}]" if len(chosen) == 1 else f"[{picks}]"
        return Typed(T("toJSONString(arrayMap(__m -> " + shape + ", {0}))", whole), "dynamic")
    groups = T("extractAllGroupsVertical({1}, {0})", regex, s)
    # No group: all whole matches; one group: its values; several: one array per match.
    return Typed(
        T(
            "if(length({0}) = 0, if(position({1}, '(') = 0, toJSONString(extractAll({2}, {1})), '[]'), "
            "if(length({0}[1]) = 1, toJSONString(arrayMap(g -> g[1], {0})), toJSONString({0})))",
            groups,
            regex,
            s,
        ),
        "dynamic",
    )


def _constant_group_numbers(value: Typed) -> list[int] | None:
    import json

    if value.type != "dynamic" or not isinstance(value.sql, S.Lit):
        return None
    try:
        groups = json.loads(str(value.sql.value))
    except ValueError:
        return None
    if not isinstance(groups, list) or not groups:
        return None
    if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in groups):
        return None
    return groups


reg("extract_all", _extract_all_simple)


def _split(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s, delim = to_string(args[0]), to_string(args[1])
    parts = T("splitByString({1}, {0})", s, delim)
    if len(args) > 2:
        index = cast_to(args[2], "long").sql
        return Typed(
            T(
                "if(toInt64({1}) < length({0}), toJSONString([arrayElement({0}, toInt64({1}) + 1)]), '[]')",
                parts,
                index,
            ),
            "dynamic",
        )
    return Typed(T("toJSONString({0})", parts), "dynamic")


reg("split", _split)


def _has_term(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return c.string_op("has", args[0], args[1])


reg("has", _has_term)

# --- type conversions ------------------------------------------------------------------------


def _to(kql_type: str) -> Builder:
    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        value = args[0]
        if value.type == kql_type:
            return value
        if value.type == "dynamic":
            return from_dynamic(value.sql, kql_type)
        if value.type == "string":
            text = value.sql
            # `0x` hex text converts as a hex literal does (tolong('0xa0') is 160).
            hex_or_decimal = (
                "if(match(trimBoth({0}), '^0[xX][0-9a-fA-F]{{1,16}}$'), "
                "toString(reinterpretAsInt64(reverse(unhex(leftPad(substring(trimBoth({0}), 3), 16, '0'))))), "
                "toString(toDecimal128OrNull(trimBoth({0}), 0)))"
            )
            if kql_type == "long":
                return Typed(T(f"toInt64OrNull({hex_or_decimal})", text), "long")
            if kql_type == "int":
                return Typed(T(f"toInt32OrNull({hex_or_decimal})", text), "int")
            if kql_type == "real":
                return Typed(T("toFloat64OrNull(trimBoth({0}))", text), "real")
            if kql_type == "decimal":
                return Typed(T("toDecimal128OrNull(trimBoth({0}), 18)", text), "decimal")
            if kql_type == "bool":
                return from_dynamic(T("toJSONString({0})", text), "bool")
            if kql_type == "datetime":
                # Surrounding whitespace (newlines too) does not stop a datetime parse.
                return Typed(
                    T(
                        "parseDateTime64BestEffortUSOrNull(trimBoth({0}, ' \t\r\n'), 7, 'UTC')",
                        text,
                    ),
                    "datetime",
                )
            if kql_type == "timespan":
                return c.parse_timespan(text)
            if kql_type == "guid":
                return Typed(T("toUUIDOrNull({0})", text), "guid")
        if kql_type in ("long", "int", "real", "decimal"):
            if value.type in ("datetime", "timespan"):
                base = ticks(value.sql) if value.type == "datetime" else value.sql
                return cast_to(Typed(base, "long"), kql_type)
            if value.type == "bool":
                return cast_to(Typed(T("toInt64({0})", value.sql), "long"), kql_type)
            if kql_type in ("long", "int") and value.type in ("real", "decimal"):
                fname = "toInt64OrNull" if kql_type == "long" else "toInt32OrNull"
                return Typed(
                    T(
                        f"if(isFinite(toFloat64({{0}})), {fname}(toString(trunc({{0}}))), NULL)",
                        value.sql,
                    ),
                    kql_type,
                )
            return cast_to(value, kql_type)
        if kql_type == "bool" and value.type in ("int", "long", "real", "decimal"):
            return Typed(T("({0} != 0)", value.sql), "bool")
        if kql_type == "datetime" and value.type in ("long", "int"):
            return Typed(from_ticks(value.sql), "datetime")
        if kql_type == "timespan" and value.type in ("long", "int", "real"):
            return Typed(T("toInt64({0})", value.sql), "timespan")
        if kql_type == "string":
            return Typed(to_string(value), "string")
        if kql_type == "dynamic":
            return Typed(to_json(value), "dynamic")
        return typed_null(kql_type)

    return build


reg("toint", _to("int"))
reg("tolong toint64", _to("long"))
reg("todouble toreal", _to("real"))
reg("todecimal", _to("decimal"))
reg("tobool toboolean", _to("bool"))
reg("todatetime", _to("datetime"))
reg("totimespan", _to("timespan"))
reg("toguid", _to("guid"))
reg("tostring", lambda c, a, n: Typed(to_string(a[0]), "string"))
reg("todynamic parse_json toobject", lambda c, a, n: c.parse_json(a[0]))
reg("tohex", fn("lower(hex(toInt64({0})))", "string"))

# --- null / emptiness / logic ----------------------------------------------------------------


def _isnull(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    v = args[0]
    if v.type == "string":
        return Typed(lit(False), "bool")
    if v.type == "dynamic":
        return Typed(T("(isNull({0}) OR {0} = 'null')", v.sql), "bool")
    return Typed(S.IsNull(v.sql), "bool")


def _isempty(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    v = args[0]
    if v.type == "string":
        return Typed(T("({0} = '')", v.sql), "bool")
    if v.type == "dynamic":
        return Typed(T("(isNull({0}) OR {0} IN ('null', '\"\"'))", v.sql), "bool")
    return Typed(S.IsNull(v.sql), "bool")


reg("isnull", _isnull)
reg("isnotnull", lambda c, a, n: Typed(S.Not(_isnull(c, a, n).sql), "bool"))
reg("isempty", _isempty)
reg("isnotempty", lambda c, a, n: Typed(S.Not(_isempty(c, a, n).sql), "bool"))
reg("not", lambda c, a, n: Typed(S.Not(c.as_bool(a[0])), "bool"))


def _iff(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    a, b = c.unify([args[1], args[2]])
    return Typed(T("if(ifNull({0}, false), {1}, {2})", c.as_bool(args[0]), a.sql, b.sql), a.type)


def _case(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    values = c.unify([args[i] for i in range(1, len(args), 2)] + [args[-1]])
    parts: list[S.Expr] = []
    for i in range(0, len(args) - 1, 2):
        parts.append(T("ifNull({0}, false)", c.as_bool(args[i])))
        parts.append(values[i // 2].sql)
    parts.append(values[-1].sql)
    return Typed(S.Func("multiIf", parts), values[-1].type)


def _coalesce(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    values = c.unify(args)
    if values[0].type == "string":
        expr: S.Expr = values[-1].sql
        for v in reversed(values[:-1]):
            expr = T("if({0} != '', {0}, {1})", v.sql, expr)
        return Typed(expr, "string")
    if values[0].type == "dynamic":
        return Typed(
            S.Func("coalesce", [T("nullIf({0}, 'null')", v.sql) for v in values]), "dynamic"
        )
    return Typed(S.Func("coalesce", [v.sql for v in values]), values[0].type)


reg("iff iif", _iff)
reg("case", _case)
reg("coalesce", _coalesce)


def _minmax_of(name: str) -> Builder:
    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        values = c.unify(args)
        # KQL ignores nulls here; ClickHouse least/greatest of a NULL is NULL.
        expr: S.Expr = values[0].sql
        for v in values[1:]:
            expr = T(
                f"if(isNull({{0}}), {{1}}, if(isNull({{1}}), {{0}}, {name}({{0}}, {{1}})))",
                expr,
                v.sql,
            )
        return Typed(expr, values[0].type)

    return build


reg("max_of", _minmax_of("greatest"))
reg("min_of", _minmax_of("least"))

# --- math ------------------------------------------------------------------------------------
reg("abs", fn("abs({0})", lambda a: "long" if a[0].type == "int" else a[0].type))
reg("sqrt", fn("if({0} < 0, nan, sqrt({0}))", "real", "r"))
reg("exp", fn("exp({0})", "real", "r"))
reg("exp2", fn("exp2({0})", "real", "r"))
reg("exp10", fn("exp10({0})", "real", "r"))
reg("log", fn("if({0} < 0, nan, log({0}))", "real", "r"))
reg("log2", fn("if({0} < 0, nan, log2({0}))", "real", "r"))
reg("log10", fn("if({0} < 0, nan, log10({0}))", "real", "r"))
reg("log1p", fn("log1p({0})", "real", "r"))
reg("pow", fn("pow({0}, {1})", "real", "r"))
reg("pi", fn("pi()", "real"))
reg("sin", fn("sin({0})", "real", "r"))
reg("cos", fn("cos({0})", "real", "r"))
reg("tan", fn("tan({0})", "real", "r"))
reg("asin", fn("asin({0})", "real", "r"))
reg("acos", fn("acos({0})", "real", "r"))
reg("atan", fn("atan({0})", "real", "r"))
reg("atan2", fn("atan2({0}, {1})", "real", "r"))
reg("cot", fn("1 / tan({0})", "real", "r"))
reg("degrees", fn("degrees({0})", "real", "r"))
reg("radians", fn("radians({0})", "real", "r"))
reg("sign", fn("toFloat64(sign({0}))", "real", "r"))
reg("isnan", fn("isNaN({0})", "bool", "r"))
reg("isinf", fn("isInfinite({0})", "bool", "r"))
reg("isfinite", fn("isFinite({0})", "bool", "r"))
reg("gamma", fn("tgamma({0})", "real", "r"))
reg("loggamma", fn("lgamma({0})", "real", "r"))
reg(
    "rand",
    lambda c, a, n: (
        Typed(T("randCanonical()"), "real")
        if not a
        # rand(N): a whole number in [0, N), typed real as Kusto types it.
        else Typed(T("floor(randCanonical() * {0})", cast_to(a[0], "real").sql), "real")
    ),
)


def _round(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    digits = cast_to(args[1], "long").sql if len(args) > 1 else lit(0)
    if x.type in ("int", "long"):
        return Typed(T("toInt64(round(toFloat64({0}), {1}))", x.sql, digits), x.type)
    from bzrk.kql.syntax import Literal

    # ClickHouse needs a constant precision to round a decimal.
    if x.type == "decimal" and (len(args) < 2 or isinstance(node.args[1], Literal)):
        # Decimals stay decimal; ClickHouse rounds them half away from zero, as KQL does.
        return Typed(T("round({0}, {1})", x.sql, digits), "decimal")
    # KQL rounds half away from zero.
    return Typed(T("round({0}, {1})", cast_to(x, "real").sql, digits), "real")


reg("round", _round)


def _ceiling(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(T("ceil({0})", cast_to(args[0], "real").sql), "real")


reg("ceiling", _ceiling)


def _positive_literal(node: S.Expr) -> int | None:
    """The value of an integer literal (``toInt64(…)``-wrapped, as literals compile) above 0."""
    while isinstance(node, S.Template) and node.text == "toInt64({0})" and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, S.Lit) and type(node.value) is int and node.value > 0:
        return node.value
    return None


def bin_value(c: ExprCompiler, value: Typed, size: Typed, at: Typed | None = None) -> Typed:
    """KQL ``bin``/``floor``/``bin_at``: epoch-based buckets for datetimes, floor for numbers.

    A zero bin size gives null, as in Kusto.
    """
    bucket = (
        "if(toInt64({2}) = 0, NULL, {1} + ({0} - {1}) - positiveModulo({0} - {1}, toInt64({2})))"
    )
    if value.type == "datetime":
        step = size.sql if size.type == "timespan" else cast_to(size, "long").sql
        constant = _positive_literal(step)
        if constant is not None and at is None:
            # A constant step: no zero check, so the bucket is not Nullable (cheaper to group).
            t = ticks(value.sql)
            fixed = T("({0} - positiveModulo({0}, {1}))", t, lit(constant))
            return Typed(from_ticks(fixed), "datetime")
        origin = ticks(at.sql) if at is not None and at.type == "datetime" else lit(0)
        return Typed(from_ticks(T(bucket, ticks(value.sql), origin, step)), "datetime")
    if value.type == "timespan":
        origin = at.sql if at is not None else lit(0)
        return Typed(T(bucket, value.sql, origin, size.sql), "timespan")
    if value.type in ("int", "long") and size.type in ("int", "long"):
        origin = at.sql if at is not None else lit(0)
        return Typed(T("toInt64(" + bucket + ")", value.sql, origin, size.sql), "long")
    x = cast_to(value, "real").sql
    origin = cast_to(at, "real").sql if at is not None else lit(0.0)
    step = cast_to(size, "real").sql
    return Typed(
        T("if({2} = 0, NULL, {1} + floor(({0} - {1}) / {2}) * {2})", x, origin, step), "real"
    )


reg(
    "bin floor",
    lambda c, a, n: (
        bin_value(c, a[0], a[1])
        if len(a) > 1
        else Typed(T("floor({0})", cast_to(a[0], "real").sql), "real")
    ),
)
reg("bin_at", lambda c, a, n: bin_value(c, a[0], a[1], a[2]))

# --- datetime --------------------------------------------------------------------------------
reg(
    "now",
    lambda c, a, n: Typed(
        T("now64(7, 'UTC')")
        if not a
        else from_ticks(T("reinterpretAsInt64(now64(7, 'UTC')) + {0}", a[0].sql)),
        "datetime",
    ),
)
reg(
    "ago",
    lambda c, a, n: Typed(
        from_ticks(T("reinterpretAsInt64(now64(7, 'UTC')) - {0}", a[0].sql)), "datetime"
    ),
)
reg("datetime_add", lambda c, a, n: c.datetime_add(a[0], a[1], a[2]))
reg("datetime_diff", lambda c, a, n: c.datetime_diff(a[0], a[1], a[2]))
reg("datetime_part", lambda c, a, n: c.datetime_part(a[0], a[1]))


def _dt_fn(template: str, result: str = "long") -> Builder:
    return fn(template, result)


reg("getyear", _dt_fn("toInt64(toYear({0}))"))
reg("getmonth monthofyear", _dt_fn("toInt64(toMonth({0}))"))
reg("dayofmonth", _dt_fn("toInt32(toDayOfMonth({0}))", "int"))
reg("dayofyear", _dt_fn("toInt32(toDayOfYear({0}))", "int"))
reg("hourofday", _dt_fn("toInt64(toHour({0}))"))
reg("week_of_year", _dt_fn("toInt64(toISOWeek({0}))"))
reg("dayofweek", fn("toInt64((toDayOfWeek({0}) % 7) * 864000000000)", "timespan"))
reg("startofday", lambda c, a, n: c.start_of("day", a))
reg("startofweek", lambda c, a, n: c.start_of("week", a))
reg("startofmonth", lambda c, a, n: c.start_of("month", a))
reg("startofyear", lambda c, a, n: c.start_of("year", a))
reg("endofday", lambda c, a, n: c.end_of("day", a))
reg("endofweek", lambda c, a, n: c.end_of("week", a))
reg("endofmonth", lambda c, a, n: c.end_of("month", a))
reg("endofyear", lambda c, a, n: c.end_of("year", a))
reg(
    "unixtime_seconds_todatetime",
    fn(
        "reinterpret(toInt64(round(toFloat64({0}) * 10000000)), 'DateTime64(7, \\'UTC\\')')",
        "datetime",
    ),
)
reg(
    "unixtime_milliseconds_todatetime",
    fn(
        "reinterpret(toInt64(round(toFloat64({0}) * 10000)), 'DateTime64(7, \\'UTC\\')')",
        "datetime",
    ),
)
reg(
    "unixtime_microseconds_todatetime",
    fn("reinterpret(toInt64(round(toFloat64({0}) * 10)), 'DateTime64(7, \\'UTC\\')')", "datetime"),
)
reg(
    "unixtime_nanoseconds_todatetime",
    fn("reinterpret(toInt64(intDiv(toInt64({0}), 100)), 'DateTime64(7, \\'UTC\\')')", "datetime"),
)
reg("make_timespan", lambda c, a, n: c.make_timespan(a))
reg("make_datetime", lambda c, a, n: c.make_datetime(a))
reg("format_datetime", lambda c, a, n: c.format_datetime(a[0], a[1]))
reg("format_timespan", lambda c, a, n: c.format_timespan(a[0], a[1]))
reg("totimespan", _to("timespan"))

# --- hashes, guids, misc ---------------------------------------------------------------------
reg("new_guid", fn("generateUUIDv4()", "guid"))
reg("binary_and", fn("bitAnd(toInt64({0}), toInt64({1}))", "long"))
reg("binary_or", fn("bitOr(toInt64({0}), toInt64({1}))", "long"))
reg("binary_xor", fn("bitXor(toInt64({0}), toInt64({1}))", "long"))
reg("binary_not", fn("bitNot(toInt64({0}))", "long"))
reg("binary_shift_left", fn("bitShiftLeft(toInt64({0}), {1})", "long"))
reg("binary_shift_right", fn("bitShiftRight(toInt64({0}), {1})", "long"))
reg("bitset_count_ones", fn("toInt64(bitCount(toInt64({0})))", "long"))
reg(
    "ipv4_is_private",
    fn(
        "isIPAddressInRange({0}, '10.0.0.0/8') OR isIPAddressInRange({0}, '172.16.0.0/12') OR isIPAddressInRange({0}, '192.168.0.0/16')",
        "bool",
        "s",
    ),
)
reg(
    "unicode_codepoints_from_string",
    fn(
        "toJSONString(arrayMap(ch -> toInt64(ch), arrayMap(x -> unicode(x), splitByRegexp('', {0}))))",
        "dynamic",
        "s",
    ),
)


def names() -> Sequence[str]:
    return sorted(FUNCTIONS)


def lookup(name: str) -> Builder | None:
    return FUNCTIONS.get(name)


__all__ = ["FUNCTIONS", "Builder", "bin_value", "dynamic_string", "lookup"]


# --- arrays from ranges, bags from columns, code points ---------------------------------------


def _range_array(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    start, stop = args[0], args[1]
    step = args[2] if len(args) > 2 else None
    if start.type == "datetime":
        step_sql = step.sql if step is not None else S.Lit(TICKS_PER_DAY)
        items = T(
            "arrayMap(i -> reinterpret(toInt64(reinterpretAsInt64({0}) + i * {2}), 'DateTime64(7, \\'UTC\\')'), "
            "range(0, toUInt64(greatest(0, intDiv(reinterpretAsInt64({1}) - reinterpretAsInt64({0}), {2}) + 1))))",
            start.sql,
            stop.sql,
            step_sql,
        )
        text = T(
            "concat('[', arrayStringConcat(arrayMap(d -> concat('\"', formatDateTime(d, '%Y-%m-%dT%H:%i:%S'), '.', "
            "leftPad(toString(positiveModulo(reinterpretAsInt64(d), 10000000)), 7, '0'), 'Z\"'), {0}), ','), ']')",
            items,
        )
        return Typed(text, "dynamic")
    kinds = {a.type for a in args}
    if kinds <= {"int", "long", "timespan"}:
        default_step = 36_000_000_000 if start.type == "timespan" else 1
        step_sql = cast_to(step, "long").sql if step is not None else S.Lit(default_step)
        # Kusto caps range() at 1,048,576 elements.
        items = T(
            "arrayMap(i -> toInt64({0} + i * {2}), range(0, least(1048576, toUInt64(greatest(0, intDiv({1} - {0}, {2}) + 1)))))",
            cast_to(start, "long").sql,
            cast_to(stop, "long").sql,
            step_sql,
        )
        if start.type == "timespan":
            ts_text = to_string(Typed(S.Col("__t"), "timespan"))
            return Typed(T("toJSONString(arrayMap(t -> {1}, {0}))", items, ts_text), "dynamic")
        return Typed(T("toJSONString({0})", items), "dynamic")
    step_sql = cast_to(step, "real").sql if step is not None else S.Lit(1.0)
    items = T(
        "arrayMap(i -> {0} + i * {2}, range(0, least(1048576, toUInt64(greatest(0, floor(({1} - {0}) / {2} + 1e-9) + 1)))))",
        cast_to(start, "real").sql,
        cast_to(stop, "real").sql,
        step_sql,
    )
    return Typed(T("toJSONString({0})", items), "dynamic")


_TS_JSON = "toString(t)"
reg("range", _range_array)


def _bag_zip(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # Keys that are not an array give null; values that are not an array count as empty.
    return Typed(
        T(
            "if(JSONType(ifNull({0}, '')) != 'Array', NULL, "
            "concat('{{', arrayStringConcat(arrayFilter(x -> x != '', arrayMap(i -> if(JSONType(arrayElement(JSONExtractArrayRaw({0}), i)) = 'String', "
            "concat(arrayElement(JSONExtractArrayRaw({0}), i), ':', ifNull(arrayElementOrNull(JSONExtractArrayRaw({1}), i), 'null')), ''), "
            "range(1, length(JSONExtractArrayRaw({0})) + 1))), ','), '}}'))",
            to_json(args[0]),
            to_json(args[1]),
        ),
        "dynamic",
    )


reg("bag_zip", _bag_zip)


def _codepoints_to_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    parts = [
        T("arrayMap(x -> toUInt32OrZero(x), JSONExtractArrayRaw({0}))", a.sql)
        if a.type == "dynamic"
        else T("[toUInt32({0})]", cast_to(a, "long").sql)
        for a in args
    ]
    points = S.Func("arrayConcat", parts) if len(parts) > 1 else parts[0]
    return Typed(T("arrayStringConcat(arrayMap(p -> " + _UTF8_CHAR + ", {0}))", points), "string")


# char() emits single bytes; build the UTF-8 encoding of each code point by hand.
_UTF8_CHAR = (
    "multiIf(p < 128, char(p), p < 2048, char(192 + intDiv(p, 64), 128 + p % 64), "
    "p < 65536, char(224 + intDiv(p, 4096), 128 + intDiv(p, 64) % 64, 128 + p % 64), "
    "char(240 + intDiv(p, 262144), 128 + intDiv(p, 4096) % 64, 128 + intDiv(p, 64) % 64, 128 + p % 64))"
)
reg("unicode_codepoints_to_string", _codepoints_to_string)


def _strrep(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s = to_string(args[0])
    n = cast_to(args[1], "long").sql
    if len(args) < 3:
        # Without a delimiter repeat() builds the string directly; the array form below costs
        # ClickHouse several times the result's memory.
        return Typed(T("repeat({0}, toUInt64(greatest({1}, 0)))", s, n), "string")
    delim = to_string(args[2])
    return Typed(
        T(
            "arrayStringConcat(arrayResize(emptyArrayString(), toUInt64(greatest({1}, 0)), {0}), {2})",
            s,
            n,
            delim,
        ),
        "string",
    )


reg("strrep", _strrep)


def _tohex(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    digits = "lower(hex(toInt64({0})))" if x.type != "int" else "lower(hex(toInt32({0})))"
    text = T("if(isNull({0}), '', replaceRegexpOne(" + digits + ", '^0+(.)', '\\\\1'))", x.sql)
    if len(args) > 1:
        return Typed(
            T(
                "leftPad({0}, toUInt64(greatest(length({0}), {1})), '0')",
                text,
                cast_to(args[1], "long").sql,
            ),
            "string",
        )
    return Typed(text, "string")


reg("tohex", _tohex)


def _toguid(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    if x.type == "guid":
        return x
    text = to_string(x)
    hexed = T("replaceAll(trimBoth({0}), '-', '')", text)
    return Typed(
        T(
            "if(match({0}, '^[0-9a-fA-F]{{32}}$'), toUUIDOrNull(concat(substring({0}, 1, 8), '-', substring({0}, 9, 4), '-', "
            "substring({0}, 13, 4), '-', substring({0}, 17, 4), '-', substring({0}, 21, 12))), NULL)",
            hexed,
        ),
        "guid",
    )


reg("toguid", _toguid)


def _register_geo() -> None:
    from bzrk.engine.compile.geo import GEO_FUNCTIONS
    from bzrk.engine.compile.geo_clip import CLIP_FUNCTIONS
    from bzrk.engine.compile.geo_s2 import S2_FUNCTIONS
    from bzrk.engine.compile.geo_s2_cover import COVER_FUNCTIONS
    from bzrk.engine.compile.geo_shapes import SHAPE_FUNCTIONS
    from bzrk.engine.compile.geo_transforms import TRANSFORM_FUNCTIONS

    geo = {
        **GEO_FUNCTIONS,
        **S2_FUNCTIONS,
        **COVER_FUNCTIONS,
        **SHAPE_FUNCTIONS,
        **TRANSFORM_FUNCTIONS,
        **CLIP_FUNCTIONS,
    }
    for name, builder in geo.items():
        FUNCTIONS[name] = builder


_register_geo()


def _hash(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    value = to_string(x) if x.type in ("string", "dynamic") else x.sql
    if x.type == "datetime":
        # .NET hashes the ticks since 0001-01-01.
        value = T("toInt64(reinterpretAsInt64({0}) + 621355968000000000)", x.sql)
    hashed = T("reinterpretAsInt64(xxHash64({0}))", value)
    if len(args) > 1:
        return Typed(
            T("positiveModulo({0}, toInt64({1}))", hashed, cast_to(args[1], "long").sql), "long"
        )
    return Typed(hashed, "long")


reg("hash hash_xxhash64", _hash)
reg("hash_combine", fn("reinterpretAsInt64(xxHash64(toInt64({0}), toInt64({1})))", "long"))


def _column_names_of(c: ExprCompiler, node: K.Call) -> Typed:
    compile_tabular = c.scope.lets.get("$tabular")
    if compile_tabular is None or not node.args:
        raise unsupported(node, "column_names_of needs a tabular argument")
    relation = compile_tabular(node.args[0])
    names = [n for n, _ in relation.columns if not n.startswith("__")]
    import json

    return Typed(S.Lit(json.dumps(names, separators=(",", ":"))), "dynamic")


def _unicode_from_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # Decode UTF-8 by hand: the code point of each character from its bytes.
    text = to_string(args[0])
    return Typed(
        T(
            "toJSONString(arrayMap(ch -> toInt64(multiIf(length(ch) = 1, reinterpretAsUInt8(ch), "
            "length(ch) = 2, bitAnd(reinterpretAsUInt8(substring(ch, 1, 1)), 31) * 64 + bitAnd(reinterpretAsUInt8(substring(ch, 2, 1)), 63), "
            "length(ch) = 3, bitAnd(reinterpretAsUInt8(substring(ch, 1, 1)), 15) * 4096 + bitAnd(reinterpretAsUInt8(substring(ch, 2, 1)), 63) * 64 + bitAnd(reinterpretAsUInt8(substring(ch, 3, 1)), 63), "
            "bitAnd(reinterpretAsUInt8(substring(ch, 1, 1)), 7) * 262144 + bitAnd(reinterpretAsUInt8(substring(ch, 2, 1)), 63) * 4096 + bitAnd(reinterpretAsUInt8(substring(ch, 3, 1)), 63) * 64 + bitAnd(reinterpretAsUInt8(substring(ch, 4, 1)), 63))), "
            "extractAll({0}, '.')))",
            text,
        ),
        "dynamic",
    )


reg("unicode_codepoints_from_string", _unicode_from_string)


def _repeat(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    item = json_or_null_literal(args[0])
    count = cast_to(args[1], "long").sql
    return Typed(
        T(
            "concat('[', arrayStringConcat(arrayResize(emptyArrayString(), toUInt64(greatest({1}, 0)), {0}), ','), ']')",
            item,
            count,
        ),
        "dynamic",
    )


reg("repeat", _repeat)


def _around(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if a[0].type == "datetime":
        return Typed(
            T("(abs({0} - {1}) <= {2})", ticks(a[0].sql), ticks(a[1].sql), a[2].sql), "bool"
        )
    values = [cast_to(x, "real").sql for x in a[:3]]
    return Typed(T("(abs({0} - {1}) <= {2})", *values), "bool")


reg("around", _around)


def _countof(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    text, needle = to_string(args[0]), to_string(args[1])
    kind = args[2].sql.value if len(args) > 2 and isinstance(args[2].sql, S.Lit) else "normal"
    if kind == "regex":
        return Typed(T("toInt64(countMatches({0}, {1}))", text, needle), "long")
    return Typed(T("toInt64(countSubstrings({0}, {1}))", text, needle), "long")


reg("countof", _countof)


def _url_encode(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # .NET's encoding: lower-case hex; url_encode turns spaces into '+'.
    text = to_string(args[0])
    encoded = T(
        "arrayStringConcat(arrayMap(b -> if(match(b, '^[A-Za-z0-9._~-]$'), b, concat('%', lower(hex(b)))), "
        "splitByString('', {0})), '')",
        text,
    )
    if node.name == "url_encode":
        encoded = T("replaceAll({0}, '%20', '+')", encoded)
    return Typed(encoded, "string")


reg("url_encode url_encode_component", _url_encode)


# --- more strings, encodings, math ----------------------------------------------------------
reg("string_size", fn("toInt64(length({0}))", "long", "s"))
reg("erf", fn("erf({0})", "real", "r"))
reg("erfc", fn("erfc({0})", "real", "r"))
reg(
    "base64_decode_toarray",
    fn(
        "if(tryBase64Decode({0}) = '' AND {0} != '', NULL, toJSONString(arrayMap(ch -> toInt64(reinterpretAsUInt8(ch)), splitByString('', tryBase64Decode({0})))))",
        "dynamic",
        "s",
    ),
)
reg(
    "base64_encode_fromarray",
    fn(
        "base64Encode(arrayStringConcat(arrayMap(x -> char(toUInt8OrZero(x)), JSONExtractArrayRaw({0}))))",
        "string",
    ),
)


def _base64_from_guid(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    if args[0].type != "guid":
        raise unsupported(node, "base64_encode_fromguid expects a guid", code="TypeMismatch")
    return Typed(T("base64Encode(UUIDStringToNum(toString({0}), 2))", args[0].sql), "string")


reg("base64_encode_fromguid", _base64_from_guid)
reg(
    "base64_decode_toguid",
    fn(
        "if(length(tryBase64Decode({0})) = 16, "
        "toUUID(UUIDNumToString(toFixedString(tryBase64Decode({0}), 16), 2)), NULL)",
        "guid",
        "s",
    ),
)
reg(
    "format_ipv4_mask",
    lambda c, a, n: Typed(
        T(
            "if(IPv4StringToNumOrNull(splitByChar('/', {0})[1]) IS NULL OR {3} < 0 OR {3} > 32, '', "
            "concat(IPv4NumToString(toUInt32({1})), '/', toString({2})))",
            to_string(a[0]),
            _ipv4_masked(to_string(a[0]), cast_to(a[1], "long").sql if len(a) > 1 else None),
            T(
                "least(if(position({0}, '/') > 0, toInt64OrZero(splitByChar('/', {0})[2]), 32), {1})",
                to_string(a[0]),
                cast_to(a[1], "long").sql if len(a) > 1 else lit(32),
            ),
            cast_to(a[1], "long").sql if len(a) > 1 else lit(32),
        ),
        "string",
    ),
)
reg(
    "parse_urlquery",
    fn(
        "concat('{{\"Query Parameters\":', toJSONString(CAST(arrayMap(kv -> (decodeURLComponent(splitByChar('=', kv)[1]), decodeURLComponent(arrayStringConcat(arraySlice(splitByChar('=', kv), 2), '='))), splitByChar('&', replaceRegexpOne({0}, '^.*\\?', ''))), 'Map(String, String)')), '}}')",
        "dynamic",
        "s",
    ),
)


def _bag_set_key(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    from bzrk.engine.compile.functions_bags import bag_set_key

    at_path = bag_set_key(c, args, node)
    if at_path is not None:
        return at_path
    bag, key, value = args[0], args[1], args[2]
    path = _json_path(key)
    if len(path) != 1:
        raise unsupported(node, "bag_set_key with a nested JSONPath is not supported")
    pairs = T(
        "arrayConcat(arrayFilter(kv -> kv.1 != {1}, JSONExtractKeysAndValuesRaw({0})), [({1}, {2})])",
        bag.sql,
        path[0],
        json_or_null_literal(value),
    )
    return Typed(
        T(
            "concat('{{', arrayStringConcat(arrayMap(kv -> concat(toJSONString(kv.1), ':', kv.2), {0}), ','), '}}')",
            pairs,
        ),
        "dynamic",
    )


reg("bag_set_key", _bag_set_key)


def _register_series() -> None:
    from bzrk.engine.compile.series import SERIES_FUNCTIONS

    for name, builder in SERIES_FUNCTIONS.items():
        FUNCTIONS[name] = builder  # type: ignore[assignment]


_register_series()


def _register_sketches() -> None:
    from bzrk.engine.compile.sketches import SKETCH_FUNCTIONS

    for name, builder in SKETCH_FUNCTIONS.items():
        FUNCTIONS[name] = builder


_register_sketches()


def _register_units() -> None:
    from bzrk.engine.compile.units import UNIT_FUNCTIONS

    for name, builder in UNIT_FUNCTIONS.items():
        FUNCTIONS[name] = builder


_register_units()


# --- environment (nondeterministic in the corpora: schema only) ------------------------------
reg("current_database", fn("'default'", "string"))
reg("current_cluster_endpoint", fn("'bzrk'", "string"))
reg("current_principal", fn("'bzrk'", "string"))
reg("cursor_current", fn("''", "string"))
reg(
    "ipv4_is_private",
    fn(
        "isIPAddressInRange(splitByChar('/', {0})[1], '10.0.0.0/8') OR isIPAddressInRange(splitByChar('/', {0})[1], '172.16.0.0/12') "
        "OR isIPAddressInRange(splitByChar('/', {0})[1], '192.168.0.0/16')",
        "bool",
        "s",
    ),
)


def _format_ipv4(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    ip = args[0]
    bits = cast_to(args[1], "long").sql if len(args) > 1 else None
    number = _ipv4_masked(to_string(ip), bits) if ip.type == "string" else cast_to(ip, "long").sql
    text = T("if({0} IS NULL, '', IPv4NumToString(toUInt32({0})))", number)
    if bits is not None:
        text = T("if({1} < 0 OR {1} > 32, '', {0})", text, bits)
    return Typed(text, "string")


reg("format_ipv4", _format_ipv4)


def _format_bytes(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    size = cast_to(args[0], "real").sql
    digits = cast_to(args[1], "long").sql if len(args) > 1 else lit(0)
    units = "['Bytes', 'KB', 'MB', 'GB', 'TB', 'PB', 'EB']"
    exponent = T("toUInt8(if({0} < 1024, 0, least(6, floor(log({0}) / log(1024)))))", size)
    if len(args) > 2 and isinstance(args[2].sql, S.Lit) and isinstance(args[2].sql.value, str):
        wanted = {"bytes": 0, "kb": 1, "mb": 2, "gb": 3, "tb": 4, "pb": 5, "eb": 6}.get(
            args[2].sql.value.lower()
        )
        if wanted is not None:
            exponent = T("toUInt8({0})", lit(wanted))
    return Typed(
        T(
            "concat(toString(round({0} / pow(1024, {2}), {1})), ' ', " + units + "[{2} + 1])",
            size,
            digits,
            exponent,
        ),
        "string",
    )


reg("format_bytes", _format_bytes)
reg(
    "jaccard_index",
    lambda c, a, n: Typed(
        T(
            "if(length(arrayDistinct(arrayConcat({0}, {1}))) = 0, nan, length(arrayIntersect(arrayDistinct({0}), arrayDistinct({1}))) / length(arrayDistinct(arrayConcat({0}, {1}))))",
            T("JSONExtractArrayRaw({0})", a[0].sql),
            T("JSONExtractArrayRaw({0})", a[1].sql),
        ),
        "real",
    ),
)


def _indexof_regex(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # Matches do not overlap and must lie inside [start, start + length); a negative start or
    # occurrence, or a length below -1, is invalid (null). regexpInstr counts bytes.
    s, pattern = to_string(args[0]), to_string(args[1])
    start = T("toInt64({0})", cast_to(args[2], "long").sql) if len(args) > 2 else lit(0)
    length = T("toInt64({0})", cast_to(args[3], "long").sql) if len(args) > 3 else lit(-1)
    occurrence = T("toInt64({0})", cast_to(args[4], "long").sql) if len(args) > 4 else lit(1)
    haystack = T(
        "if({1} = -1, {0}, substringUTF8({0}, 1, toUInt64(greatest({2} + {1}, 0))))",
        s,
        length,
        start,
    )
    found = T(
        "regexpInstr({0}, {1}, toUInt64(length(substringUTF8({0}, 1, toUInt64({2}))) + 1), "
        "toUInt64(greatest({3}, 1)))",
        haystack,
        pattern,
        start,
        occurrence,
    )
    return Typed(
        T(
            "if({1} < 0 OR {2} < -1 OR {3} < 1, NULL, if({0} = 0, toInt64(-1), "
            "toInt64(lengthUTF8(substring({4}, 1, {0} - 1)))))",
            found,
            start,
            length,
            occurrence,
            s,
        ),
        "long",
    )


reg("indexof_regex", _indexof_regex)


def _register_codecs() -> None:
    from bzrk.engine.compile.functions_codec import CODEC_FUNCTIONS

    FUNCTIONS.update(CODEC_FUNCTIONS)


_register_codecs()


def _register_punycode() -> None:
    from bzrk.engine.compile.functions_punycode import PUNYCODE_FUNCTIONS

    FUNCTIONS.update(PUNYCODE_FUNCTIONS)


_register_punycode()


def _register_stats() -> None:
    from bzrk.engine.compile.functions_stats import STATS_FUNCTIONS

    FUNCTIONS.update(STATS_FUNCTIONS)


_register_stats()


def _register_time() -> None:
    from bzrk.engine.compile.functions_time import TIME_FUNCTIONS

    FUNCTIONS.update(TIME_FUNCTIONS)


_register_time()


def _register_misc() -> None:
    from bzrk.engine.compile.functions_misc import MISC_FUNCTIONS

    FUNCTIONS.update(MISC_FUNCTIONS)


_register_misc()


def _register_bags() -> None:
    from bzrk.engine.compile.functions_bags import dynamic_to_json

    FUNCTIONS["dynamic_to_json"] = dynamic_to_json


_register_bags()


def _register_text() -> None:
    from bzrk.engine.compile.functions_text import TEXT_FUNCTIONS

    FUNCTIONS.update(TEXT_FUNCTIONS)


_register_text()
