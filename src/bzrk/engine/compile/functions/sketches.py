"""hll / tdigest sketches, kept exact: an hll is the JSON array of distinct values, a tdigest
the JSON array of (weighted) values.

Exact sketches give Kusto's answers on small inputs and stay mergeable (union / concat); a
bounded-memory version (ClickHouse ``-State`` aggregates) belongs to progressive execution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.builders import type_arg
from bzrk.engine.compile.typed import T, Typed, cast_to, from_dynamic, to_json

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K


def _values(x: Typed) -> S.Expr:
    return T("nullIf({0}, 'null')", x.sql) if x.type == "dynamic" else to_json(x)


def hll(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    # A sketch of no values is null, as in Kusto.
    return Typed(
        T(
            "nullIf(concat('[', arrayStringConcat(groupUniqArray({0}), ','), ']'), '[]')",
            _values(a[0]),
        ),
        "dynamic",
    )


def hll_if(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(
        T(
            "nullIf(concat('[', arrayStringConcat(groupUniqArrayIf({0}, ifNull({1}, false)), ','), ']'), '[]')",
            _values(a[0]),
            c.as_bool(a[1]),
        ),
        "dynamic",
    )


def hll_merge_agg(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(
        T(
            "concat('[', arrayStringConcat(arrayDistinct(arrayFlatten(groupArray(JSONExtractArrayRaw({0})))), ','), ']')",
            a[0].sql,
        ),
        "dynamic",
    )


def tdigest(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    value = _values(a[0])
    if len(a) > 1:
        weight = cast_to(a[1], "long").sql
        items = T(
            "arrayFlatten(groupArray(arrayResize(emptyArrayString(), toUInt64(greatest(ifNull({1}, 0), 0)), {0})))",
            value,
            weight,
        )
    else:
        items = T("groupArray({0})", value)
    return Typed(T("nullIf(concat('[', arrayStringConcat({0}, ','), ']'), '[]')", items), "dynamic")


def tdigest_merge_agg(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(
        T(
            "concat('[', arrayStringConcat(arrayFlatten(groupArray(JSONExtractArrayRaw({0}))), ','), ']')",
            a[0].sql,
        ),
        "dynamic",
    )


SKETCH_AGGREGATES = {
    "hll": hll,
    "hll_if": hll_if,
    "hll_merge": hll_merge_agg,
    "tdigest": tdigest,
    "tdigest_merge": tdigest_merge_agg,
    "merge_tdigest": tdigest_merge_agg,
}


def hll_merge(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    arrays = (
        S.Func("arrayConcat", [T("JSONExtractArrayRaw({0})", x.sql) for x in a])
        if len(a) > 1
        else T("JSONExtractArrayRaw({0})", a[0].sql)
    )
    return Typed(
        T("concat('[', arrayStringConcat(arrayDistinct({0}), ','), ']')", arrays), "dynamic"
    )


def tdigest_merge(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    arrays = (
        S.Func("arrayConcat", [T("JSONExtractArrayRaw({0})", x.sql) for x in a])
        if len(a) > 1
        else T("JSONExtractArrayRaw({0})", a[0].sql)
    )
    return Typed(T("concat('[', arrayStringConcat({0}, ','), ']')", arrays), "dynamic")


def dcount_hll(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(T("toInt64(length(JSONExtractArrayRaw({0})))", a[0].sql), "long")


def _sorted(digest: S.Expr) -> S.Expr:
    return T("arraySort(x -> toFloat64OrZero(x), JSONExtractArrayRaw({0}))", digest)


def _nearest_rank(digest: S.Expr, pct: S.Expr) -> S.Expr:
    return T(
        "arrayElement({0}, toInt64(greatest(1, least(toFloat64(length({0})), ceil({1} / 100.0 * length({0}))))))",
        _sorted(digest),
        pct,
    )


def percentile_tdigest(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    raw = _nearest_rank(a[0].sql, cast_to(a[1], "real").sql)
    if len(n.args) > 2:
        return from_dynamic(raw, type_arg(n.args[2]))
    return Typed(raw, "dynamic")


def percentiles_array_tdigest(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if len(a) == 2 and a[1].type == "dynamic":
        points: S.Expr = T("arrayMap(p -> toFloat64OrZero(p), JSONExtractArrayRaw({0}))", a[1].sql)
    else:
        points = S.Func("array", [cast_to(x, "real").sql for x in a[1:]])
    return Typed(
        T(
            "concat('[', arrayStringConcat(arrayMap(p -> arrayElement({0}, toInt64(greatest(1, least(toFloat64(length({0})), ceil(p / 100.0 * length({0})))))), {1}), ','), ']')",
            _sorted(a[0].sql),
            points,
        ),
        "dynamic",
    )


def rank_tdigest(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    value = cast_to(a[1], "real").sql
    return Typed(
        T(
            "toFloat64(length(arrayFilter(x -> toFloat64OrZero(x) <= {1}, JSONExtractArrayRaw({0}))))",
            a[0].sql,
            value,
        ),
        "real",
    )


def percentrank_tdigest(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    """The share of the digest's values at or below ``value``, in percent: the inverse of
    percentile_tdigest's nearest rank (null for an empty digest)."""
    value = cast_to(a[1], "real").sql
    return Typed(
        T(
            "if(length(JSONExtractArrayRaw({0})) = 0, NULL, 100.0 * length(arrayFilter("
            "x -> toFloat64OrZero(x) <= {1}, JSONExtractArrayRaw({0}))) / length(JSONExtractArrayRaw({0})))",
            a[0].sql,
            value,
        ),
        "real",
    )


SKETCH_FUNCTIONS = {
    "hll_merge": hll_merge,
    "tdigest_merge": tdigest_merge,
    "merge_tdigest": tdigest_merge,
    "dcount_hll": dcount_hll,
    "percentile_tdigest": percentile_tdigest,
    "percentiles_array_tdigest": percentiles_array_tdigest,
    "rank_tdigest": rank_tdigest,
    "percentrank_tdigest": percentrank_tdigest,
}
