"""``parse`` and ``parse-where`` (``parse-kv`` lives in parse_kv.py): text patterns → one RE2 regex → typed columns.

The pattern is turned into a regular expression here (literals escaped in ``simple`` mode,
user groups made non-capturing in ``regex`` mode), passed to ClickHouse as a string literal,
and each captured group is converted to its declared KQL type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions import ExprCompiler
from bzrk.engine.compile.typed import T, Typed, to_string
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler, Relation

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
                # Relaxed mode prefers a value of the type but takes any text up to the next
                # literal; what does not convert becomes null.
                regex.append(_TYPED_GROUPS[kql_type][:-1] + "|.*?)")
            elif kql_type in _TYPED_GROUPS:
                regex.append(_TYPED_GROUPS[kql_type])
            else:
                # Regex mode is greedy unless flags say U; simple mode stops at the next literal.
                regex.append("(.*)" if kind == "regex" or last else "(.*?)")
        elif part.literal is not None:
            regex.append(
                non_capturing(part.literal) if kind == "regex" else escape_regex(part.literal)
            )
        else:
            regex.append(".*" if kind == "regex" else ".*?")
    return "".join(regex), columns


def convert_text(c: ExprCompiler, text: S.Expr, kql_type: str) -> Typed:
    from bzrk.engine.compile.functions import FUNCTIONS

    if kql_type == "string":
        return Typed(text, "string")
    if kql_type == "timespan":
        return c.parse_timespan(text)
    if kql_type == "dynamic":
        return c.parse_json(Typed(text, "string"))
    converter = {
        "long": "tolong",
        "int": "toint",
        "real": "toreal",
        "bool": "tobool",
        "datetime": "todatetime",
        "guid": "toguid",
        "decimal": "todecimal",
    }[kql_type]
    return FUNCTIONS[converter](c, [Typed(T("nullIf({0}, '')", text), "string")], None)  # type: ignore[arg-type]


def op_parse(qc: QueryCompiler, op: K.Parse, relation: Relation) -> Relation:
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
    scope = relation.scope(qc.lets)
    compiler = ExprCompiler(scope)
    source = Typed(to_string(compiler.compile(op.source)), "string")
    groups = T("extractGroups({0}, {1})", source.sql, S.Lit(regex))
    values: dict[str, Typed] = {}
    for i, (name, kql_type) in enumerate(columns):
        group = T("arrayElement({0}, " + str(i + 1) + ")", groups)
        values[name] = convert_text(compiler, group, kql_type)
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
    return qc._select(relation, select, out, where=where)


def op_parse_kv(qc: QueryCompiler, op: K.ParseKv, relation: Relation) -> Relation:
    from bzrk.engine.compile.parse_kv import op_parse_kv as compile_parse_kv

    return compile_parse_kv(qc, op, relation)
