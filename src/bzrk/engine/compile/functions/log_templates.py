"""Berserk's log templates: log_template_hash, extract_log_template, log_template_regex.

The vendor's skill file defines the template by its placeholders: UUIDs → ``<UUID>``, IPs →
``<IP>``, hex → ``<HEX>``, numbers → ``<N>``, quoted strings → ``<STR>``, datetimes →
``<DATETIME>``, ``key=value`` → ``key=<key>``. Each is one RE2 ``replaceRegexpAll`` in a fixed
order (quoted strings and datetimes first, so that their digits are not numbers; ``key=value``
before hex and numbers, so the value goes whole), all one native ClickHouse expression: a day of
logs groups at column speed. Hex needs a digit and a letter (``7f3a``, not ``added``) or ``0x``;
a number is a run of digits not glued to a letter or digit before it (``12ms`` → ``<N>ms``,
``db-01`` → ``db-<N>``, ``v2`` stays). A null body reads as the empty string (KQL's string rule).

``log_template_hash(s)`` is a 64-bit hash of the template (a ``long``), for ``summarize … by``;
``log_template_regex(s)`` an anchored RE2 regex matching every line of ``s``'s template (for a
follow-up ``where body matches regex …``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, lit, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_HEX_CHARS = "[0-9a-fA-F]"
# (RE2 pattern, replacement), applied in order.
REPLACEMENTS: tuple[tuple[str, str], ...] = (
    (r"\"[^\"]*\"|'[^']*'", "<STR>"),
    (
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
        "<DATETIME>",
    ),
    (
        rf"\b{_HEX_CHARS}{{8}}-{_HEX_CHARS}{{4}}-{_HEX_CHARS}{{4}}-{_HEX_CHARS}{{4}}-{_HEX_CHARS}{{12}}\b",
        "<UUID>",
    ),
    (r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b", "<IP>"),
    (r"\b([A-Za-z_][A-Za-z0-9_.\-]*)=[^\s,;&)\]}]+", r"\1=<\1>"),
    (
        rf"\b(?:0[xX]{_HEX_CHARS}+|{_HEX_CHARS}*\d{_HEX_CHARS}*[a-fA-F]{_HEX_CHARS}*"
        rf"|{_HEX_CHARS}*[a-fA-F]{_HEX_CHARS}*\d{_HEX_CHARS}*)\b",
        "<HEX>",
    ),
    (r"(^|[^A-Za-z0-9_<])-?\d+(?:\.\d+)?", r"\1<N>"),
)

# How each placeholder reads back in log_template_regex (after the template is escaped).
_PLACEHOLDER_PATTERNS: tuple[tuple[str, str], ...] = (
    ("<STR>", r"(?:\"[^\"]*\"|'[^']*')"),
    ("<DATETIME>", r"\d{4}-\d{2}-\d{2}(?:[T ][0-9:.,]+(?:Z|[+-][0-9:]+)?)?"),
    ("<UUID>", r"[0-9a-fA-F-]{36}"),
    ("<IP>", r"\d{1,3}(?:\.\d{1,3}){3}"),
    ("<HEX>", r"(?:0[xX])?[0-9a-fA-F]+"),
    ("<N>", r"-?\d+(?:\.\d+)?"),
)


def template_sql(text: S.Expr) -> S.Expr:
    """The template of a (nullable) string, as one chain of RE2 replacements."""
    sql: S.Expr = T("ifNull({0}, '')", text)
    for pattern, replacement in REPLACEMENTS:
        sql = T("replaceRegexpAll({0}, {1}, {2})", sql, lit(pattern), lit(replacement))
    return sql


def _text(args: list[Typed]) -> S.Expr:
    return to_string(args[0])


def extract_log_template(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(template_sql(_text(args)), "string")


def log_template_hash(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(T("reinterpretAsInt64(cityHash64({0}))", template_sql(_text(args))), "long")


def log_template_regex(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # Escape the template's literal text, then turn placeholders back into patterns.
    sql: S.Expr = T(
        "replaceRegexpAll({0}, {1}, {2})",
        template_sql(_text(args)),
        lit(r"([\\.^$|?*+()\[\]{}])"),
        lit(r"\\\1"),
    )
    sql = T("replaceRegexpAll({0}, {1}, {2})", sql, lit(r"=<[^<>\s]+>"), lit(r"=[^\\s,;&)\\]}]+"))
    for placeholder, pattern in _PLACEHOLDER_PATTERNS:
        sql = T("replaceAll({0}, {1}, {2})", sql, lit(placeholder), lit(pattern))
    return Typed(T("concat('^', {0}, '$')", sql), "string")


LOG_TEMPLATE_FUNCTIONS = {
    "extract_log_template": extract_log_template,
    "log_template": extract_log_template,
    "log_template_hash": log_template_hash,
    "log_template_regex": log_template_regex,
}
