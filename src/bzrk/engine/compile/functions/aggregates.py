"""KQL aggregate functions → ClickHouse aggregates, and their default result names.

``make_list`` skips nulls (``groupArray`` does too), ``count()`` counts rows, ``dcount`` uses
``uniqCombined64`` (exact for small sets, bounded memory for large ones), and list/set/bag
results are dynamic JSON text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.histograms import HISTOGRAM_AGGREGATES
from bzrk.engine.compile.functions.metrics import METRIC_AGGREGATES
from bzrk.engine.compile.functions.schema_agg import buildschema
from bzrk.engine.compile.functions.sketches import SKETCH_AGGREGATES
from bzrk.engine.compile.semantics import as_number, coerce_dynamic_args
from bzrk.engine.compile.typed import T, Typed, cast_to, lit, to_json, to_string
from bzrk.kql import catalog
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler

AggBuilder = Callable[["ExprCompiler", list[Typed], K.Call], Typed]
AGGREGATES: dict[str, AggBuilder] = {}


def agg(names: str, builder: AggBuilder) -> None:
    for name in names.split():
        AGGREGATES[name] = builder


def _cond(c: ExprCompiler, value: Typed) -> S.Expr:
    return T("ifNull({0}, false)", c.as_bool(value))


def _sum_type(t: str) -> str:
    return {
        "int": "long",
        "long": "long",
        "real": "real",
        "decimal": "decimal",
        "timespan": "timespan",
        "bool": "long",
    }.get(t, "real")


def _sum(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x = as_number(a[0])
    rtype = _sum_type(x.type)
    fname = "toInt64" if rtype in ("long", "timespan") else ("toFloat64" if rtype == "real" else "")
    # The sum of no values is 0 (ClickHouse answers NULL for a Nullable column).
    inner = T("sum({0})", x.sql) if rtype == "decimal" else T("ifNull(sum({0}), 0)", x.sql)
    return Typed(T(fname + "({0})", inner) if fname else inner, rtype)


def _sumif(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x = a[0]
    rtype = _sum_type(x.type)
    fname = "toInt64" if rtype in ("long", "timespan") else "toFloat64"
    return Typed(T(fname + "(ifNull(sumIf({0}, {1}), 0))", x.sql, _cond(c, a[1])), rtype)


def _avg(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x = a[0]
    if x.type == "datetime":
        return Typed(
            T(
                "reinterpret(toInt64(avg(reinterpretAsInt64({0}))), 'DateTime64(7, \\'UTC\\')')",
                x.sql,
            ),
            "datetime",
        )
    if x.type == "timespan":
        return Typed(T("toInt64(avg({0}))", x.sql), "timespan")
    # The average of no values is 0/0; decimals are summed exactly, then divided in real.
    value = x.sql if x.type == "decimal" else cast_to(x, "real").sql
    return Typed(T("ifNull(avg({0}), nan)", value), "real")


def _avgif(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(T("avgIf({0}, {1})", cast_to(a[0], "real").sql, _cond(c, a[1])), "real")


def _minmax(fname: str) -> AggBuilder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        x = a[0]
        if x.type == "string":
            return Typed(T(fname + "If({0}, {0} != '')", x.sql), "string")
        x = as_number(x)
        return Typed(T(fname + "({0})", x.sql), x.type)

    return build


def _minmaxif(fname: str) -> AggBuilder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        x = as_number(a[0])
        return Typed(T(fname + "If({0}, {1})", x.sql, _cond(c, a[1])), x.type)

    return build


def _skip_null_json(x: Typed) -> S.Expr:
    if x.type == "dynamic":
        return T("nullIf({0}, 'null')", x.sql)
    return to_json(x)


def _json_list(items: S.Expr) -> S.Expr:
    return T("concat('[', arrayStringConcat({0}, ','), ']')", items)


# The deprecated makelist/makeset keep 128 items unless told otherwise (their reference
# pages); make_list/make_set 1,048,576.
_DEPRECATED_LIMIT = {"makelist": 128, "makeset": 128}


def _limit(a: list[Typed], i: int, n: K.Call | None = None) -> str:
    """The maxSize argument at ``i``: a positive constant, else the function's default."""
    sql = a[i].sql if len(a) > i else None
    if isinstance(sql, S.Template) and sql.args and isinstance(sql.args[0], S.Lit):
        value = int(sql.args[0].value)
        if value > 0:  # 0 or a negative size: the default (ClickHouse refuses groupArray(0))
            return str(value)
    return str(_DEPRECATED_LIMIT.get(n.name if n is not None else "", 1_048_576))


def _make_list(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if a[0].type == "dynamic":
        # Kusto appends an array value's elements, not the array (as make_set does).
        items = T("groupArray(" + _limit(a, 1, n) + ")({0})", _elements(a[0]))
        return Typed(
            _json_list(T("arraySlice(arrayFlatten({0}), 1, " + _limit(a, 1, n) + ")", items)),
            "dynamic",
        )
    return Typed(
        _json_list(T("groupArray(" + _limit(a, 1, n) + ")({0})", _skip_null_json(a[0]))), "dynamic"
    )


def _elements(x: Typed) -> S.Expr:
    """A dynamic value as the list of what make_list/make_set collect: an array's elements."""
    return T(
        "if(isNull({0}), emptyArrayString(), "
        "if(JSONType({0}) = 'Array', JSONExtractArrayRaw({0}), [assumeNotNull({0})]))",
        _skip_null_json(x),
    )


def _make_list_if(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(
        _json_list(
            T("groupArrayIf(" + _limit(a, 2) + ")({0}, {1})", _skip_null_json(a[0]), _cond(c, a[1]))
        ),
        "dynamic",
    )


def _make_list_with_nulls(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(_json_list(T("groupArray(ifNull({0}, 'null'))", to_json(a[0]))), "dynamic")


def _set_items(x: Typed) -> S.Expr:
    # make_set of arrays collects their elements.
    if x.type == "dynamic":
        return T("arrayFlatten(groupArray({0}))", _elements(x))
    return T("groupArray({0})", _skip_null_json(x))


def _make_set(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(
        _json_list(
            T("arraySlice(arrayDistinct({0}), 1, " + _limit(a, 1, n) + ")", _set_items(a[0]))
        ),
        "dynamic",
    )


def _make_set_if(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(
        _json_list(
            T(
                "arraySlice(arrayDistinct(groupArrayIf({0}, {1})), 1, " + _limit(a, 2) + ")",
                _skip_null_json(a[0]),
                _cond(c, a[1]),
            )
        ),
        "dynamic",
    )


_BAG_OF_PAIRS = (
    "concat('{{', arrayStringConcat(arrayMap(kv -> concat(toJSONString(kv.1), ':', kv.2), "
    "arrayFilter((kv, i) -> indexOf(arrayMap(p -> p.1, {0}), kv.1) = i, {0}, arrayEnumerate({0}))), ','), '}}')"
)


def _bag(pairs: S.Expr, a: list[Typed], size_at: int) -> Typed:
    """The bag of the first value of each key; ``make_bag(x, n)`` keeps the first n keys."""
    if len(a) > size_at:
        size = cast_to(a[size_at], "long").sql
        first = T(
            "arrayFilter((kv, i) -> indexOf(arrayMap(p -> p.1, {0}), kv.1) = i, {0}, "
            "arrayEnumerate({0}))",
            pairs,
        )
        pairs = T("arraySlice({0}, 1, toUInt64(greatest({1}, 0)))", first, size)
    return Typed(T(_BAG_OF_PAIRS, pairs), "dynamic")


def _make_bag(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    pairs = T(
        "arrayFlatten(groupArray(JSONExtractKeysAndValuesRaw(ifNull({0}, '{{}}'))))", a[0].sql
    )
    return _bag(pairs, a, 1)


def _make_bag_if(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    pairs = T(
        "arrayFlatten(groupArrayIf(JSONExtractKeysAndValuesRaw(ifNull({0}, '{{}}')), {1}))",
        a[0].sql,
        _cond(c, a[1]),
    )
    return _bag(pairs, a, 2)


def _count(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    # Kusto's count(x) counts rows, nulls included (verified against the emulator).
    return Typed(T("toInt64(count())"), "long")


# Kusto's dcount is a HyperLogLog estimate whose accuracy level (0-4) trades error for memory:
# 2^12, 2^14 (the default, 0.8 %), 2^16, 2^17 and 2^18 cells (the dcount docs' table).
# uniqCombined is exact for small sets and then an HLL of 2^p cells, so p follows that table;
# memory stays bounded on large data where uniqExact would keep every value.
_DCOUNT_PRECISION = {0: 12, 1: 14, 2: 16, 3: 17, 4: 18}


def _precision(n: K.Call, position: int) -> int:
    level = n.args[position] if len(n.args) > position else None
    if isinstance(level, K.Literal) and isinstance(level.value, int):
        return _DCOUNT_PRECISION.get(level.value, 14)
    return 14


def _dcount(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(S.DistinctCount(a[0].sql, _precision(n, 1)), "long")


def _dcountif(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(S.DistinctCount(a[0].sql, _precision(n, 2), _cond(c, a[1])), "long")


def _count_distinct(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    # Exact, unlike dcount; nulls are not values (0 over none).
    return Typed(T("toInt64(ifNull(uniqExact({0}), 0))", a[0].sql), "long")


def _count_distinctif(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(T("toInt64(ifNull(uniqExactIf({0}, {1}), 0))", a[0].sql, _cond(c, a[1])), "long")


# Kusto's deviation and variance of fewer values than they need is 0, not NaN or null.
def _stat(fname: str) -> AggBuilder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        return Typed(
            T("ifNotFinite(ifNull(" + fname + "({0}), 0), 0)", cast_to(a[0], "real").sql), "real"
        )

    return build


def _statif(fname: str) -> AggBuilder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        return Typed(
            T(
                "ifNotFinite(ifNull(" + fname + "If({0}, {1}), 0), 0)",
                cast_to(a[0], "real").sql,
                _cond(c, a[1]),
            ),
            "real",
        )

    return build


def checked_percent(node: K.Expr, value: object) -> float:
    """A constant percentage, refused (located at ``node``) unless a number in [0, 100]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise unsupported(
            node,
            f"a percentile must be a number from 0 to 100, not {value!r}",
            code="InvalidArgument",
        )
    return float(value)


def nearest_rank_level(percent: float) -> float:
    """The quantileExactLow level for Kusto's nearest rank ceil(p/100 * n).

    ClickHouse takes ceil(level * n) too, but 0.9 * 100 is 90.00000000000001 in doubles and
    would pick rank 91; a level a hair lower keeps exact products on their rank.
    """
    return max(0.0, percent / 100.0 - 1e-12)


def _percentile(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x = as_number(a[0])
    point = n.args[1] if len(n.args) > 1 else None
    if isinstance(point, K.Literal):
        pv: S.Expr = S.Lit(nearest_rank_level(checked_percent(point, point.value)))
    else:
        pv = T("greatest(0, {0} / 100.0 - 1e-12)", cast_to(a[1], "real").sql)
    if x.type == "datetime":
        return Typed(
            T(
                "reinterpret(toInt64(quantileExactLow({0})(reinterpretAsInt64({1}))), 'DateTime64(7, \\'UTC\\')')",
                pv,
                x.sql,
            ),
            "datetime",
        )
    return Typed(
        S.Func("quantileExactLow", [x.sql], params=[pv]),
        "long"
        if x.type == "int"
        else (x.type if x.type in ("long", "real", "timespan") else "real"),
    )


def _percentilew(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    """percentilew(x, weight, p) inside an expression: a row counts ``weight`` times (a null or
    negative weight not at all), as percentilesw does."""
    x, weight = as_number(a[0]), cast_to(a[1], "long").sql
    point = n.args[2] if len(n.args) > 2 else None
    if isinstance(point, K.Literal):
        pv: S.Expr = S.Lit(nearest_rank_level(checked_percent(point, point.value)))
    else:
        pv = T("greatest(0, {0} / 100.0 - 1e-12)", cast_to(a[2], "real").sql)
    return Typed(
        S.Func(
            "quantileExactWeighted",
            [x.sql, T("toUInt64(greatest(ifNull({0}, 0), 0))", weight)],
            params=[pv],
        ),
        x.type if x.type in ("long", "real", "timespan", "datetime") else "real",
    )


def _take_any(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x = a[0]
    if x.type == "string":
        return Typed(T("anyIf({0}, {0} != '')", x.sql), "string")
    return Typed(T("any({0})", x.sql), x.type)


def _take_anyif(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(T("anyIf({0}, {1})", a[0].sql, _cond(c, a[1])), a[0].type)


def _countif(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    return Typed(T("toInt64(countIf({0}))", _cond(c, a[0])), "long")


def _logical(fname: str) -> AggBuilder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        return Typed(T(fname + "({0})", cast_to(a[0], "long").sql), "long")

    return build


agg("count", _count)
agg("countif", _countif)
agg("sum", _sum)
agg("sumif", _sumif)
agg("avg", _avg)
agg("avgif", _avgif)
agg("min", _minmax("min"))
agg("max", _minmax("max"))
agg("minif", _minmaxif("min"))
agg("maxif", _minmaxif("max"))
agg("dcount", _dcount)
agg("dcountif", _dcountif)
agg("count_distinct", _count_distinct)
agg("count_distinctif", _count_distinctif)
# Kusto's deprecated spellings, still accepted there.
agg("makelist", _make_list)
agg("makeset", _make_set)
agg("make_dictionary", _make_bag)
agg("make_list", _make_list)
agg("make_list_if", _make_list_if)
agg("make_list_with_nulls", _make_list_with_nulls)
agg("make_set", _make_set)
agg("make_set_if", _make_set_if)
agg("make_bag", _make_bag)
agg("make_bag_if", _make_bag_if)
agg("stdev", _stat("stddevSamp"))
agg("stdevp", _stat("stddevPop"))
agg("variance", _stat("varSamp"))
agg("variancep", _stat("varPop"))
agg("stdevif", _statif("stddevSamp"))
agg("stdevpif", _statif("stddevPop"))
agg("varianceif", _statif("varSamp"))
agg("variancepif", _statif("varPop"))
agg("percentile", _percentile)
agg("percentilew", _percentilew)
agg("take_any any", _take_any)
agg("take_anyif anyif", _take_anyif)
agg("binary_all_and", _logical("groupBitAnd"))
agg("binary_all_or", _logical("groupBitOr"))
agg("binary_all_xor", _logical("groupBitXor"))

MULTI_COLUMN = frozenset(
    {"arg_max", "arg_min", "percentiles", "percentilesw", "percentilesw_array", "take_any"}
)


class AggregateContext:
    """Lets the expression compiler turn aggregate calls into aggregate SQL inside summarize."""

    def __init__(self, row_scope_compiler: Callable[[], ExprCompiler]) -> None:
        self._row = row_scope_compiler

    def try_aggregate(self, c: ExprCompiler, node: K.Call) -> Typed | None:
        builder = AGGREGATES.get(node.name)
        if builder is None:
            return None
        row = self._row()
        args = [row.compile(a) for a in node.args if not isinstance(a, K.Star)]
        args = coerce_dynamic_args(catalog.lookup_aggregate(node.name), args)
        try:
            return builder(c, args, node)
        except IndexError as exc:
            raise unsupported(
                node, f"wrong number of arguments to '{node.name}'", code="WrongArgumentCount"
            ) from exc


def is_aggregate(name: str) -> bool:
    return name in AGGREGATES or name in MULTI_COLUMN


__all__ = ["AGGREGATES", "AggregateContext", "is_aggregate", "lit", "to_string"]


def _covariance(fname: str, conditional: bool) -> AggBuilder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        x, y = cast_to(a[0], "real").sql, cast_to(a[1], "real").sql
        if conditional:
            return Typed(T(fname + "If({0}, {1}, {2})", x, y, _cond(c, a[2])), "real")
        return Typed(T(fname + "({0}, {1})", x, y), "real")

    return build


agg("covariance", _covariance("covarSamp", False))
agg("covariancep", _covariance("covarPop", False))
agg("covarianceif", _covariance("covarSamp", True))
agg("covariancepif", _covariance("covarPop", True))

# Families with modules of their own.
AGGREGATES["buildschema"] = buildschema
AGGREGATES.update(SKETCH_AGGREGATES)
AGGREGATES.update(METRIC_AGGREGATES)
AGGREGATES.update(HISTOGRAM_AGGREGATES)
