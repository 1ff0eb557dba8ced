"""``parse``, ``parse-where`` and ``parse-kv``: text patterns → one RE2 regex → typed columns.

The pattern is turned into a regular expression here (literals escaped in ``simple`` mode,
user groups made non-capturing in ``regex`` mode), passed to ClickHouse as a string literal,
and each captured group is converted to its declared KQL type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.functions.conversions import parse_json
from bzrk.engine.compile.functions.table import FUNCTIONS
from bzrk.engine.compile.typed import T, Typed, parse_timespan, to_string
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation

_SPECIAL = set("\\.^$|?*+()[]{}")
_TYPED_GROUPS = {
    "long": r"(-?\d+)",
    "int": r"(-?\d+)",
    "real": r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)",
    "bool": r"(true|false|True|False|TRUE|FALSE|0|1)",
}


def escape_regex(text: str) -> str:
    return "".join("\\" + ch if ch in _SPECIAL else ch for ch in text)


def non_capturing(regex: str) -> str:
    """Turn ``(`` groups of a user regex into ``(?:`` so group numbers stay ours."""
    out = []
    i = 0
    in_class = False
    while i < len(regex):
        ch = regex[i]
        if ch == "\\" and i + 1 < len(regex):
            out.append(regex[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(" and not regex.startswith("(?", i):
            out.append("(?:")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def pattern_regex(
    parts: tuple[K.ParsePart, ...], kind: str, flags: str
) -> tuple[str, list[tuple[str, str]]]:
    """The regex for a parse pattern and the (column, type) of each capture group."""
    regex = [f"(?{flags})" if flags else "", "^" if kind != "relaxed" else ""]
    columns: list[tuple[str, str]] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part.column is not None:
            kql_type = normalize_kql_type(part.column.type or "string")
            columns.append((part.column.name, kql_type))
            if kql_type in _TYPED_GROUPS and kind == "relaxed":
                # Relaxed: a value of the wrong type still matches (and converts to null).
                typed = _TYPED_GROUPS[kql_type][1:-1]
                regex.append(f"({typed}|.*)" if last else f"({typed}|.*?)")
            elif kql_type in _TYPED_GROUPS:
                regex.append(_TYPED_GROUPS[kql_type])
            else:
                # Regex mode is greedy unless flags say U; simple mode stops at the next
                # literal; relaxed mode reads typed values that way too and lets conversion
                # null the ones that do not convert.
                regex.append("(.*)" if kind == "regex" or last else "(.*?)")
        elif part.literal is not None:
            regex.append(
                non_capturing(part.literal) if kind == "regex" else escape_regex(part.literal)
            )
        else:
            regex.append(".*" if kind == "regex" else ".*?")
    return "".join(regex), columns


def _convert(c: ExprCompiler, text: S.Expr, kql_type: str) -> Typed:

    if kql_type == "string":
        return Typed(text, "string")
    if kql_type == "timespan":
        return parse_timespan(text)
    if kql_type == "dynamic":
        return parse_json(Typed(text, "string"))
    converter = {
        "long": "tolong",
        "int": "toint",
        "real": "toreal",
        "bool": "tobool",
        "datetime": "todatetime",
        "guid": "toguid",
        "decimal": "todecimal",
    }[kql_type]
    # Surrounding whitespace (a line break a greedy group took along) does not stop a conversion.
    trimmed = T("nullIf(replaceRegexpAll({0}, '^\\s+|\\s+$', ''), '')", text)
    return FUNCTIONS[converter](c, [Typed(trimmed, "string")], None)  # type: ignore[arg-type]


def op_parse(ctx: CompileContext, op: K.Parse, relation: Relation) -> Relation:
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    kind = kind_node.name.lower() if isinstance(kind_node, K.NameRef) else "simple"
    flags_node = params.get("flags")
    flags = ""
    if isinstance(flags_node, K.NameRef):
        flags = flags_node.name
    elif isinstance(flags_node, K.Literal) and isinstance(flags_node.value, str):
        flags = flags_node.value
    if kind not in ("simple", "regex", "relaxed"):
        raise unsupported(op, f"parse kind '{kind}' is not supported")
    if not all(ch in "Uims" for ch in flags):
        raise unsupported(op, f"parse flags '{flags}' are not supported")
    regex, columns = pattern_regex(op.parts, kind, flags)
    scope = ctx.scope(relation)
    compiler = ExprCompiler(scope)
    source = Typed(to_string(compiler.compile(op.source)), "string")
    groups = T("extractGroups({0}, {1})", source.sql, S.Lit(regex))
    values: dict[str, Typed] = {}
    for i, (name, kql_type) in enumerate(columns):
        group = T("arrayElement({0}, " + str(i + 1) + ")", groups)
        values[name] = _convert(compiler, group, kql_type)
    if kind == "simple":
        # Simple mode is all or nothing: a typed part that does not convert empties the row.
        typed = [values[n] for n, t in columns if t != "string"]
        if typed:
            ok: S.Expr = S.IsNull(typed[0].sql, negated=True)
            for value in typed[1:]:
                ok = S.BinOp("AND", ok, S.IsNull(value.sql, negated=True))
            for name, kql_type in columns:
                empty = (
                    S.Lit("")
                    if kql_type == "string"
                    else S.Cast(S.Lit(None), clickhouse_type(kql_type))
                )
                values[name] = Typed(
                    T("if({0}, {1}, {2})", ok, values[name].sql, empty), values[name].type
                )
    order = [n for n, _ in relation.columns] + [
        n for n, _ in columns if n not in dict(relation.columns)
    ]
    select = []
    out = []
    types = dict(relation.columns)
    for name in order:
        if name in values:
            select.append((values[name].sql, name))
            out.append((name, values[name].type))
        else:
            select.append((S.Col(name), name))
            out.append((name, types[name]))
    where: S.Expr | None = None
    if op.where_only:
        # parse-where keeps rows that match and whose typed columns all convert.
        where = T("match({0}, {1})", source.sql, S.Lit(regex))
        for name, kql_type in columns:
            if kql_type != "string":
                where = S.BinOp("AND", where, S.IsNull(values[name].sql, negated=True))
    return ctx.select(relation, select, out, where=where)


def _class_of(chars: str) -> str:
    """Characters as the inside of a regex character class."""
    return "".join("\\" + c if c in "\\]^-[" else c for c in chars)


def _kv_value_regex(
    pair_delim: str, quotes: list[tuple[str, str]], escapes: str, *, greedy: bool, words: bool
) -> str:
    """The value part: a quoted value (group 1 per quote pair) or a bare one (last group)."""
    alternatives = []
    for open_q, close_q in quotes:
        body = f"[^{_class_of(close_q + escapes)}]"
        if escapes:
            body = f"(?:{body}|[{_class_of(escapes)}].)"
        alternatives.append(f"{escape_regex(open_q)}({body}*){escape_regex(close_q)}")
    if words:
        bare = "(\\w+)"
    elif greedy:
        bare = "(.*?)"
    else:
        bare = f"([^{_class_of(pair_delim)}]*)" if pair_delim else "(.*)"
    alternatives.append(bare)
    return "(?:" + "|".join(alternatives) + ")"


def _group_count(regex: str) -> int | None:
    """Capturing groups of a regex (None for RE2-only syntax Python cannot read)."""
    import re

    try:
        return re.compile(regex).groups
    except re.error:
        return None


def op_parse_kv(ctx: CompileContext, op: K.ParseKv, relation: Relation) -> Relation:
    """`parse-kv`: specified delimiters (with quotes, escapes, greedy values), no delimiters
    (any non-alphanumeric character separates; bare values are words), or `regex` (two groups:
    key and value). The first occurrence of a key wins; values are trimmed; quoted values are
    unescaped."""
    quotes: list[tuple[str, str]] = []
    escapes = ""
    texts: dict[str, str] = {}
    greedy = False
    for param in op.with_params:
        name = param.name.lower()
        value = param.value
        if name == "greedy":
            greedy = isinstance(value, K.Literal) and value.value is True
            continue
        if not isinstance(value, K.Literal) or not isinstance(value.value, str):
            raise unsupported(
                param, f"parse-kv: {name} must be a string literal", code="InvalidArgument"
            )
        if name == "quote":
            if len(value.value) not in (1, 2):
                raise unsupported(
                    param, "parse-kv: quote takes one or two characters", code="InvalidArgument"
                )
            quotes.append((value.value[0], value.value[-1]))
        elif name == "escape":
            escapes += value.value
        elif name in ("pair_delimiter", "kv_delimiter", "regex"):
            texts[name] = value.value
        else:
            raise unsupported(param, f"parse-kv: unknown option '{name}'", code="InvalidArgument")
    user_regex = texts.get("regex")
    if user_regex is not None and _group_count(user_regex) not in (None, 2):
        raise unsupported(
            op, "parse-kv: regex must have exactly two capturing groups", code="InvalidArgument"
        )
    scope = ctx.scope(relation)
    compiler = ExprCompiler(scope)
    source = to_string(compiler.compile(op.source))
    values: dict[str, Typed] = {}
    pair_delim = texts.get("pair_delimiter", "")
    kv_delim = texts.get("kv_delimiter", "")
    specified = bool(pair_delim or kv_delim)
    for column in op.columns:
        kql_type = normalize_kql_type(column.type or "string")
        if user_regex is not None:
            pairs = T("extractAllGroupsVertical({0}, {1})", source, S.Lit(user_regex))
            text = T(
                "trimBoth(arrayElement(arrayFirst(__kv -> trimBoth(__kv[1]) = {0}, {1}), 2))",
                S.Lit(column.name),
                pairs,
            )
            values[column.name] = _convert(compiler, text, kql_type)
            continue
        key = escape_regex(column.name)
        quoted_keys = [f"{escape_regex(o)}{key}{escape_regex(c)}" for o, c in quotes]
        key_re = "(?:" + "|".join([*quoted_keys, key]) + ")"
        if specified:
            start = f"(?:^|{escape_regex(pair_delim)})" if pair_delim else "(?:^|\\s)"
            middle = f"\\s*{escape_regex(kv_delim or '=')}\\s*"
            value_re = _kv_value_regex(pair_delim, quotes, escapes, greedy=greedy, words=False)
            end = ""
            if greedy:
                # A greedy value runs up to the next `<pair delimiter> key <kv delimiter>`.
                end = f"\\s*(?:{escape_regex(pair_delim)}[^{_class_of(pair_delim + kv_delim)}]+{escape_regex(kv_delim)}|$)"
        else:
            start = "(?:^|\\W)"
            middle = "\\s*[^\\w\\s]\\s*"
            value_re = _kv_value_regex("", quotes, escapes, greedy=False, words=True)
            end = ""
        regex = f"{start}\\s*{key_re}{middle}{value_re}{end}"
        groups = T("extractGroups({0}, {1})", source, S.Lit(regex))
        text = T("trimBoth(arrayStringConcat({0}, ''))", groups)
        if escapes:
            text = T(
                "replaceRegexpAll({0}, {1}, '\\\\1')", text, S.Lit(f"[{_class_of(escapes)}](.)")
            )
        values[column.name] = _convert(compiler, text, kql_type)
    out = list(relation.columns) + [
        (n, v.type) for n, v in values.items() if n not in dict(relation.columns)
    ]
    select = [(values[n].sql if n in values else S.Col(n), n) for n, _ in out]
    return ctx.select(relation, select, out)
