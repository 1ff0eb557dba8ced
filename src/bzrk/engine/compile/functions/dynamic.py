"""KQL functions over `dynamic` values: bags, arrays, JSON paths and their conversions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths
from bzrk.engine.compile.functions.arrays import array_iff, array_shift, array_sort, array_split
from bzrk.engine.compile.functions.bags import bag_merge, bag_remove_keys, json_path
from bzrk.engine.compile.functions.builders import Builder, fn, registrar
from bzrk.engine.compile.typed import (
    T,
    Typed,
    cast_to,
    json_or_null_literal,
    lit,
    to_string,
)

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K


DYNAMIC_FUNCTIONS: dict[str, Builder] = {}
reg = registrar(DYNAMIC_FUNCTIONS)

# --- dynamic ---------------------------------------------------------------------------------


def _pack_array(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    items = [json_or_null_literal(a) for a in args]
    return Typed(
        T(
            "concat('[', arrayStringConcat({0}, ','), ']')",
            S.Func("array", items) if items else T("emptyArrayString()"),
        ),
        "dynamic",
    )


def bag_pack(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    parts = []
    for i in range(0, len(args) - 1, 2):
        parts.append(
            T(
                "concat(toJSONString({0}), ':', {1})",
                to_string(args[i]),
                json_or_null_literal(args[i + 1]),
            )
        )
    arr = S.Func("array", parts) if parts else T("emptyArrayString()")
    # An empty key drops its pair.
    arr = T("arrayFilter(p -> NOT startsWith(p, '\"\":'), {0})", arr)
    return Typed(T("concat('{{', arrayStringConcat({0}, ','), '}}')", arr), "dynamic")


reg("pack_array", _pack_array)
reg("bag_pack pack pack_dictionary", bag_pack)
reg("array_length arraylength", fn("if(JSONType({0}) = 'Array', toInt64(JSONLength({0})), NULL)"))


def _array_concat(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    inner = [T("arrayStringConcat(JSONExtractArrayRaw({0}), ',')", a.sql) for a in args]
    return Typed(
        T(
            "concat('[', arrayStringConcat(arrayFilter(x -> x != '', {0}), ','), ']')",
            S.Func("array", inner),
        ),
        "dynamic",
    )


reg("array_concat", _array_concat)


def _raw_array(x: S.Expr) -> S.Expr:
    return T("JSONExtractArrayRaw({0})", x)


def _json_array(arr: S.Expr) -> S.Expr:
    return T("concat('[', arrayStringConcat({0}, ','), ']')", arr)


def _array_fn(template: str) -> Builder:
    """A builder over the raw JSON items (Array(String)) of the first argument."""

    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        rest = [a.sql for a in args[1:]]
        return Typed(_json_array(T(template, _raw_array(args[0].sql), *rest)), "dynamic")

    return build


reg("array_reverse", _array_fn("arrayReverse({0})"))
reg("array_sort_asc", lambda c, a, n: array_sort(a, descending=False))
reg("array_sort_desc", lambda c, a, n: array_sort(a, descending=True))
reg(
    "array_slice",
    _array_fn(
        # a start before the first element is the first element (out-of-range indices are
        # ignored, as the reference says): array_slice([1, 2, 3, 4, 5], -6, 1) is [1, 2]
        "arraySlice({0}, toInt64(greatest(0, if({1} < 0, length({0}) + {1}, {1})) + 1), toInt64(greatest(0, if({2} < 0, length({0}) + {2}, least({2}, length({0}) - 1)) - greatest(0, if({1} < 0, length({0}) + {1}, {1})) + 1)))"
    ),
)
reg("array_shift_left", lambda c, a, n: array_shift(a, left=True))
reg("array_shift_right", lambda c, a, n: array_shift(a, left=False))
reg("array_rotate_left", _array_fn("arrayRotateLeft({0}, toInt64({1}))"))
reg("array_rotate_right", _array_fn("arrayRotateRight({0}, toInt64({1}))"))
reg(
    "array_index_of",
    lambda c, a, n: _array_index_of(a),
)


reg("array_sum", fn("arraySum(arrayMap(x -> toFloat64OrZero(x), JSONExtractArrayRaw({0})))"))
reg("array_split", lambda c, a, n: array_split(a))
reg(
    "set_has_element",
    lambda c, a, n: Typed(
        T("has(JSONExtractArrayRaw({0}), {1})", a[0].sql, json_or_null_literal(a[1])), "bool"
    ),
)
reg(
    "set_union",
    lambda c, a, n: Typed(
        _json_array(
            T(
                "arrayDistinct(arrayConcat({0}))",
                S.Func("arrayConcat", [_raw_array(x.sql) for x in a])
                if len(a) > 1
                else _raw_array(a[0].sql),
            )
        ),
        "dynamic",
    ),
)


def _first_set_filtered(condition: str) -> Builder:
    """The distinct elements of the first array meeting ``condition`` over the others'
    membership tests (``"{all}"``: in every other array; ``"NOT ({any})"``: in none)."""

    def build(c: Any, a: list[Typed], n: Any) -> Typed:
        tests = [f"has({{{i}}}, x)" for i in range(1, len(a))]
        keep = condition.format(all=" AND ".join(tests), any=" OR ".join(tests))
        return Typed(
            _json_array(
                T(
                    "arrayDistinct(arrayFilter(x -> " + keep + ", {0}))",
                    *[_raw_array(x.sql) for x in a],
                )
            ),
            "dynamic",
        )

    return build


# Whether two arrays hold the same distinct values (compared as set_union compares them: by
# their JSON text); null where either is not an array.
reg(
    "set_equals",
    lambda c, a, n: Typed(
        T(
            "if(JSONType({0}) = 'Array' AND JSONType({1}) = 'Array', "
            "arraySort(arrayDistinct({2})) = arraySort(arrayDistinct({3})), NULL)",
            a[0].sql,
            a[1].sql,
            _raw_array(a[0].sql),
            _raw_array(a[1].sql),
        ),
        "bool",
    ),
)
reg("set_intersect", _first_set_filtered("{all}"))
reg("set_difference", _first_set_filtered("NOT ({any})"))
reg(
    "strcat_array array_strcat",
    lambda c, a, n: Typed(
        T(
            "arrayStringConcat(arrayMap(x -> " + DYN_TEXT_X + ", JSONExtractArrayRaw({0})), {1})",
            a[0].sql,
            to_string(a[1]),
        ),
        "string",
    ),
)


def _bag_keys(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    # A stored OTel bag's keys are flat ("http.method"): its leaf paths (bag_paths.STORED_BAGS),
    # read natively where the table read carries them (bag_paths.KEYS), else from its text.
    native = bag_paths.stored_keys(a[0].sql)
    if native is not None:
        return Typed(native, "dynamic")
    keys = (
        # a key without a value (a declared typed path the record lacks) is no key
        "arrayMap(e -> e.1, arrayFilter(e -> e.2 != 'null', "
        + bag_paths.keys_and_values(bag_paths.FLAT_LEVELS)
        + "))"
        if n.args and bag_paths.is_stored_bag(n.args[0])
        else "JSONExtractKeys({0})"
    )
    return Typed(
        T(
            "if(JSONType(ifNull({0}, '')) = 'Object', concat('[', arrayStringConcat("
            "arrayMap(k -> toJSONString(k), " + keys + "), ','), ']'), NULL)",
            a[0].sql,
        ),
        "dynamic",
    )


reg("bag_keys", _bag_keys)


reg(
    "bag_has_key",
    lambda c, a, n: Typed(
        S.Func("JSONHas", [T("ifNull({0}, '')", a[0].sql), *json_path(a[1])]), "bool"
    ),
)
reg("bag_merge", lambda c, a, n: bag_merge(a))


def _bag_remove_listed_keys(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(
        T(
            "concat('{{', arrayStringConcat(arrayMap(kv -> concat(toJSONString(kv.1), ':', kv.2), arrayFilter(kv -> NOT has(arrayMap(k -> "
            + _DYN_TEXT_K
            + ", JSONExtractArrayRaw({1})), kv.1), JSONExtractKeysAndValuesRaw({0}))), ','), '}}')",
            a[0].sql,
            a[1].sql,
        ),
        "dynamic",
    )


def _bag_remove_keys(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    constant = bag_remove_keys(c, args, node)
    return constant if constant is not None else _bag_remove_listed_keys(c, args, node)


reg("bag_remove_keys", _bag_remove_keys)
reg("gettype", lambda c, a, n: gettype(a[0]))
reg("array_iff array_iif", lambda c, a, n: array_iff(a))
reg(
    "zip",
    lambda c, a, n: Typed(
        _json_array(
            T(
                "arrayMap(i -> concat('[', arrayStringConcat(["
                + ", ".join(
                    f"ifNull(arrayElementOrNull(JSONExtractArrayRaw({{{j}}}), i), 'null')"
                    for j in range(len(a))
                )
                + "], ','), ']'), range(1, greatest("
                + ", ".join(f"length(JSONExtractArrayRaw({{{j}}}))" for j in range(len(a)))
                + ") + 1))",
                *[x.sql for x in a],
            )
        ),
        "dynamic",
    ),
)

DYN_TEXT_X = "if(x = 'null', '', if(JSONType(x) = 'String', JSONExtractString(x), x))"
_DYN_TEXT_K = "if(JSONType(k) = 'String', JSONExtractString(k), k)"


def index_window(args: list[Typed], size: S.Expr) -> tuple[S.Expr, S.Expr, S.Expr]:
    """``indexof``'s optional ``start``, ``length`` and ``occurrence`` (arguments 2-4).

    Returns where the search begins (a negative start counts back from ``size``), the length
    (-1: to the end) and which match to return.
    """
    start = T("toInt64({0})", cast_to(args[2], "long").sql) if len(args) > 2 else lit(0)
    length = T("toInt64({0})", cast_to(args[3], "long").sql) if len(args) > 3 else lit(-1)
    occurrence = T("toInt64({0})", cast_to(args[4], "long").sql) if len(args) > 4 else lit(1)
    begin = T("if({0} < 0, greatest(toInt64({1}) + {0}, 0), {0})", start, size)
    return begin, length, occurrence


def nth_match(hits: S.Expr, occurrence: S.Expr) -> Typed:
    """The ``occurrence``-th of the match positions ``hits``; -1 when there are fewer."""
    return Typed(
        T(
            "if({1} < 1, NULL, if(length({0}) >= {1}, toInt64({0}[{1}]), toInt64(-1)))",
            hits,
            occurrence,
        ),
        "long",
    )


def _array_index_of(a: list[Typed]) -> Typed:
    items = T("JSONExtractArrayRaw({0})", a[0].sql)
    begin, length, occurrence = index_window(a, T("length({0})", items))
    hits = T(
        "arrayFilter(i -> {1}[i + 1] = {2} AND i >= {3} AND ({4} < 0 OR i < {3} + {4}), "
        "range(0, toUInt64(length({1}))))",
        lit(0),
        items,
        json_or_null_literal(a[1]),
        begin,
        length,
    )
    return nth_match(hits, occurrence)


def gettype(value: Typed) -> Typed:
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
