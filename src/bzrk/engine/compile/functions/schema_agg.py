"""buildschema(): the union schema of dynamic values, as an aggregate.

Each value is flattened into (path, type) pairs — `"\\`indexer\\`"` is the step into array
elements — the distinct pairs are collected across rows, and the nested schema is rebuilt from
them: a bag of the child keys, the scalar types at that path, or an array of both (the bag
first, then the type names in order). Paths are followed 6 levels deep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.typed import T, Typed, to_json

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_DEPTH = 6
_INDEXER = "'`indexer`'"
_TYPE_NAME = (
    "multiIf(JSONType({0}) IN ('Int64', 'UInt64'), 'long', JSONType({0}) = 'Double', 'double', "
    "JSONType({0}) = 'String', 'string', JSONType({0}) = 'Bool', 'bool', 'dynamic')"
)


def _flatten(json_text: str, path: str, depth: int) -> str:
    """SQL: Array(Tuple(Array(String), String)) of the (path, type) pairs of ``json_text``."""
    leaf = f"[tuple({path}, {_TYPE_NAME.format(json_text)})]"
    if depth == 0:
        return leaf
    kv, el = f"__kv{depth}", f"__el{depth}"
    into_bag = _flatten(f"{kv}.2", f"arrayPushBack({path}, {kv}.1)", depth - 1)
    into_array = _flatten(el, f"arrayPushBack({path}, {_INDEXER})", depth - 1)
    return (
        f"multiIf(JSONType({json_text}) = 'Object', arrayFlatten(arrayMap({kv} -> {into_bag}, "
        f"JSONExtractKeysAndValuesRaw({json_text}))), JSONType({json_text}) = 'Array', "
        f"arrayFlatten(arrayMap({el} -> {into_array}, JSONExtractArrayRaw({json_text}))), "
        f"JSONType({json_text}) = 'Null', CAST([], 'Array(Tuple(Array(String), String))'), {leaf})"
    )


def _rebuild(pairs: str, prefix: str, depth: int) -> str:
    """SQL: the schema JSON of the pairs under ``prefix``."""
    types, keys, bag = f"__ty{depth}", f"__ky{depth}", f"__bg{depth}"
    exact = (
        f"arraySort(arrayDistinct(arrayMap(__p -> __p.2, arrayFilter(__p -> __p.1 = {prefix}, "
        f"{pairs}))))"
    )
    children = (
        f"arrayDistinct(arrayMap(__p -> __p.1[length({prefix}) + 1], arrayFilter(__p -> "
        f"length(__p.1) > length({prefix}) AND arraySlice(__p.1, 1, length({prefix})) = {prefix}, "
        f"{pairs})))"
    )
    if depth == 0:
        child = "'\"dynamic\"'"
        body = f"concat('{{{{', arrayStringConcat(arrayMap(__k -> concat(toJSONString(__k), ':', {child}), {keys}), ','), '}}}}')"
    else:
        inner = _rebuild(pairs, f"arrayPushBack({prefix}, __k{depth})", depth - 1)
        body = (
            f"concat('{{{{', arrayStringConcat(arrayMap(__k{depth} -> concat(toJSONString(__k{depth}), "
            f"':', {inner}), {keys}), ','), '}}}}')"
        )
    names = f"arrayStringConcat(arrayMap(__t -> toJSONString(__t), {types}), ',')"
    combined = (
        f"multiIf(empty({keys}) AND length({types}) = 1, toJSONString({types}[1]), empty({keys}), "
        f"concat('[', {names}, ']'), empty({types}), {bag}, concat('[', {bag}, ',', {names}, ']'))"
    )
    return (
        f"arrayMap({types} -> arrayMap({keys} -> arrayMap({bag} -> {combined}, [{body}])[1], "
        f"[{children}])[1], [{exact}])[1]"
    )


def buildschema(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    value = T("ifNull({0}, '')", to_json(args[0]))
    flat = T(_flatten("{0}", "CAST([], 'Array(String)')", _DEPTH), value)
    return Typed(
        T(
            "arrayMap(__P -> if(empty(__P), NULL, "
            + _rebuild("__P", "CAST([], 'Array(String)')", _DEPTH)
            + "), [groupUniqArrayArray({0})])[1]",
            flat,
        ),
        "dynamic",
    )
