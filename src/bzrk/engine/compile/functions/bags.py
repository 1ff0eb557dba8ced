"""Property bags: edits at a JSONPath (``bag_set_key(b, '$.a.b', v)``,
``bag_remove_keys(b, dynamic(['$.a.b']))``, built by recursion over the constant path), merges,
zips, and ``dynamic_to_json`` (keys sorted at every level)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.bag_paths import NativeBag
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.builders import Builder, registrar
from bzrk.engine.compile.typed import T, Typed, json_or_null_literal, to_json, to_string

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_PAIRS_TO_BAG = (
    "concat('{{', arrayStringConcat(arrayMap(__kv -> concat(toJSONString(__kv.1), ':', __kv.2), "
    "{0}), ','), '}}')"
)


def _set(bag: S.Expr, path: Sequence[S.Expr], value: S.Expr) -> S.Expr:
    """``bag`` with ``value`` (JSON text) at ``path``; missing or non-bag steps become bags."""
    key = path[0]
    if len(path) > 1:
        child = T("if(JSONType({0}, {1}) = 'Object', JSONExtractRaw({0}, {1}), '{{}}')", bag, key)
        value = _set(child, path[1:], value)
    pairs = T(
        "arrayConcat(arrayFilter(__kv -> __kv.1 != {1}, JSONExtractKeysAndValuesRaw({0})), "
        "[({1}, {2})])",
        bag,
        key,
        value,
    )
    return T(_PAIRS_TO_BAG, pairs)


def _remove(bag: S.Expr, path: Sequence[S.Expr]) -> S.Expr:
    key = path[0]
    if len(path) == 1:
        return T(
            _PAIRS_TO_BAG.replace(
                "{0}", "arrayFilter(__kv -> __kv.1 != {1}, JSONExtractKeysAndValuesRaw({0}))"
            ),
            bag,
            key,
        )
    child = T("JSONExtractRaw({0}, {1})", bag, key)
    return T(
        "if(JSONType({0}, {1}) = 'Object', {2}, {0})",
        bag,
        key,
        _set(bag, [key], _remove(child, path[1:])),
    )


def _path(text: str) -> list[S.Expr] | None:
    """A key or a `$.a.b` / `$['a']` JSONPath as its string steps (None: array steps)."""
    import re

    if not text.startswith("$"):
        return [S.Lit(text)]
    steps = re.findall(r"\.([^.\[]+)|\['([^']*)'\]|\[(\d+)\]", text[1:])
    if not steps or any(index for _, _, index in steps):
        return None
    return [S.Lit(name or quoted) for name, quoted, _ in steps]


def _set_at_path(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed | None:
    key = args[1]
    if not (isinstance(key.sql, S.Lit) and isinstance(key.sql.value, str)):
        return None
    path = _path(key.sql.value)
    if path is None:
        return None
    return Typed(
        _set(T("ifNull({0}, '')", to_json(args[0])), path, json_or_null_literal(args[2])), "dynamic"
    )


def bag_remove_keys(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed | None:
    keys = args[1]
    if not (
        keys.type == "dynamic" and isinstance(keys.sql, S.Lit) and isinstance(keys.sql.value, str)
    ):
        return None
    try:
        names = json.loads(keys.sql.value)
    except ValueError:
        return None
    if not isinstance(names, list):
        return None
    bag: S.Expr = T("ifNull({0}, '')", to_json(args[0]))
    for name in names:
        if not isinstance(name, str):
            continue  # keys that are not strings are ignored
        path = _path(name)
        if path is None:
            return None
        bag = _remove(bag, path)
    return Typed(
        T("if(JSONType({0}) = 'Object', {1}, NULL)", T("ifNull({0}, '')", to_json(args[0])), bag),
        "dynamic",
    )


_CANONICAL_DEPTH = 5


def _canonical(json_text: str, depth: int) -> str:
    """SQL for ``json_text`` (an SQL expression) with bag keys sorted, ``depth`` levels deep."""
    if depth == 0:
        return json_text
    var = f"__j{depth}"
    inner = _canonical(f"{var}.2", depth - 1)
    element = _canonical(var, depth - 1)
    return (
        f"multiIf(JSONType({json_text}) = 'Object', concat('{{{{', arrayStringConcat(arrayMap({var} -> "
        f"concat(toJSONString({var}.1), ':', {inner}), arraySort({var} -> {var}.1, "
        f"JSONExtractKeysAndValuesRaw({json_text}))), ','), '}}}}'), JSONType({json_text}) = 'Array', "
        f"concat('[', arrayStringConcat(arrayMap({var} -> {element}, JSONExtractArrayRaw({json_text})), "
        f"','), ']'), {json_text})"
    )


def dynamic_to_json(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Canonical JSON text: bag keys in ordinal order at every level (up to 5 deep)."""
    return Typed(
        T(
            "arrayMap(__root -> if(__root = '', 'null', "
            + _canonical("__root", _CANONICAL_DEPTH)
            + "), "
            "[ifNull({0}, '')])[1]",
            to_json(args[0]),
        ),
        "string",
    )


def json_path(key: Typed) -> list[S.Expr]:
    """A bag key or a constant JSONPath (`$.a.b`, `$['a']`) as JSON* function path arguments."""
    if (
        isinstance(key.sql, S.Lit)
        and isinstance(key.sql.value, str)
        and key.sql.value.startswith("$")
    ):
        import re as _re

        parts = _re.findall(r"\.([^.\[]+)|\['([^']*)'\]|\[(\d+)\]", key.sql.value[1:])
        out: list[S.Expr] = []
        for name, quoted, index in parts:
            out.append(S.Lit(int(index) + 1) if index else S.Lit(name or quoted))
        return out
    return [to_string(key)]


def bag_merge(args: list[Typed]) -> Typed:
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


BAG_FUNCTIONS: dict[str, Builder] = {"dynamic_to_json": dynamic_to_json}
reg = registrar(BAG_FUNCTIONS)


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


def bag_set_key(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """A property bag with ``value`` at ``key``; null when the input is no property bag (an
    array, a string, null), as the reference says. A stored OTel bag always is one."""
    result = _bag_set_key(c, args, node)
    bag = args[0]
    if isinstance(bag.sql, NativeBag):
        return result
    return Typed(
        T("if(JSONType(ifNull({0}, '')) = 'Object', {1}, NULL)", to_json(bag), result.sql),
        "dynamic",
    )


def _bag_set_key(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    at_path = _set_at_path(c, args, node)
    if at_path is not None:
        return at_path
    bag, key, value = args[0], args[1], args[2]
    path = json_path(key)
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


reg("bag_set_key", bag_set_key)
