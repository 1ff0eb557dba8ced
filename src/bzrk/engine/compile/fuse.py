"""Merges a CTE that only projects and filters into the query that reads it.

The compiler writes one CTE per operator, and ClickHouse's analyzer charges every level of
the chain (~0.6 ms each, measured on `numbers(10)`): a three-operator query over a one-hour
window spent more time being analysed than reading. Merging a producer
``SELECT e AS c … FROM src WHERE p`` into its reader ``SELECT f(c) … FROM producer WHERE q``
gives ``SELECT f(e) … FROM src WHERE p AND q`` — the rows and values of the original, one
level fewer.

The rewrite is conservative; a producer or reader outside these rules is left as it is:

* the producer only projects and filters one source: no join, ``ARRAY JOIN``, grouping
  (``GROUP BY ()`` included), ordering, limit, ``DISTINCT`` or nested CTEs, and no aggregate,
  window, row-numbering or random function whose value depends on the rows around it;
* its expressions read only source columns: a name it also defines as an alias, which its
  source is not known to have, could mean the alias, so such a producer stays;
* the reader reads the producer alone (no join, no ``ARRAY JOIN``) and names only the
  producer's columns, so no name can change meaning when the source becomes the ``FROM``;
* every node on the way is one this module knows how to rebuild.

Sub-queries inside expressions read their own sources and are not entered.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from bzrk.engine import sql as S

# Functions whose value depends on which rows the query sees (or on nothing at all): a
# producer using them must see exactly its own rows, so it is not merged.
_ROW_DEPENDENT = re.compile(
    r"\bOVER\b|rowNumberIn|blockNumber|blockSize|neighbor|running|\brand|generateUUID"
    r"|randomString|randomPrintable|randomFixed|fuzzBits|arrayJoin|materialize\(|\bfinalize"
    r"|\b(count|sum|avg|min|max|any|anyLast|anyHeavy|argMin|argMax|uniq\w*|quantile\w*"
    r"|median\w*|groupArray\w*|groupUniqArray|groupBit\w*|topK\w*|stddev\w*|var(Samp|Pop)\w*"
    r"|covar\w*|corr\w*|sumMap|minMap|maxMap|histogram|entropy|simpleLinearRegression"
    r"|sequence\w*|windowFunnel|retention|deltaSum\w*|first_value|last_value|nth_value"
    r"|lagInFrame|leadInFrame|row_number|rank|dense_rank|percent_rank|cume_dist|ntile"
    r"|exponential\w*|kolmogorov\w*|mannWhitney\w*|studentTTest|welchTTest|boundingRatio"
    r"|sparkbar|largestTriangle\w*|approx_top_k|theilsU|cramers\w*|contingency|categorical\w*"
    r"|maxIntersections\w*|intervalLengthSum|groupConcat|sumCount|sumKahan|sumWithOverflow"
    r"|avgWeighted|meanZTest|analysisOfVariance|skew\w*|kurt\w*|rankCorr|singleValueOrNull)"
    r"(If|Array|Map|State|Merge|MergeState|ForEach|Distinct|OrNull|OrDefault|Resample)*\(",
    re.IGNORECASE,
)


def fuse_chain(
    ctes: list[tuple[str, S.Query]],
    final: S.Select,
    stored: Mapping[tuple[str, str], frozenset[str]] | None = None,
) -> tuple[list[tuple[str, S.Query]], S.Select]:
    """``ctes`` and ``final`` with every mergeable producer merged into its reader.

    ``stored`` names the columns of the stored tables the query reads ((database, table) ->
    names). Producers stay in the list (another reader may use them); unread ones are dropped
    later by column pruning.
    """
    fusion = _Fusion(stored or {})
    out: list[tuple[str, S.Query]] = []
    for name, query in ctes:
        if isinstance(query, S.Select):
            query = fusion.into(query)
        fusion.producers[name] = query
        out.append((name, query))
    final = fusion.into(final)
    return out, _unwrapped(final, fusion.producers)


def _unwrapped(final: S.Select, producers: Mapping[str, S.Query]) -> S.Select:
    """The CTE ``final`` reads, when ``final`` only lists that CTE's columns in order."""
    source = final.from_
    if not isinstance(source, S.TableRef) or source.database is not None or source.alias:
        return final
    producer = producers.get(source.table)
    if not isinstance(producer, S.Select) or producer.ctes:
        return final
    if dataclasses.replace(final, columns=[], from_=None) != S.Select():
        return final  # final does more than list columns
    listed = [
        (e.name, a) if isinstance(e, S.Col) and e.table is None else None for e, a in final.columns
    ]
    if listed != [(a, a) for _, a in producer.columns]:
        return final
    return producer


class _Fusion:
    def __init__(self, stored: Mapping[tuple[str, str], frozenset[str]]) -> None:
        self.stored = stored
        self.producers: dict[str, S.Query] = {}

    def into(self, reader: S.Select) -> S.Select:
        while True:
            source = reader.from_
            if not isinstance(source, S.TableRef) or source.database is not None or source.alias:
                return reader
            producer = self.producers.get(source.table)
            if not isinstance(producer, S.Select) or not _is_projection(producer):
                return reader
            fused = _merge(producer, reader, self.source_columns(producer.from_))
            if fused is None:
                return reader
            reader = fused

    def source_columns(self, source: S.Source | None) -> frozenset[str]:
        """The column names ``source`` is known to have (empty when not known)."""
        if not isinstance(source, S.TableRef) or source.alias:
            return frozenset()
        if source.database is not None:
            return self.stored.get((source.database, source.table), frozenset())
        query = self.producers.get(source.table)
        named = _named_columns(query) if isinstance(query, S.Select) else None
        return named or frozenset()


def _named_columns(query: S.Select) -> frozenset[str] | None:
    """The query's column names, or None when a column has no name (``*``, no alias)."""
    if any(alias is None or isinstance(expr, S.Star) for expr, alias in query.columns):
        return None
    return frozenset(alias for _, alias in query.columns if alias is not None)


def _is_projection(query: S.Select) -> bool:
    if (
        query.from_ is None
        or query.joins
        or query.array_join
        or query.group_by is not None
        or query.having is not None
        or query.qualify is not None
        or query.order_by
        or query.limit is not None
        or query.limit_by is not None
        or query.distinct
        or query.ctes
        or not query.columns
        or _named_columns(query) is None
    ):
        return False
    text = ", ".join(S.render_expr(expr) for expr, _ in query.columns)
    if query.where is not None:
        text += " " + S.render_expr(query.where)
    return _ROW_DEPENDENT.search(text) is None


def _merge(producer: S.Select, reader: S.Select, source_columns: frozenset[str]) -> S.Select | None:
    if reader.joins or reader.array_join or reader.ctes:
        return None
    aliases: dict[str, S.Expr] = {alias: expr for expr, alias in producer.columns if alias}
    # Inside the producer a name is its source's column when the source has one
    # (prefer_column_name_to_alias); otherwise it may be the producer's own computed alias,
    # whose meaning a merge would lose.
    redefined = {
        a
        for a, e in aliases.items()
        if not (isinstance(e, S.Col) and e.name == a) and a not in source_columns
    }
    for expr in [*aliases.values(), *([producer.where] if producer.where is not None else [])]:
        names = _rendered_columns(expr)
        if names is None or names.keys() & redefined:
            return None
    if _names_in_text(reader, aliases):
        return None
    try:
        clauses = _map_clauses(reader, _Substitution(aliases))
    except _CannotMerge:
        return None
    if producer.where is not None:
        where = clauses["where"]
        clauses["where"] = (
            producer.where if where is None else S.BinOp("AND", producer.where, where)
        )
    return dataclasses.replace(reader, from_=producer.from_, **clauses)


def _map_clauses(query: S.Select, fn: Callable[[S.Expr], S.Expr]) -> dict[str, Any]:
    """Every expression clause of ``query`` with ``fn`` applied to each expression."""

    def optional(expr: S.Expr | None) -> S.Expr | None:
        return None if expr is None else fn(expr)

    return {
        "columns": [(fn(e), a) for e, a in query.columns],
        "where": optional(query.where),
        "group_by": None if query.group_by is None else [fn(e) for e in query.group_by],
        "having": optional(query.having),
        "qualify": optional(query.qualify),
        "order_by": None
        if query.order_by is None
        else [(fn(e), d, n) for e, d, n in query.order_by],
        "limit_by": (
            None
            if query.limit_by is None
            else (query.limit_by[0], [fn(e) for e in query.limit_by[1]])
        ),
    }


class _CannotMerge(Exception):
    pass


class _Substitution:
    """Rebuilds an expression with every column reference replaced by the producer's value."""

    def __init__(self, aliases: Mapping[str, S.Expr]) -> None:
        self.aliases = aliases

    def __call__(self, node: S.Expr, bound: frozenset[str] = frozenset()) -> S.Expr:
        if isinstance(node, S.Col):
            if node.name in bound:
                return node
            if node.table is not None or node.name not in self.aliases:
                raise _CannotMerge  # a name the reader defines itself, or a qualified one
            return self.aliases[node.name]
        if isinstance(node, S.Lambda):
            return dataclasses.replace(node, body=self(node.body, bound | frozenset(node.params)))
        if isinstance(node, S.Lit | S.ScanBounds):
            return node
        if isinstance(node, S.ScalarSubquery):
            return node  # its own scope
        if isinstance(node, S.InList) and isinstance(node.values, S.Select | S.UnionAll):
            return dataclasses.replace(node, operand=self(node.operand, bound))
        if isinstance(node, S.Star) or not dataclasses.is_dataclass(node):
            raise _CannotMerge
        changes = {}
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            rebuilt = self._value(value, bound)
            if rebuilt is not value:
                changes[field.name] = rebuilt
        return dataclasses.replace(node, **changes) if changes else node

    def _value(self, value: object, bound: frozenset[str]) -> object:
        if isinstance(value, S.Expr):
            return self(value, bound)
        if isinstance(value, list | tuple):
            items = [self._value(v, bound) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return type(value)(items) if isinstance(value, tuple) else items
        if isinstance(value, S.Select | S.UnionAll):
            raise _CannotMerge  # a query inside an unfamiliar node
        return value


def _expressions(query: S.Select) -> list[S.Expr]:
    found: list[S.Expr] = []

    def collect(expr: S.Expr) -> S.Expr:
        found.append(expr)
        return expr

    _map_clauses(query, collect)
    return found


def _names_in_text(reader: S.Select, aliases: Mapping[str, S.Expr]) -> bool:
    """Whether the reader names a producer column outside a column node.

    Templates may spell a column in their text (```__rn```); the substitution cannot see
    those, so every quoted mention must be a column node it will replace.
    """
    counts: Counter[str] = Counter()
    exprs = _expressions(reader)
    for expr in exprs:
        found = _rendered_columns(expr)
        if found is None:
            return True
        counts += found
    text = "\n".join(S.render_expr(e) for e in exprs)
    return any(text.count(S.quote_identifier(alias)) > counts[alias] for alias in aliases)


def _rendered_columns(node: S.Expr) -> Counter[str] | None:
    """How often each column name appears in ``node``'s rendered text (None: unknown node)."""
    if isinstance(node, S.Col):
        return Counter({node.name: 1})
    if isinstance(node, S.Template):
        total: Counter[str] = Counter()
        for index, arg in enumerate(node.args):
            found = _rendered_columns(arg)
            if found is None:
                return None
            for _ in range(node.text.count(f"{{{index}}}")):
                total += found
        return total
    if isinstance(node, S.Lit | S.ScanBounds):
        return Counter()
    if isinstance(node, S.ScalarSubquery) or not dataclasses.is_dataclass(node):
        return None
    total = Counter()
    for field in dataclasses.fields(node):
        for child in _children(getattr(node, field.name)):
            found = _rendered_columns(child)
            if found is None:
                return None
            total += found
    return total


def _children(value: object) -> list[S.Expr]:
    if isinstance(value, S.Expr):
        return [value]
    if isinstance(value, list | tuple):
        return [c for v in value for c in _children(v)]
    return []
