"""Property-bag edits at a JSONPath (``bag_set_key(b, '$.a.b', v)``,
``bag_remove_keys(b, dynamic(['$.a.b']))``), built by recursion over the constant path."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, json_or_null_literal, to_json

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bzrk.engine.compile.expressions import ExprCompiler
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


def bag_set_key(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed | None:
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
