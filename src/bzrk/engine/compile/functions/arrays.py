"""Array functions: sorts (one array, or several sorted together into one column each), shifts,
splits, `array_iff`, `range()`, `repeat`, `jaccard_index`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.builders import TICKS_PER_DAY, Builder, registrar
from bzrk.engine.compile.typed import T, Typed, cast_to, json_or_null_literal, lit, to_string

if TYPE_CHECKING:
    from collections.abc import Callable

    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

SORTS = {"array_sort_asc": False, "array_sort_desc": True}


def sorted_array_columns(
    compiler: ExprCompiler, expr: K.Call, name_of: Callable[[K.Expr], str | None]
) -> list[tuple[str, Typed]] | None:
    """Several arrays sorted together: one ``<argument>_sorted`` column per array, as Kusto names
    them. One array (plus the optional nulls-last flag) stays a single value."""
    args = [compiler.compile(a) for a in expr.args]
    arrays = args[:-1] if args and args[-1].type == "bool" else args
    if len(arrays) < 2:
        return None
    together = array_sort(args, descending=SORTS[expr.name])
    out = []
    for i, node in enumerate(expr.args[: len(arrays)]):
        name = f"{name_of(node) or f'array{i + 1}'}_sorted"
        out.append(
            (
                name,
                Typed(
                    T("nullIf(JSONExtractRaw({0}, toInt64(" + str(i + 1) + ")), '')", together.sql),
                    "dynamic",
                ),
            )
        )
    return out


def array_sort(args: list[Typed], *, descending: bool) -> Typed:
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


def array_shift(args: list[Typed], *, left: bool) -> Typed:
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


def array_split(args: list[Typed]) -> Typed:
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


def array_iff(args: list[Typed]) -> Typed:
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


ARRAY_FUNCTIONS: dict[str, Builder] = {}
reg = registrar(ARRAY_FUNCTIONS)


# --- arrays from ranges, bags from columns, code points ---------------------------------------


def _range_array(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    start, stop = args[0], args[1]
    step = args[2] if len(args) > 2 else None
    if start.type == "datetime":
        # one hour by default, for datetimes as for timespans (the range() reference)
        step_sql = step.sql if step is not None else S.Lit(TICKS_PER_DAY // 24)
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


def _repeat(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # At most 1,048,576 elements, as range(): repeat('a', 1000000000) took 4 GB per answer.
    item = json_or_null_literal(args[0])
    count = cast_to(args[1], "long").sql
    return Typed(
        T(
            # a negative count is null (the reference)
            "if({1} < 0, NULL, concat('[', arrayStringConcat(arrayResize(emptyArrayString(), "
            "least(1048576, toUInt64(greatest({1}, 0))), {0}), ','), ']'))",
            item,
            count,
        ),
        "dynamic",
    )


reg("repeat", _repeat)
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
