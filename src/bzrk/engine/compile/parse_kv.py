"""``parse-kv``: key/value text → one typed column per listed key, in KQL's three modes.

* specified delimiters (``pair_delimiter``/``kv_delimiter``, optional ``quote``, ``escape``,
  ``greedy``): a key counts at the start of the text or right after a pair delimiter; its
  value is a quoted string or the text up to the next pair delimiter (greedy: up to the next
  ``<pair delimiter> key <kv delimiter>`` or the end);
* no delimiters: any non-alphanumeric character delimits, a value is a word or a quoted string;
* ``regex``: a pattern with two groups (key, value), matched everywhere.

Each listed key gets its own RE2 regex (the leftmost match is the key's first appearance,
which is the one KQL takes); leading and trailing white space of keys and values is ignored,
and a key that does not appear gives an empty string or null, by the column type.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions import ExprCompiler
from bzrk.engine.compile.parsing import convert_text, escape_regex
from bzrk.engine.compile.typed import T, Typed, to_string
from bzrk.engine.types import normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler, Relation

_PARAMS = {"pair_delimiter", "kv_delimiter", "quote", "escape", "greedy", "regex"}


def _class(chars: str) -> str:
    """Characters for use inside ``[...]`` (hex escapes, so ``]``, ``^``, ``-`` are safe)."""
    return "".join(f"\\x{{{ord(ch):x}}}" for ch in dict.fromkeys(chars))


class _Options:
    def __init__(self, op: K.ParseKv) -> None:
        self.pair: str | None = None
        self.kv: str | None = None
        self.quotes: list[tuple[str, str]] = []
        self.escapes: list[str] = []
        self.greedy = False
        self.regex: str | None = None
        for param in op.with_params:
            name = param.name.lower()
            if name not in _PARAMS:
                raise unsupported(param, f"parse-kv has no parameter '{param.name}'")
            value = param.value
            if name == "greedy":
                if not (isinstance(value, K.Literal) and isinstance(value.value, bool)):
                    raise unsupported(param, "parse-kv greedy must be true or false")
                self.greedy = value.value
                continue
            if not (isinstance(value, K.Literal) and isinstance(value.value, str)):
                raise unsupported(param, f"parse-kv {name} must be a string literal")
            text = value.value
            if name == "pair_delimiter":
                self.pair = text
            elif name == "kv_delimiter":
                self.kv = text
            elif name == "regex":
                self.regex = text
            elif name == "quote":
                if len(text) not in (1, 2):
                    raise unsupported(param, "parse-kv quote must be one or two characters")
                self.quotes.append((text[0], text[-1]))
            elif len(text) != 1:
                raise unsupported(param, "parse-kv escape must be one character")
            else:
                self.escapes.append(text)
        if (self.pair is None) != (self.kv is None) and self.regex is None:
            raise unsupported(op, "parse-kv needs both pair_delimiter and kv_delimiter")
        if self.greedy and self.pair is None:
            raise unsupported(op, "parse-kv greedy=true needs pair_delimiter and kv_delimiter")
        if self.regex is not None:
            try:
                groups = re.compile(self.regex).groups
            except re.error:
                groups = 2  # RE2-only syntax: let ClickHouse judge it
            if groups != 2:
                raise unsupported(op, "parse-kv regex must have exactly two capturing groups")

    def key(self, name: str) -> str:
        """The key, bare or inside any of the quote pairs."""
        alternatives = [
            f"{escape_regex(o)}\\s*{escape_regex(name)}\\s*{escape_regex(c)}"
            for o, c in self.quotes
        ]
        return "(?:" + "|".join([*alternatives, escape_regex(name)]) + ")"

    def quoted_values(self) -> list[str]:
        """One capture group per quote pair: the text between the quotes (escapes kept)."""
        out = []
        for o, c in self.quotes:
            if self.escapes:
                body = f"(?:[^{_class(c + ''.join(self.escapes))}]|[{_class(''.join(self.escapes))}].)*"
            else:
                body = f"[^{_class(c)}]*"
            out.append(f"{escape_regex(o)}({body}){escape_regex(c)}")
        return out


def _value_regex(opts: _Options, name: str) -> str:
    quoted = opts.quoted_values()
    if opts.pair is None:
        # No delimiters: whatever non-alphanumeric run follows the key separates it from a
        # word (or a quoted string).
        opening = _class("".join(o for o, _ in opts.quotes))
        gap = f"[^\\w{opening}]+" if opening else "\\W+"
        bare = "(\\w+)"
        return f"(?:^|\\W){opts.key(name)}{gap}(?:" + "|".join([*quoted, bare]) + ")"
    assert opts.kv is not None
    pair, kv = escape_regex(opts.pair), escape_regex(opts.kv)
    if opts.greedy:
        # Up to the next appearance of some key (bare or quoted) and its kv delimiter.
        key_chars = _class(opts.pair + opts.kv) + "\\s"
        quoted_key = [f"{escape_regex(o)}[^{_class(c)}]*{escape_regex(c)}" for o, c in opts.quotes]
        next_key = "(?:" + "|".join([*quoted_key, f"[^{key_chars}]+"]) + ")"
        bare = f"(.*?)\\s*(?:{pair}\\s*{next_key}\\s*{kv}|$)"
    else:
        bare = f"(.*?)\\s*(?:{pair}|$)"
    return f"(?:^|{pair})\\s*{opts.key(name)}\\s*{kv}\\s*(?:" + "|".join([*quoted, bare]) + ")"


def _extract(opts: _Options, source: S.Expr, name: str) -> S.Expr:
    if opts.regex is not None:
        groups = T("extractAllGroupsHorizontal({0}, {1})", source, S.Lit(opts.regex))
        return T(
            "trimBoth(arrayElement(arrayElement({0}, 2), "
            "indexOf(arrayMap(x -> trimBoth(x), arrayElement({0}, 1)), {1})))",
            groups,
            S.Lit(name),
        )
    groups = T("extractGroups({0}, {1})", source, S.Lit(_value_regex(opts, name)))
    parts: list[S.Expr] = []
    for index in range(len(opts.quotes) + 1):
        part: S.Expr = T(f"arrayElement({{0}}, {index + 1})", groups)
        if index < len(opts.quotes) and opts.escapes:
            part = T(
                "replaceRegexpAll({0}, {1}, '\\\\1')",
                part,
                S.Lit(f"[{_class(''.join(opts.escapes))}](.)"),
            )
        parts.append(part)
    if len(parts) == 1:
        return parts[0]
    return T("concat(" + ", ".join(f"{{{i}}}" for i in range(len(parts))) + ")", *parts)


def op_parse_kv(qc: QueryCompiler, op: K.ParseKv, relation: Relation) -> Relation:
    opts = _Options(op)
    compiler = ExprCompiler(relation.scope(qc.lets))
    source = to_string(compiler.compile(op.source))
    values: dict[str, Typed] = {}
    for column in op.columns:
        kql_type = normalize_kql_type(column.type or "string")
        values[column.name] = convert_text(compiler, _extract(opts, source, column.name), kql_type)
    existing = dict(relation.columns)
    out = list(relation.columns) + [(n, v.type) for n, v in values.items() if n not in existing]
    out = [(n, values[n].type if n in values else t) for n, t in out]
    select = [(values[n].sql if n in values else S.Col(n), n) for n, _ in out]
    return qc._select(relation, select, out)
