"""The `reduce` operator: group similar strings under a wildcard pattern.

Each value is split into terms at the separator characters (`characters`, by default every
ASCII character that is not a letter or digit). A term seen in fewer rows than
max(2, threshold × rows) becomes `*`; a run of wildcards and the separators around them
collapses into one `*`. Rows with the same pattern form a group (count, first value as the
representative); a pattern that is only `*` is reported as `others`. This is bzrk's model
of the documented behaviour (Kusto does not specify its clustering); `kind=source` appends
the pattern to every input row instead.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.row_order import numbered
from bzrk.engine.compile.typed import T, lit, to_string
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def _class_inner(characters: str | None) -> str:
    """The inside of the regex character class of separators."""
    if characters is None:
        return "\\x00-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f"
    return "".join("\\" + c if c in "-]\\^[" else re.escape(c) for c in characters)


def op_reduce(ctx: CompileContext, op: K.Reduce, relation: Relation) -> Relation:

    params = {p.name.lower(): p.value for p in op.params}
    threshold = 0.1
    node = params.get("threshold")
    if node is not None:
        if not isinstance(node, K.Literal) or not isinstance(node.value, int | float):
            raise unsupported(node, "reduce: threshold must be a number", code="InvalidArgument")
        threshold = float(node.value)
        if not 0 <= threshold <= 1:
            raise unsupported(
                node, "reduce: threshold must be between 0 and 1", code="InvalidArgument"
            )
    characters = None
    node = params.get("characters")
    if node is not None:
        if not isinstance(node, K.Literal) or not isinstance(node.value, str):
            raise unsupported(node, "reduce: characters must be a string", code="InvalidArgument")
        characters = node.value
    kind = params.get("kind")
    source_kind = isinstance(kind, K.NameRef) and kind.name.lower() == "source"
    if kind is not None and not source_kind:
        raise unsupported(kind, "reduce: the only kind is 'source'", code="InvalidArgument")

    relation = numbered(ctx, relation)
    value = ctx.expr(relation, op.by)
    text = to_string(value) if value.type != "string" else value.sql
    if characters == "":
        # No separators: every value is one term.
        sep = "[^\\s\\S]"
        tokens = T("if({0} = '', CAST([], 'Array(String)'), [{0}])", text)
    else:
        inner = _class_inner(characters)
        sep = f"[{inner}]"
        tokens = T("extractAll({0}, {1})", text, lit(f"({sep}|[^{inner}]+)"))
    with_tokens = ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns]
        + [(T("{0}", text), "__rd_value"), (tokens, "__rd_tokens")],
        [*relation.columns, ("__rd_value", "string"), ("__rd_tokens", "dynamic")],
    )
    term_check = S.quote_string("^" + sep + "$")
    # One row per token (hash joins from here on: no per-token search through all terms).
    exploded = ctx.new_cte(
        S.Select(
            columns=[
                (S.Col("__rn"), "__rn"),
                (S.Col("__rd_tok"), "__rd_tok"),
                (S.Col("__rd_pos"), "__rd_pos"),
                (T("NOT match(`__rd_tok`, " + term_check + ")"), "__rd_is_term"),
            ],
            from_=with_tokens.source(),
            array_join=[
                (S.Col("__rd_tokens"), "__rd_tok"),
                (T("arrayEnumerate(`__rd_tokens`)"), "__rd_pos"),
            ],
        ),
        [],
    )
    frequencies = ctx.new_cte(
        S.Select(
            columns=[(S.Col("__rd_tok"), "__rd_term"), (T("uniqExact(`__rn`)"), "__rd_n")],
            from_=exploded.source(),
            where=S.Col("__rd_is_term"),
            group_by=[S.Col("__rd_tok")],
        ),
        [],
    )
    rows = S.ScalarSubquery(S.Select(columns=[(T("count()"), None)], from_=with_tokens.source()))
    limit = T(f"greatest(2, {threshold!r} * {{0}})", rows)
    pieces = ctx.new_cte(
        S.Select(
            columns=[
                (S.Col("__rn", "X"), "__rn"),
                (S.Col("__rd_pos", "X"), "__rd_pos"),
                (
                    T(
                        "if(`X`.`__rd_is_term` AND ifNull(`F`.`__rd_n`, 0) < {0}, '*', `X`.`__rd_tok`)",
                        limit,
                    ),
                    "__rd_piece",
                ),
            ],
            from_=exploded.source("X"),
            joins=[
                S.Join("LEFT", frequencies.source("F"), on=T("`F`.`__rd_term` = `X`.`__rd_tok`"))
            ],
        ),
        [],
    )
    masked = ctx.new_cte(
        S.Select(
            columns=[
                (S.Col("__rn"), "__rn"),
                (
                    T(
                        "arrayStringConcat(arrayMap(__rd_x -> __rd_x.2, arraySort(groupArray(tuple(`__rd_pos`, `__rd_piece`)))))"
                    ),
                    "__rd_masked",
                ),
            ],
            from_=pieces.source(),
            group_by=[S.Col("__rn")],
        ),
        [],
    )
    wild_run = "(?:" + sep + "*\\*" + sep + "*)+"
    pattern = T("replaceRegexpAll(ifNull(`M`.`__rd_masked`, ''), {0}, '*')", lit(wild_run))
    patterned = ctx.new_cte(
        S.Select(
            columns=[(S.Col(n, "W"), n) for n, _ in relation.columns]
            + [(S.Col("__rd_value", "W"), "__rd_value"), (pattern, "__rd_pattern")],
            from_=with_tokens.source("W"),
            joins=[S.Join("LEFT", masked.source("M"), on=T("`M`.`__rn` = `W`.`__rn`"))],
        ),
        [*relation.columns, ("__rd_value", "string"), ("__rd_pattern", "string")],
    )
    final_pattern = T("if(`__rd_pattern` = '*', 'others', `__rd_pattern`)")
    if source_kind:
        keep = [(n, t) for n, t in relation.columns if n != "__rn"]
        return ctx.new_cte(
            S.Select(
                columns=[(S.Col(n), n) for n, _ in keep] + [(final_pattern, "Pattern")],
                from_=patterned.source(),
                order_by=[(S.Col("__rn"), False, False)],
            ),
            [*keep, ("Pattern", "string")],
            ordered=True,
        )
    return ctx.new_cte(
        S.Select(
            columns=[
                (final_pattern, "Pattern"),
                (T("toInt64(count())"), "Count"),
                (T("if(`__rd_pattern` = '*', '', argMin(`__rd_value`, `__rn`))"), "Representative"),
            ],
            from_=patterned.source(),
            group_by=[S.Col("__rd_pattern")],
            order_by=[(S.Col("Count"), True, False)],
        ),
        [("Pattern", "string"), ("Count", "long"), ("Representative", "string")],
    )
