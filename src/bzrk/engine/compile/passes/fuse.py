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
* every node on the way is one this module knows how to rebuild;
* the merge does not make the SQL much larger: a producer's expression is copied into each of
  its uses, so a merge that would add more than :data:`MAX_GROWTH_NODES` rendered nodes, or
  grow an expression past :data:`MAX_EXPRESSION_NODES`, is not done. That keeps the pass, and
  ClickHouse's analysis of its output, linear in the length of the pipeline (a chain of 250
  ``extend x = x + 1`` merged into one expression 250 levels deep and took ~10 s here).

Sub-queries inside expressions read their own sources and are not entered. Every test here
walks the SQL tree; nothing is rendered to text.
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

# Rendered nodes one merge may add to its reader, and the largest expression a merge may grow:
# ClickHouse refuses expressions deeper than its max_expression_depth (1000) and queries past
# max_ast_elements (50,000), and analyses a long chain of nested calls slowly.
MAX_GROWTH_NODES = 256
MAX_EXPRESSION_NODES = 512


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
        # Facts about nodes, by id (every node stays alive in the producers while the pass runs).
        self.facts = _Facts()
        self._projection: dict[int, bool] = {}

    def into(self, reader: S.Select) -> S.Select:
        while True:
            source = reader.from_
            if not isinstance(source, S.TableRef) or source.database is not None or source.alias:
                return reader
            producer = self.producers.get(source.table)
            if not isinstance(producer, S.Select) or not self.is_projection(producer):
                return reader
            fused = _merge(producer, reader, self.source_columns(producer.from_), self.facts)
            if fused is None:
                return reader
            reader = fused

    def is_projection(self, query: S.Select) -> bool:
        known = self._projection.get(id(query))
        if known is None:
            known = _is_projection(query, self.facts)
            self._projection[id(query)] = known
        return known

    def source_columns(self, source: S.Source | None) -> frozenset[str]:
        """The column names ``source`` is known to have (empty when not known)."""
        if not isinstance(source, S.TableRef) or source.alias:
            return frozenset()
        if source.database is not None:
            return self.stored.get((source.database, source.table), frozenset())
        query = self.producers.get(source.table)
        named = _named_columns(query) if isinstance(query, S.Select) else None
        return named or frozenset()


class _Facts:
    """Memoised facts about SQL nodes: row dependence, column uses, spelled names, size."""

    def __init__(self) -> None:
        self._row_dependent: dict[int, bool] = {}
        self._columns: dict[int, Counter[str] | None] = {}
        self._spelled: dict[int, frozenset[str]] = {}
        self.sizes: dict[int, int] = {}
        # Facts are keyed by id(): every node asked about is kept alive while the pass runs,
        # so an id is never reused by another node (a merge that is given up drops its nodes).
        self._alive: list[object] = []

    def row_dependent(self, node: S.Expr | S.Query) -> bool:
        """Whether ``node`` calls a function whose value depends on the rows around it."""
        key = id(node)
        known = self._row_dependent.get(key)
        if known is None:
            if isinstance(node, S.Template):
                known = _ROW_DEPENDENT.search(node.text) is not None
            elif isinstance(node, S.Func):
                known = _ROW_DEPENDENT.search(node.name + "(") is not None
            else:
                known = False
            known = known or any(self.row_dependent(child) for child in S.children(node))
            self._row_dependent[key] = known
            self._alive.append(node)
        return known

    def columns(self, node: S.Expr) -> Counter[str] | None:
        """How often each column name is rendered in ``node`` (None: an unknown node)."""
        key = id(node)
        if key in self._columns:
            return self._columns[key]
        found: Counter[str] | None
        if isinstance(node, S.Col):
            found = Counter({node.name: 1})
        elif isinstance(node, S.SubColumn):
            found = Counter({node.column: 1})
        elif isinstance(node, S.Lit | S.ScanBounds):
            found = Counter()
        elif isinstance(node, S.ScalarSubquery) or not dataclasses.is_dataclass(node):
            found = None
        else:
            found = Counter()
            uses = S.slot_counts(node) if isinstance(node, S.Template) else None
            kids = list(node.args) if isinstance(node, S.Template) else _expr_children(node)
            for index, child in enumerate(kids):
                counted = self.columns(child)
                if counted is None:
                    found = None
                    break
                for _ in range(1 if uses is None else uses[index]):
                    found.update(counted)
        self._columns[key] = found
        self._alive.append(node)
        return found

    def spelled(self, node: S.Expr | S.Query) -> frozenset[str]:
        """Names spelled as text inside ``node``: quoted identifiers in template texts, and
        every column of a query inside it (what a column substitution cannot see)."""
        key = id(node)
        known = self._spelled.get(key)
        if known is None:
            names: set[str] = set()
            if isinstance(node, S.Template):
                names.update(S.quoted_names(node.text))
            if isinstance(node, S.Select | S.UnionAll):
                names.update(_query_columns(node))
            for child in S.children(node):
                names.update(self.spelled(child))
            known = frozenset(names)
            self._spelled[key] = known
            self._alive.append(node)
        return known

    def size(self, node: S.Expr) -> int:
        if id(node) not in self.sizes:
            self._alive.append(node)
        return S.expanded_size(node, self.sizes)


def _query_columns(query: S.Query) -> set[str]:
    """Every column name a nested query renders (conservatively: all of its column nodes)."""
    names: set[str] = set()
    stack: list[S.Expr | S.Query] = [query]
    while stack:
        node = stack.pop()
        if isinstance(node, S.Col):
            names.add(node.name)
        elif isinstance(node, S.SubColumn):
            names.add(node.column)
        stack.extend(S.children(node))
    return names


def _expr_children(node: S.Expr) -> list[S.Expr]:
    """The expression children of a non-template node; queries inside it are not entered."""
    return [child for child in S.children(node) if isinstance(child, S.Expr)]


def _named_columns(query: S.Select) -> frozenset[str] | None:
    """The query's column names, or None when a column has no name (``*``, no alias)."""
    if any(alias is None or isinstance(expr, S.Star) for expr, alias in query.columns):
        return None
    return frozenset(alias for _, alias in query.columns if alias is not None)


def _is_projection(query: S.Select, facts: _Facts) -> bool:
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
    exprs = [expr for expr, _ in query.columns]
    if query.where is not None:
        exprs.append(query.where)
    return not any(facts.row_dependent(expr) for expr in exprs)


def _merge(
    producer: S.Select, reader: S.Select, source_columns: frozenset[str], facts: _Facts
) -> S.Select | None:
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
        names = facts.columns(expr)
        if names is None or names.keys() & redefined:
            return None
    uses = _reader_uses(reader, aliases, facts)
    if uses is None or not _small_enough(reader, producer, aliases, uses, facts):
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


def _reader_uses(
    reader: S.Select, aliases: Mapping[str, S.Expr], facts: _Facts
) -> Counter[str] | None:
    """How often the reader renders each column, or None when it names a producer column
    outside a column node (a template spelling ```__rn``` in its text, a nested query), which
    the substitution could not replace."""
    counts: Counter[str] = Counter()
    for expr in _expressions(reader):
        if type(expr) is S.Col:  # the common case, a column passed through: no walk
            counts[expr.name] += 1
            continue
        found = facts.columns(expr)
        if found is None or facts.spelled(expr) & aliases.keys():
            return None
        counts.update(found)
    return counts


def _small_enough(
    reader: S.Select,
    producer: S.Select,
    aliases: Mapping[str, S.Expr],
    uses: Counter[str],
    facts: _Facts,
) -> bool:
    """Whether the merge adds few rendered nodes and keeps every expression small.

    Each use of a producer column becomes a copy of its expression: the merge grows the
    reader by the size of every copy beyond a plain column.
    """
    growth = sum(
        count * (facts.size(aliases[name]) - 1) for name, count in uses.items() if name in aliases
    )
    if growth > MAX_GROWTH_NODES:
        return False
    if growth:
        for expr in _expressions(reader):
            if type(expr) is S.Col:
                continue  # becomes the producer's expression, no larger than it already is
            counted = facts.columns(expr) or Counter()
            grown = sum(
                count * (facts.size(aliases[name]) - 1)
                for name, count in counted.items()
                if name in aliases
            )
            if grown and facts.size(expr) + grown > MAX_EXPRESSION_NODES:
                return False
    # The producer's WHERE is AND-ed to the reader's: a chain of filters must not grow one
    # condition without bound either.
    where = facts.size(producer.where) if producer.where is not None else 0
    return not (
        where
        and reader.where is not None
        and where + facts.size(reader.where) > MAX_EXPRESSION_NODES
    )


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
    """Rebuilds an expression with every column reference replaced by the producer's value.

    A sub-tree used in several places is rebuilt once (memoised per lambda scope), so shared
    nodes stay shared.
    """

    def __init__(self, aliases: Mapping[str, S.Expr]) -> None:
        self.aliases = aliases
        self._done: dict[tuple[int, frozenset[str]], S.Expr] = {}

    def __call__(self, node: S.Expr, bound: frozenset[str] = frozenset()) -> S.Expr:
        key = (id(node), bound)
        done = self._done.get(key)
        if done is None:
            done = self._rebuild(node, bound)
            self._done[key] = done
        return done

    def _rebuild(self, node: S.Expr, bound: frozenset[str]) -> S.Expr:
        if isinstance(node, S.Col):
            if node.name in bound:
                return node
            if node.table is not None or node.name not in self.aliases:
                raise _CannotMerge  # a name the reader defines itself, or a qualified one
            return self.aliases[node.name]
        if isinstance(node, S.SubColumn):
            # A path of a column passed through under its own or another plain name.
            target = self.aliases.get(node.column)
            if node.column in bound or not isinstance(target, S.Col) or target.table is not None:
                raise _CannotMerge
            return (
                node
                if target.name == node.column
                else dataclasses.replace(node, column=target.name)
            )
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
