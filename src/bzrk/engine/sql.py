"""A small ClickHouse SQL tree and its generator: every literal and identifier is quoted here.

The compiler never builds SQL text from user input. It builds these nodes; :func:`render`
turns them into text. Function names and templates come from bzrk's own tables (checked
against a strict pattern), identifiers are back-quoted with escaping, and literals go through
:func:`literal_sql`, the one place that escapes values.

>>> render(Select(columns=[(Func("plus", [Lit(1), Col("x")]), "y")], from_=TableRef("db", "t")))
'SELECT plus(1, `x`) AS `y`\\nFROM `db`.`t`'
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import math
import re
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TYPE_RE = re.compile(r"^[A-Za-z0-9_(), ']*$")
_BINARY_OPS = frozenset(
    {"+", "-", "*", "/", "=", "!=", "<", "<=", ">", ">=", "AND", "OR", "LIKE", "NOT LIKE", "||"}
)


class Expr:
    """Base of every SQL expression node."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Lit(Expr):
    """A literal value (None, bool, int, float, str, Decimal, datetime)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Col(Expr):
    """A column reference, optionally qualified by a table alias."""

    name: str
    table: str | None = None


@dataclass(frozen=True, slots=True)
class Func(Expr):
    """A function call; ``params`` are the parametric part (``quantile(0.5)(x)``)."""

    name: str
    args: Sequence[Expr] = field(default_factory=list)
    params: Sequence[Expr] | None = None
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Not(Expr):
    operand: Expr


@dataclass(frozen=True, slots=True)
class Neg(Expr):
    operand: Expr


@dataclass(frozen=True, slots=True)
class IsNull(Expr):
    operand: Expr
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """``CAST(x AS type)``; the type text comes from :mod:`bzrk.engine.types`, never from users."""

    operand: Expr
    type: str


@dataclass(frozen=True, slots=True)
class Case(Expr):
    whens: list[tuple[Expr, Expr]]
    else_: Expr | None = None


@dataclass(frozen=True, slots=True)
class Lambda(Expr):
    params: list[str]
    body: Expr


@dataclass(frozen=True, slots=True)
class Template(Expr):
    """SQL text written in bzrk's own code with ``{0}``, ``{1}`` … slots for child nodes."""

    text: str
    args: Sequence[Expr] = field(default_factory=list)


def escape_braces(text: str) -> str:
    """``text`` (SQL bzrk wrote, or a quoted name) as part of a :class:`Template`'s text, where
    ``{`` and ``}`` mark slots."""
    return text.replace("{", "{{").replace("}", "}}")


def verbatim(text: str) -> Template:
    """A template of SQL text bzrk wrote, without slots."""
    return Template(escape_braces(text))


@dataclass(frozen=True, slots=True)
class Computed(Expr):
    """A column its table computes on read (``value``, over stored columns), and ``parts``:
    stored columns whose distinct non-null values are the column's, disjoint (an id stored as
    its bytes or, when not canonical hex, as text), and which are all null exactly when it is.
    So a distinct count of the column is the sum of theirs (:class:`DistinctCount`) and a null
    test reads their null maps (:class:`IsNull`), without computing ``value`` per row."""

    value: Template
    parts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DistinctCount(Expr):
    """KQL ``dcount``/``dcountif``: ``uniqCombined(precision)`` of ``arg`` (of the rows where
    ``cond``), 0 over no values; over a :class:`Computed` with parts, the sum of the parts'."""

    arg: Expr
    precision: int
    cond: Expr | None = None


@dataclass(frozen=True, slots=True)
class SubColumn(Expr):
    """A JSON column's path read natively: ```c`.`a`.`b``` (a typed path or a dynamic value), or
    ```c`.^`a`.`b``` (the sub-object under the path) with ``sub``. Every name is quoted here;
    a key may hold any character (``{0}``, ``a{{b``)."""

    column: str
    path: tuple[str, ...]
    sub: bool = False


@dataclass(frozen=True, slots=True)
class ScanBounds(Expr):
    """Where a stored table's read takes the run's time window: :attr:`Bindings.scan_bounds`.

    The query service bounds every read to the request's time window this way, as a ``WHERE``
    on the read itself: ClickHouse then prunes partitions and sorting-key ranges with it and
    pushes the query's own leading filters next to it (``additional_table_filters`` read up to
    ten times more rows for the same answer). The plan keeps this node; each run renders it.
    """


@dataclass(frozen=True, slots=True)
class RowCap(Expr):
    """The result's row cap as a final ``LIMIT``: :attr:`Bindings.row_cap`, or no ``LIMIT``.

    The query service caps every result; capping inside the final SELECT instead of wrapping
    the query (``SELECT * FROM (…) LIMIT n``) spares ClickHouse's analyzer a level, ~0.5 ms of
    a 7 ms query. Only a SELECT's ``limit`` may hold it.
    """


@dataclass(frozen=True, slots=True)
class Fact(Expr):
    """A yes/no fact about the stored data that a run may know before it sends its SQL
    (``compile/bag_paths.py``: "the registry holds a path under ``http.route``").

    A run that read it (:attr:`Bindings.facts` holds ``key``) renders ``1`` or ``0``; otherwise
    the SQL asks for it itself: ``ask``, a scalar sub-query ClickHouse folds while planning.
    """

    key: tuple[str, ...]
    ask: Expr


@dataclass(frozen=True, slots=True)
class Given(Expr):
    """``then`` where every fact has its listed value, else ``otherwise``.

    A run that knows every fact renders only the chosen branch, so ClickHouse neither analyses
    nor evaluates the other (both branches cost ~15 % of a 25 ms query even when the condition
    folds); otherwise it is ``if(<facts>, then, otherwise)``.
    """

    facts: tuple[tuple[Fact, bool], ...]
    then: Expr
    otherwise: Expr


# A stored bag's paths as a run read them from its path registry: (dotted path, the types it
# has held), in path order.
BagPathList = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class BagSearch(Expr):
    """A text predicate over a stored bag as one test per stored path (``compile/bag_search.py``).

    A run that read the bag's paths from its registry (:attr:`Bindings.facts` holds ``key``:
    a :data:`BagPathList`) renders ``per_path`` of each path, ORed, a NULL test counting as
    false (``0`` for none; None from ``per_path``: the path cannot hold a match). Otherwise it
    renders ``0``, and every reader of it is a :class:`Known` that then reads the bag's text.
    """

    key: tuple[str, ...]
    per_path: Callable[[str, tuple[str, ...]], Expr | None] = field(compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class Known(Expr):
    """``then`` when the run read the registry value under ``key``, else ``otherwise``."""

    key: tuple[str, ...]
    then: Expr
    otherwise: Expr


@dataclass(frozen=True, slots=True)
class Bindings:
    """What one run gives a plan as it is rendered: the values of its run-time nodes.

    ``scan_bounds`` is the predicate every :class:`ScanBounds` renders (None: every row, ``1``);
    ``row_cap`` the ``LIMIT`` every :class:`RowCap` renders (None: no ``LIMIT``); ``facts`` the
    value of each :class:`Fact` the run read (a missing key: the SQL asks).
    """

    scan_bounds: Expr | None = None
    row_cap: int | None = None
    facts: Mapping[tuple[str, ...], bool | BagPathList] | None = field(default=None, hash=False)


UNBOUND = Bindings()


@dataclass(frozen=True, slots=True)
class Star(Expr):
    table: str | None = None
    except_: list[str] | None = None


@dataclass(frozen=True, slots=True)
class ScalarSubquery(Expr):
    query: Query


@dataclass(frozen=True, slots=True)
class InList(Expr):
    operand: Expr
    values: Sequence[Expr] | Query
    negated: bool = False


class Source:
    """Something a SELECT reads from."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TableRef(Source):
    database: str | None
    table: str
    alias: str | None = None


@dataclass(frozen=True, slots=True)
class TableFunction(Source):
    """A table function such as ``numbers(n)`` or ``values(structure, rows…)``."""

    name: str
    args: Sequence[Expr]
    alias: str | None = None


@dataclass(frozen=True, slots=True)
class Subquery(Source):
    query: Query
    alias: str | None = None


@dataclass(frozen=True, slots=True)
class Join:
    kind: str  # "INNER", "LEFT", "RIGHT", "FULL", "LEFT ANTI", "LEFT SEMI", …, "CROSS"
    source: Source
    on: Expr | None = None
    using: list[str] | None = None


@dataclass(slots=True)
class Select:
    columns: Sequence[tuple[Expr, str | None]] = field(default_factory=list)
    from_: Source | None = None
    joins: list[Join] = field(default_factory=list)
    array_join: list[tuple[Expr, str]] | None = None
    left_array_join: bool = False
    where: Expr | None = None
    group_by: list[Expr] | None = None
    having: Expr | None = None
    qualify: Expr | None = None
    order_by: list[tuple[Expr, bool, bool]] | None = None  # (expr, descending, nulls_first)
    limit: Expr | None = None
    limit_by: tuple[Expr, list[Expr]] | None = None
    distinct: bool = False
    ctes: list[tuple[str, Query]] = field(default_factory=list)
    # CTEs computed once (`name AS MATERIALIZED (…)`), not at each reference
    materialized: frozenset[str] = frozenset()


@dataclass(slots=True)
class UnionAll:
    queries: Sequence[Query]
    ctes: list[tuple[str, Query]] = field(default_factory=list)
    materialized: frozenset[str] = frozenset()


Query = Select | UnionAll

# -- walking the tree ------------------------------------------------------------------------

# Field names of each node class that may hold child expressions or queries.
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = (
            tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
        )
        _CHILD_FIELDS[cls] = names
    return names


def _nested(value: object) -> Iterator[Expr | Query]:
    if isinstance(value, Expr | Select | UnionAll):
        yield value
    elif isinstance(value, Source | Join):
        yield from children(value)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _nested(item)


def children(node: Expr | Query | Source | Join) -> Iterator[Expr | Query]:
    """The expressions and queries directly under ``node`` (a template's: its slots)."""
    if isinstance(node, Template):
        yield from node.args
        return
    if isinstance(node, Lit | Col | SubColumn | ScanBounds | RowCap):
        return  # a run-time node's value is no part of the plan
    for name in _child_fields(type(node)):
        if name != "ctes":
            yield from _nested(getattr(node, name))
    if isinstance(node, Select | UnionAll):
        for _, query in node.ctes:
            yield query


def expanded_size(node: Expr | Query, memo: dict[int, int] | None = None) -> int:
    """How many nodes the rendered text of ``node`` spells out (a shared sub-tree counts at
    every use, as rendering repeats it); linear in the tree's distinct nodes.

    >>> x = BinOp("+", Col("a"), Lit(1))
    >>> expanded_size(BinOp("*", x, x))
    7
    """
    memo = {} if memo is None else memo
    stack: list[tuple[Expr | Query, bool]] = [(node, False)]
    while stack:
        item, ready = stack.pop()
        key = id(item)
        if key in memo:
            continue
        kids = list(children(item))
        if ready:
            uses = slot_counts(item) if isinstance(item, Template) else None
            total = 1
            for index, kid in enumerate(kids):
                total += memo[id(kid)] * (1 if uses is None else uses[index])
            memo[key] = total
            continue
        stack.append((item, True))
        stack.extend((kid, False) for kid in kids if id(kid) not in memo)
    return memo[id(node)]


def slot_counts(node: Template) -> list[int]:
    """How often the text of ``node`` renders each of its slots."""
    counts = [0] * len(node.args)
    for index in slot_uses(node.text):
        if index < len(counts):
            counts[index] += 1
    return counts


_QUOTED_NAME = re.compile(r"`((?:[^`\\]|\\.)*)`")


def quoted_names(text: str) -> list[str]:
    """The names back-quoted in SQL ``text`` (a template's), unescaped."""
    return [re.sub(r"\\(.)", r"\1", name) for name in _QUOTED_NAME.findall(text)]


@functools.lru_cache(maxsize=4096)
def slot_uses(text: str) -> tuple[int, ...]:
    """The slot numbers a template text renders, in order (``{{`` is a literal brace)."""
    return tuple(
        int(name) for _, name, _, _ in string.Formatter().parse(text) if name and name.isdigit()
    )


def quote_identifier(name: str) -> str:
    """Back-quote a ClickHouse identifier.

    >>> quote_identifier("a`b")
    '`a\\\\`b`'
    """
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`").replace("\0", "\\0") + "`"


def quote_string(text: str) -> str:
    """Single-quote a ClickHouse string literal, escaping backslashes, quotes and controls.

    >>> quote_string("it's")
    "'it\\\\'s'"
    """
    out = ["'"]
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            out.append("\\0")
        else:
            out.append(ch)
    out.append("'")
    return "".join(out)


def literal_sql(value: Any) -> str:
    """The one function that turns a Python value into SQL literal text."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, Decimal):
        return quote_string(str(value))
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, _dt.datetime):
        return quote_string(value.isoformat())
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def _check_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise ValueError(f"not a plain SQL function name: {name!r}")
    return name


def _check_type(type_text: str) -> str:
    if not _TYPE_RE.match(type_text):
        raise ValueError(f"not a ClickHouse type: {type_text!r}")
    return type_text


def render_expr(node: Expr, bindings: Bindings = UNBOUND) -> str:
    """Render one expression node (run-time nodes take their values from ``bindings``)."""
    return _Renderer(bindings).expr(node)


def render(query: Query, bindings: Bindings = UNBOUND) -> str:
    """Render a whole query (SELECT or UNION ALL) as readable SQL text, once, with the run's
    ``bindings`` (by default every stored read unbounded and no row cap).

    >>> q = Select(columns=[(Col("a"), None)], from_=TableRef("db", "t"), where=ScanBounds(),
    ...            limit=RowCap())
    >>> render(q)
    'SELECT `a`\\nFROM `db`.`t`\\nWHERE 1'
    >>> render(q, Bindings(BinOp(">", Col("a"), Lit(0)), 10))
    'SELECT `a`\\nFROM `db`.`t`\\nWHERE (`a` > 0)\\nLIMIT 10'
    """
    return _Renderer(bindings).query(query)


def render_explain(query: Query, bindings: Bindings = UNBOUND) -> str:
    """``EXPLAIN json = 1, indexes = 1`` of ``query`` rendered with ``bindings``: ClickHouse's
    plan of it, with the parts and granules each index keeps (``engine/scanplan.py``)."""
    return "EXPLAIN json = 1, indexes = 1 " + render(query, bindings)


class _Renderer:
    """Renders one tree with one run's :class:`Bindings`."""

    __slots__ = ("bindings",)

    def __init__(self, bindings: Bindings) -> None:
        self.bindings = bindings

    def expr(self, node: Expr) -> str:
        if isinstance(node, Lit):
            return literal_sql(node.value)
        if isinstance(node, Col):
            if node.table:
                return f"{quote_identifier(node.table)}.{quote_identifier(node.name)}"
            return quote_identifier(node.name)
        if isinstance(node, Func):
            name = _check_name(node.name)
            args = ", ".join(self.expr(a) for a in node.args)
            if node.distinct:
                args = "DISTINCT " + args
            if node.params is not None:
                params = ", ".join(self.expr(p) for p in node.params)
                return f"{name}({params})({args})"
            return f"{name}({args})"
        if isinstance(node, BinOp):
            if node.op not in _BINARY_OPS:
                raise ValueError(f"unknown operator {node.op!r}")
            return f"({self.expr(node.left)} {node.op} {self.expr(node.right)})"
        if isinstance(node, Not):
            return f"(NOT {self.expr(node.operand)})"
        if isinstance(node, Neg):
            return f"(-{self.expr(node.operand)})"
        if isinstance(node, IsNull):
            operand = node.operand
            if isinstance(operand, Computed) and operand.parts:
                # Null exactly when every part is: read their null maps, not the value.
                tests = " AND ".join(f"({quote_identifier(p)} IS NULL)" for p in operand.parts)
                return f"({'NOT ' if node.negated else ''}({tests}))"
            return f"({self.expr(node.operand)} IS {'NOT ' if node.negated else ''}NULL)"
        if isinstance(node, Cast):
            return f"CAST({self.expr(node.operand)} AS {_check_type(node.type)})"
        if isinstance(node, Case):
            parts = ["CASE"]
            for cond, value in node.whens:
                parts.append(f"WHEN {self.expr(cond)} THEN {self.expr(value)}")
            if node.else_ is not None:
                parts.append(f"ELSE {self.expr(node.else_)}")
            parts.append("END")
            return "(" + " ".join(parts) + ")"
        if isinstance(node, Lambda):
            params = ", ".join(_check_name(p) for p in node.params)
            head = params if len(node.params) == 1 else f"({params})"
            return f"{head} -> {self.expr(node.body)}"
        if isinstance(node, Template):
            return node.text.format(*(self.expr(a) for a in node.args))
        if isinstance(node, Computed):
            return self.expr(node.value)
        if isinstance(node, DistinctCount):
            return self.distinct_count(node)
        if isinstance(node, SubColumn):
            keys = ".".join(quote_identifier(k) for k in node.path)
            return f"{quote_identifier(node.column)}.{'^' if node.sub else ''}{keys}"
        if isinstance(node, ScanBounds):
            bounds = self.bindings.scan_bounds
            return "1" if bounds is None else self.expr(bounds)
        if isinstance(node, Fact):
            known = self.fact(node)
            return self.expr(node.ask) if known is None else ("1" if known else "0")
        if isinstance(node, Given):
            return self.given(node)
        if isinstance(node, BagSearch):
            return self.bag_search(node)
        if isinstance(node, Known):
            return self.expr(node.then if self.path_list(node.key) is not None else node.otherwise)
        if isinstance(node, Star):
            text = f"{quote_identifier(node.table)}.*" if node.table else "*"
            if node.except_:
                text += " EXCEPT (" + ", ".join(quote_identifier(c) for c in node.except_) + ")"
            return text
        if isinstance(node, ScalarSubquery):
            return f"({self.query(node.query)})"
        if isinstance(node, InList):
            keyword = "NOT IN" if node.negated else "IN"
            if isinstance(node.values, Select | UnionAll):
                inner = self.query(node.values)
            else:
                inner = ", ".join(self.expr(v) for v in node.values)
            return f"({self.expr(node.operand)} {keyword} ({inner}))"
        raise TypeError(f"cannot render {type(node).__name__}")

    def distinct_count(self, node: DistinctCount) -> str:
        arg = node.arg
        values = (
            [quote_identifier(part) for part in arg.parts]
            if isinstance(arg, Computed) and arg.parts
            else [self.expr(arg)]
        )
        # ifNull: over no non-null input the Nullable variant answers NULL; Kusto counts 0.
        if node.cond is None:
            counts = [f"ifNull(uniqCombined({node.precision})({v}), 0)" for v in values]
        else:
            cond = self.expr(node.cond)
            counts = [f"ifNull(uniqCombinedIf({node.precision})({v}, {cond}), 0)" for v in values]
        return f"toInt64({' + '.join(counts)})"

    def fact(self, node: Fact) -> bool | None:
        """The run's value of a fact (None: the run did not read it)."""
        facts = self.bindings.facts
        value = None if facts is None else facts.get(node.key)
        return value if isinstance(value, bool) else None

    def path_list(self, key: tuple[str, ...]) -> BagPathList | None:
        """The run's path list of a bag (None: the run did not read it)."""
        facts = self.bindings.facts
        value = None if facts is None else facts.get(key)
        return value if isinstance(value, tuple) else None

    def bag_search(self, node: BagSearch) -> str:
        paths = self.path_list(node.key)
        if paths is None:
            return "0"
        tests = [test for path, types in paths if (test := node.per_path(path, types)) is not None]
        if not tests:
            return "0"
        return "ifNull((" + " OR ".join(self.expr(t) for t in tests) + "), 0)"

    def given(self, node: Given) -> str:
        known = [self.fact(fact) for fact, _ in node.facts]
        if all(value is not None for value in known):
            holds = all(
                value == wanted for value, (_, wanted) in zip(known, node.facts, strict=True)
            )
            return self.expr(node.then if holds else node.otherwise)
        condition = " AND ".join(
            self.expr(fact) if wanted else f"NOT {self.expr(fact)}" for fact, wanted in node.facts
        )
        return f"if({condition}, {self.expr(node.then)}, {self.expr(node.otherwise)})"

    def source(self, source: Source) -> str:
        if isinstance(source, TableRef):
            text = quote_identifier(source.table)
            if source.database:
                text = f"{quote_identifier(source.database)}.{text}"
        elif isinstance(source, TableFunction):
            args = ", ".join(self.expr(a) for a in source.args)
            text = f"{_check_name(source.name)}({args})"
        elif isinstance(source, Subquery):
            text = f"(\n  {self.nested(source.query)}\n)"
        else:
            raise TypeError(f"cannot render source {type(source).__name__}")
        alias = getattr(source, "alias", None)
        return f"{text} AS {quote_identifier(alias)}" if alias else text

    def nested(self, query: Query) -> str:
        """``query`` indented one level."""
        return self.query(query).replace("\n", "\n  ")

    def ctes(self, ctes: list[tuple[str, Query]], materialized: frozenset[str]) -> str:
        if not ctes:
            return ""
        parts = [
            f"{quote_identifier(name)} AS {'MATERIALIZED ' if name in materialized else ''}"
            f"(\n  {self.nested(query)}\n)"
            for name, query in ctes
        ]
        return "WITH " + ",\n".join(parts) + "\n"

    def limit(self, limit: Expr) -> str | None:
        """The text after ``LIMIT`` (None: no ``LIMIT``, an unset row cap)."""
        if isinstance(limit, RowCap):
            cap = self.bindings.row_cap
            return None if cap is None else literal_sql(int(cap))
        return self.expr(limit)

    def query(self, query: Query) -> str:
        if isinstance(query, UnionAll):
            body = "\nUNION ALL\n".join(
                f"SELECT * FROM (\n  {self.nested(q)}\n)" for q in query.queries
            )
            return self.ctes(query.ctes, query.materialized) + body
        expr = self.expr
        lines = []
        head = "SELECT DISTINCT " if query.distinct else "SELECT "
        columns = ", ".join(
            expr(e) + (f" AS {quote_identifier(alias)}" if alias is not None else "")
            for e, alias in (query.columns or [(Star(), None)])
        )
        lines.append(head + columns)
        if query.from_ is not None:
            lines.append("FROM " + self.source(query.from_))
        for join in query.joins:
            text = f"{join.kind} JOIN {self.source(join.source)}"
            if join.on is not None:
                text += f" ON {expr(join.on)}"
            elif join.using:
                text += " USING (" + ", ".join(quote_identifier(c) for c in join.using) + ")"
            lines.append(text)
        if query.array_join:
            keyword = "LEFT ARRAY JOIN " if query.left_array_join else "ARRAY JOIN "
            lines.append(
                keyword
                + ", ".join(f"{expr(e)} AS {quote_identifier(a)}" for e, a in query.array_join)
            )
        if query.where is not None:
            lines.append("WHERE " + expr(query.where))
        if query.group_by is not None and query.group_by:
            lines.append("GROUP BY " + ", ".join(expr(e) for e in query.group_by))
        if query.having is not None:
            lines.append("HAVING " + expr(query.having))
        if query.qualify is not None:
            lines.append("QUALIFY " + expr(query.qualify))
        if query.order_by:
            lines.append(
                "ORDER BY "
                + ", ".join(
                    f"{expr(e)} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if nf else 'LAST'}"
                    for e, desc, nf in query.order_by
                )
            )
        if query.limit_by is not None:
            count, keys = query.limit_by
            lines.append(f"LIMIT {expr(count)} BY " + ", ".join(expr(k) for k in keys))
        if query.limit is not None and (limit := self.limit(query.limit)) is not None:
            lines.append("LIMIT " + limit)
        return self.ctes(query.ctes, query.materialized) + "\n".join(lines)
