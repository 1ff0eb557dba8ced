"""A text search of a stored bag tests each of its stored paths, not its JSON text.

``search "timeout"`` and ``where attributes has "timeout"`` ask whether a bag's text has the
term. The general form serializes the bag to JSON per row (``toJSONString(resource)``), which
is most of a search's time: over a day of 3.4 M rows, 17.6 s for ``resource`` (20 paths) and
5.5 s for ``attributes``. Each path of a ClickHouse ``JSON`` column is a sub-column of its own,
so the same test per path reads only values: 0.57 s and 0.86 s (docs/engine.md, *Searching
bags*).

What holds: the bag has the term when one of its keys or one of its values has it. A key is
the dotted path as the record sent it (``k8s.pod.name``), a value its text (a string as it
is, other types as JSON). For a term of letters and digits this is what the JSON text
answers; the text differs where JSON escapes a character (``a\\nb`` reads ``a``, ``b`` here,
``a``, ``nb`` in the text), where a key is dotted (``"service.name"`` is a key here; the text
nests it as ``{"service":{"name":…}}``) and for a term spanning a key and its value.

How: before compiling, the planner collects the terms each stored bag is searched for
(:func:`collect`): the terms of ``search`` predicates and of ``* has "literal"``, which search
every string and dynamic column; ``bag has "literal"`` (also ``hasprefix``, ``hassuffix``,
``contains``, their ``_cs`` and negated forms); and each literal of ``has_any``/``has_all``.
The table read then selects one hidden boolean per (bag, operator, term) (:func:`table_items`):
a ``sql.BagSearch`` node, which a run renders from the bag's path list in the registry
(``storage/json_paths.py``) as one test per path (a value that only ever held numbers or
booleans is not tested for a term no number or boolean spells). The operator reads it through
a ``sql.Known`` node (:func:`lookup`), which a run that could not read the registry renders as
the test of the bag's text. The hidden column rides along like a bag path (``bag_paths.carry``).
"""

from __future__ import annotations

from collections.abc import Mapping

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths, registry_facts
from bzrk.engine.compile.errors import CompileError
from bzrk.engine.compile.search_terms import case_sensitive, expand
from bzrk.engine.compile.semantics import string_op
from bzrk.engine.compile.typed import Filtered, Typed
from bzrk.kql import syntax as K

# The string operators a bag's text test splits into per-path tests (false on every path:
# false on the text). Equality, starts/ends-with and regexes read the text as a whole.
OPERATORS = frozenset(
    {
        "has", "has_cs", "hasprefix", "hasprefix_cs", "hassuffix", "hassuffix_cs",
        "contains", "contains_cs",
    }
)  # fmt: skip
# At most this many (operator, term) pairs per bag get a hidden column; more use the text.
MAX_TERMS_PER_BAG = 16
# A table read tests at most this many (term, path) pairs per bag, and a bag of more than
# MAX_SEARCHED_PATHS paths is always searched as its text: every test is a few expression
# nodes, and ClickHouse refuses a query past 50,000 (16 terms over 250 paths did).
TESTS_PER_BAG = 512
MAX_SEARCHED_PATHS = 256
# A marker segment no bag path has (a path segment never holds a dot: bag_paths.index_key).
_MARKER = "search."
# The characters of a number's or a boolean's text (JSON: 1.5e-07, true, false, nan, inf).
_NUMBER_TEXT = frozenset("0123456789.+-etruefalsinf")
_SCALAR_TYPES = frozenset({*registry_facts.NUMBER_TYPES, "Bool"})

Term = tuple[str, str]  # (operator, literal)


def _path(term: Term) -> bag_paths.Path:
    return (_MARKER, *term)


def collect(query: K.Node) -> dict[str, set[Term]]:
    """The (operator, literal) pairs each stored bag is searched for in ``query``."""
    found: dict[str, set[Term]] = {}
    bags = sorted(bag_paths.STORED_BAGS)
    for node in query.walk():
        tests: list[K.Node] = [node]
        if isinstance(node, K.InList) and node.op.lstrip("!").startswith(("has_any", "has_all")):
            op = "has_cs" if node.op.endswith("_cs") else "has"
            tests = [K.Binary(node.span, op, node.left, item) for item in node.items]
        elif isinstance(node, K.Search):
            try:
                tests = list(expand(node.predicate, bags, case_sensitive(node)).walk())
            except CompileError:  # the operator reports it, located
                continue
        for test in tests:
            if not (
                isinstance(test, K.Binary)
                and test.op.lstrip("!") in OPERATORS
                and isinstance(test.right, K.Literal)
                and isinstance(test.right.value, str)
                and test.right.value
            ):
                continue
            term = (test.op.lstrip("!"), test.right.value)
            if isinstance(test.left, K.Star):  # `* has "x"`: every searched column
                for bag in bags:
                    found.setdefault(bag, set()).add(term)
            elif isinstance(test.left, K.NameRef) and test.left.name in bag_paths.STORED_BAGS:
                found.setdefault(test.left.name, set()).add(term)
    return found


def table_items(
    bags: Mapping[str, Mapping[str, str]],
    wanted: Mapping[str, set[Term]],
    registry: str | None,
) -> tuple[list[tuple[S.Expr, str]], dict[str, dict[bag_paths.Path, bag_paths.PathColumns]]]:
    """Hidden select items of a table read testing its bags for the wanted terms, and the
    paths (markers) that name them in each bag's map. Without a registry there are none."""
    items: list[tuple[S.Expr, str]] = []
    result: dict[str, dict[bag_paths.Path, bag_paths.PathColumns]] = {}
    if registry is None:
        return items, result
    for column, typed_paths in bags.items():
        terms = sorted(wanted.get(column, ()))[:MAX_TERMS_PER_BAG]
        if not terms:
            continue
        key = registry_facts.paths_key(
            registry, column, min(MAX_SEARCHED_PATHS, TESTS_PER_BAG // len(terms))
        )
        for term in terms:
            leaf = f"$bagsearch_{len(items)}"
            items.append((_bag_search(column, typed_paths, key, term), leaf))
            result.setdefault(column, {})[_path(term)] = bag_paths.PathColumns(
                leaf, None, "UInt8", search=key
            )
    return items, result


def string_test(op: str, left: Typed, right: Typed, node: K.Node | None = None) -> Typed:
    """KQL's string operator ``left op right``; on a stored bag its table read tests per path,
    the hidden test read in a run that read the bag's paths (the text test otherwise)."""
    tested = string_op(op, left, right, node)
    return Typed(lookup(left.sql, op, right.sql, tested.sql), "bool")


def lookup(bag: S.Expr, op: str, right: S.Expr, text_test: S.Expr) -> S.Expr:
    """``bag op right`` (``op`` may be negated): the hidden per-path test its table read
    carries, in a run that read the bag's paths; else ``text_test``, the test of its text."""
    if not isinstance(bag, bag_paths.NativeBag) or not isinstance(right, S.Lit):
        return text_test
    negated = op.startswith("!")
    base = op[1:] if negated else op
    if base not in OPERATORS or not isinstance(right.value, str):
        return text_test
    columns = bag.paths.get(_path((base, right.value)))
    if columns is None or columns.search is None:
        return text_test
    test: S.Expr = S.Col(columns.leaf)
    return S.Known(columns.search, S.Not(test) if negated else test, text_test)


def _bag_search(
    column: str, typed_paths: Mapping[str, str], key: tuple[str, ...], term: Term
) -> S.BagSearch:
    op, needle = term

    def test(value: S.Expr) -> S.Expr:
        # The filter form (NULL on an absent value: the BagSearch reads NULL as false) skips
        # turning each absent value into '' first: ~25 % of a bag search's time.
        tested = string_op(op, Typed(value, "string"), Typed(S.Lit(needle), "string")).sql
        if isinstance(tested, Filtered) and tested.in_filter is not None:
            return tested.in_filter
        return tested

    number_like = set(needle.lower()) <= _NUMBER_TEXT
    sensitive = op.endswith("_cs")
    folded = needle if sensitive else needle.casefold()

    def per_path(path: str, types: tuple[str, ...]) -> S.Expr | None:
        segments = tuple(path.split("."))
        # A key with an empty segment ("a..b", ".y") has no identifier path: getSubcolumn
        # names it as text (it reads the whole bag, ~4x slower, so only then).
        leaf: S.Expr = (
            S.SubColumn(column, segments, False)
            if all(segments)
            else S.Template("getSubcolumn({0}, {1})", [S.Col(column), S.Lit(path)])
        )
        # Every operator here needs the needle inside the text: a key without it is not tested.
        key: S.Expr | None = None
        if folded in (path if sensitive else path.casefold()):
            key = S.BinOp("AND", test(S.Lit(path)), S.IsNull(leaf, negated=True))
        if path in typed_paths:
            value: S.Expr | None = leaf
        elif set(types) == {"String"}:
            value = S.Template("dynamicElement({0}, 'String')", [leaf])
        elif set(types) <= _SCALAR_TYPES and not number_like:
            value = None  # no number or boolean spells the term
        else:
            value = bag_paths.value_text(leaf)
        if value is None:
            return key
        return test(value) if key is None else S.BinOp("OR", key, test(value))

    return S.BagSearch(key, per_path)
