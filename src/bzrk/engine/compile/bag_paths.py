"""Bag paths: constant member/index chains on a stored JSON column read native sub-columns.

A bzrk table keeps its bags (``resource``, ``attributes``, ``scope``) in ClickHouse ``JSON``
columns. The compiler's general form of a ``dynamic`` value is JSON text, and parsing a whole
bag's text per row to find one key is slow. So before compiling, the query is scanned for
constant paths on bag names (``resource.service.name``, ``attributes["http.route"]``); the
table read (the first CTE) then also selects each such path as hidden sub-columns:

* the path's value, ``attributes.`http`.`route``` (``Dynamic``, or a declared typed path's own
  type such as ``resource.`service`.`name``` — ``LowCardinality(Nullable(String))``), and
* the sub-object under it, ``attributes.^`http`.`route```, for paths that are objects.

ClickHouse stores OTel's dotted keys as nested paths, so ``attributes["http.route"]`` and
``attributes.http.route`` are the same sub-column (the JSON text form reads them the same way).

Hidden columns ride along through operators that pass the bag column through unchanged
(``where``, ``extend``, ``project`` of the bag, ``sort``, ``take``, …: see :func:`carry`); any
other operator simply drops them and member access falls back to the JSON text. An expression
on a carried path compiles to a :class:`PathText` node: its SQL is the value's JSON text
(exactly the text form's answer, so every consumer keeps working), and the conversions that
matter — ``tostring``, comparisons with strings, ``toint``/``todouble`` (through
:func:`bzrk.engine.compile.typed.dynamic_string`) — read the native value instead of text.

The table's path registry (``storage/json_paths.py``) says which paths lie under a path and
which types a path has held. Those facts are ``sql.Fact`` nodes and the forms they choose
between (``CAST(v AS String)`` or the general form) ``sql.Given`` nodes: every run reads the
facts of its plan once (``registry_facts.py``) and renders only the chosen form; a run that
cannot read them asks inside its SQL. A compiled (cached) plan never holds the facts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile.registry_facts import NUMBER_TYPES, has_children, holds_other
from bzrk.kql import syntax as K

# A query naming more distinct paths than this on one bag reads the rest from JSON text.
MAX_PATHS_PER_BAG = 64

# Select-statement options under which a passed-through bag column keeps its hidden paths:
# each output row is one input row, so a path value still belongs to its bag value.
_ROW_PRESERVING = frozenset({"where", "order_by", "limit", "limit_by", "qualify"})

_STRING_TYPES = frozenset(
    {"String", "Nullable(String)", "LowCardinality(String)", "LowCardinality(Nullable(String))"}
)

Path = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PathColumns:
    """The hidden columns of one bag path in a relation."""

    leaf: str  # the path's value: Dynamic, or the declared typed path's type
    sub: str | None  # the sub-object under the path (JSON); None for typed paths
    typed: str | None = None  # ClickHouse type of a declared typed path
    # The registry's facts about the path (None without a registry): a stored path lies under
    # it (the sub-object is read only then); it has held a type other than a string / other
    # than a number (has_children, holds_other). Each is read per run or asked in the SQL.
    children: S.Fact | None = None
    not_strings: S.Fact | None = None
    not_numbers: S.Fact | None = None
    # A bag search's hidden test (bag_search.py): the key of the bag's path list it needs.
    search: tuple[str, ...] | None = None
    # A bag's key list (KEYS): whether the table stores an absent bag as an empty one
    # (storage/schema.py ABSENCE "{}"), so no keys means the record has no such field.
    empty_is_absent: bool = False


# KQL's string of a nullable string column (no null string in KQL); a filter comparing it with
# non-empty text reads the column as it is (operators/where.py, filter_form).
EMPTY_WHEN_NULL = "ifNull({0}, '')"


def sub_text(columns: PathColumns) -> S.Expr:
    """A path's sub-object as JSON text (``'{}'`` when empty). With no stored path under the
    path (the registry's fact, known per run or folded while ClickHouse plans the query), the
    sub-object is not read at all."""
    assert columns.sub is not None
    text = S.Template("toJSONString({0})", [S.Col(columns.sub)])
    if columns.children is None:
        return text
    return S.Given(((columns.children, True),), text, S.Lit("{}"))


BagPaths = Mapping[Path, PathColumns]


@dataclass(frozen=True, slots=True)
class NativeBag(S.Col):
    """A stored bag column as its table read gives it: the JSON text of an object, or null
    where the record has none (an empty bag is an absent field; never a JSON string), with the
    native path columns its relation carries (possibly none). Consumers rely on that shape:
    ``isnull`` is the null test, ``tostring`` is the text itself ('' when absent),
    ``bag_keys`` reads the carried key list."""

    paths: BagPaths = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class PathText(S.Template):
    """JSON text of a bag path's value (NULL when absent), computed from native columns."""

    columns: PathColumns | None = field(default=None, compare=False, hash=False)
    path: Path = ()
    paths: BagPaths = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def of(cls, columns: PathColumns, path: Path, paths: BagPaths) -> PathText:
        leaf = S.Col(columns.leaf)
        if columns.sub is None:
            # A typed path: NULL reads as JSON `null`, as the whole bag's text shows it.
            return cls("ifNull(toJSONString({0}), 'null')", [leaf], columns, path, paths)
        text = "if(isNull({0}), nullIf({1}, '{{}}'), toJSONString({0}))"
        return cls(text, [leaf, sub_text(columns)], columns, path, paths)

    def as_string(self) -> S.Expr | None:
        """KQL ``tostring`` of the value ('' when absent), or None to use the text form."""
        columns = self.columns
        if columns is None:
            return None
        leaf = S.Col(columns.leaf)
        if columns.sub is None:
            if columns.typed in _STRING_TYPES:
                return S.Template(EMPTY_WHEN_NULL, [leaf])
            return None
        # An absent leaf may still be an object, whose text comes from the sub-object.
        general = S.Template(
            _value_text(absent="ifNull(nullIf({1}, '{{}}'), '')"), [leaf, sub_text(columns)]
        )
        if columns.not_strings is None or columns.children is None:
            return general
        # A path that only ever held strings, with no object under it, is ClickHouse's own
        # cast (NULL reads as ''); chosen per run from the registry's facts (or folded while
        # ClickHouse plans the query when the run did not read them).
        cast = S.Template("CAST({0} AS String)", [leaf])
        return S.Given(((columns.not_strings, False), (columns.children, False)), cast, general)

    def as_stored(self, kind: str) -> S.Expr | None:
        """The value when it is stored as ``kind`` (see ``typed.stored_value``), else NULL."""
        columns = self.columns
        if columns is None:
            return None
        leaf = S.Col(columns.leaf)
        if columns.sub is None:
            typed_kind = _TYPED_KINDS.get(_bare_type(columns.typed or ""))
            if typed_kind is None:
                return None
            if typed_kind == kind:
                return leaf
            if kind == "real" and typed_kind == "long":
                return S.Template("toFloat64({0})", [leaf])
            return S.Template("CAST(NULL, 'Nullable(String)')" if kind == "string" else "NULL")
        stored = S.Template(_STORED_VARIANTS[kind], [leaf])
        if kind == "real" and columns.not_numbers is not None:
            # A path that only ever held numbers: ClickHouse's own cast (see as_scalar).
            numbers = S.Template("CAST({0} AS Nullable(Float64))", [leaf])
            return S.Given(((columns.not_numbers, False),), numbers, stored)
        return stored

    def as_scalar(self, kql_type: str, from_text: Callable[[S.Expr], S.Expr]) -> S.Expr | None:
        """The value converted to a number (``from_text`` converts KQL's string form), or None.

        An object never converts to a number or bool, so these read no sub-object: a missing
        leaf converts like ``''`` (null). Numbers stored as Int64/Float64 (and UInt64 for
        ``real``) skip the text.
        """
        columns = self.columns
        if columns is None or columns.sub is None:
            return None
        leaf = S.Col(columns.leaf)
        if kql_type == "real":
            # Each numeric variant converts directly and a string goes through KQL's text
            # rule; every other variant (bool, array, date) has text no number parses from.
            # No per-row JSON text: ~1.6x faster than the generic form over 24 M rows. A path
            # that only ever held numbers is ClickHouse's own cast, as an expert writes it
            # (an integer past 2**53 becomes the nearest double, as toFloat64 of its variant
            # does): 151 ms against 182 ms for the variant-by-variant form on top_routes_json.
            general = S.Template(
                f"coalesce({_FLOAT64}, toFloat64({_INT64}), {{1}}, toFloat64({_UINT64}))",
                [leaf, from_text(S.Template(_STRING, [leaf]))],
            )
            if columns.not_numbers is None:
                return general
            numbers = S.Template("CAST({0} AS Nullable(Float64))", [leaf])
            return S.Given(((columns.not_numbers, False),), numbers, general)
        generic = from_text(S.Template(_value_text(absent="''"), [leaf]))
        fast = _NUMBER_FAST_PATHS.get(kql_type)
        if fast is None:
            return generic
        return S.Template(fast, [leaf, generic])


# JSON text of a non-string value; the types JSON writes as strings (dates, UUIDs, addresses:
# no characters JSON escapes) as their text without the quotes.
_UNQUOTED_JSON = "if(startsWith(toJSONString({0}), '\"'), CAST({0} AS String), toJSONString({0}))"
_INT64 = "dynamicElement({0}, 'Int64')"
_UINT64 = "dynamicElement({0}, 'UInt64')"
_FLOAT64 = "dynamicElement({0}, 'Float64')"
_STRING = "dynamicElement({0}, 'String')"


# A variant of a path's Dynamic value read as one kind, NULL for every other variant.
_STORED_VARIANTS = {
    "string": _STRING,
    "real": f"coalesce({_FLOAT64}, toFloat64({_INT64}), toFloat64({_UINT64}))",
    "long": f"coalesce({_INT64}, accurateCastOrNull({_UINT64}, 'Int64'))",
    "bool": "dynamicElement({0}, 'Bool')",
}
# The kind of a typed path's ClickHouse type (see as_stored).
_TYPED_KINDS = {
    "String": "string",
    "Int8": "long", "Int16": "long", "Int32": "long", "Int64": "long",
    "UInt8": "long", "UInt16": "long", "UInt32": "long",
    "Float32": "real", "Float64": "real",
    "Bool": "bool",
}  # fmt: skip


def _bare_type(ch_type: str) -> str:
    """``LowCardinality(Nullable(String))`` → ``String``."""
    for wrapper in ("LowCardinality(", "Nullable("):
        if ch_type.startswith(wrapper):
            ch_type = ch_type[len(wrapper) : -1]
    return ch_type


def _value_text(absent: str) -> str:
    """Template of KQL's string form of a path's value (``{0}``), ``absent`` when there is none.

    A string is read as its variant (no per-row type name); another type's text is its JSON,
    unquoted for the types JSON writes as strings, as the whole bag's text has them.
    """
    return (
        f"if(isNotNull({_STRING}), assumeNotNull({_STRING}), "
        f"if(isNull({{0}}), {absent}, {_UNQUOTED_JSON}))"
    )


def value_text(leaf: S.Expr) -> S.Expr:
    """KQL's string form of a path's ``Dynamic`` value (``''`` when absent): a string as it
    is, another type as its JSON text (unquoted where JSON writes it as a string)."""
    return S.Template(_value_text(absent="''"), [leaf])


_NUMBER_FAST_PATHS = {
    "long": f"multiIf(isNotNull({_INT64}), {_INT64}, {{1}})",
    "int": (
        f"multiIf(isNotNull({_INT64}), if({_INT64} BETWEEN -2147483648 AND 2147483647, "
        f"toInt32({_INT64}), NULL), {{1}})"
    ),
}


# --- flat keys of the stored bags ------------------------------------------------------------

# The stored bags of OTel data (storage/json_paths.BAG_COLUMNS). OTel attribute keys are flat
# ("http.method"), but ClickHouse's JSON column keeps a dotted key as a nested path, so their
# text shows {"http": {"method": …}}. Where Berserk lists a bag's keys (bag_keys, fieldstats),
# a stored bag's keys are its leaf paths joined by dots, as they were sent; a nested kvlist
# value (rare in OTel) reads the same way, since the storage cannot tell the two apart.
STORED_BAGS = frozenset({"resource", "attributes", "scope"})
FLAT_LEVELS = 4


def is_stored_bag(node: K.Expr) -> bool:
    """Whether ``node`` names a stored bag column (``attributes``) or a constant path under one."""
    named = chain(node)
    return named is not None and named[0] in STORED_BAGS


def keys_and_values(levels: int) -> str:
    """Template (``{0}``: an object's JSON text) of its ``[(key, raw value)]`` down ``levels``
    levels: an object at a level above the last is replaced by its entries, keys joined by a
    dot (an object at the last level is one entry)."""
    level = "JSONExtractKeysAndValuesRaw({0})"
    for _ in range(levels - 1):
        level = (
            "arrayFlatten(arrayMap(x -> if(JSONType(x.2) = 'Object', "
            "arrayMap(y -> tuple(concat(x.1, '.', y.1), y.2), JSONExtractKeysAndValuesRaw(x.2)),"
            f" [x]), {level}))"
        )
    return level


# --- finding the paths a query names -------------------------------------------------------


def chain(node: K.Expr) -> tuple[str, Path] | None:
    """``root.a["b.c"]`` → ``("root", ("a", "b", "c"))``; None unless every key is constant."""
    if isinstance(node, K.Paren):
        return chain(node.expr)
    if isinstance(node, K.NameRef):
        return node.name, ()
    if isinstance(node, K.Member):
        inner = chain(node.target)
        return None if inner is None else (inner[0], (*inner[1], node.name))
    if isinstance(node, K.Index):
        key = index_key(node.index)
        inner = chain(node.target) if key is not None else None
        return None if inner is None or key is None else (inner[0], (*inner[1], *key))
    return None


def index_key(index: K.Expr) -> Path | None:
    """The path segments of a constant string index (``"http.route"`` → two segments)."""
    if not (isinstance(index, K.Literal) and isinstance(index.value, str)):
        return None
    parts = tuple(index.value.split("."))
    return parts if all(parts) else None


# Functions that read a stored bag's key list: its keys, and whether it has any (an empty bag
# is an absent field: isnull(attributes) of a record without attributes is true).
_KEY_READERS = frozenset(
    {"bag_keys", "isnull", "isnotnull", "notnull", "isempty", "isnotempty", "notempty"}
)


def collect_paths(query: K.Node) -> dict[str, set[Path]]:
    """Every constant path the query names, by root name (``{"resource": {("service",
    "name"), ("service",)}}``); prefixes included, since chains compile step by step. A
    stored bag whose keys the query lists (``bag_keys(resource)``) or tests for absence
    (``isnull(attributes)``) has :data:`KEYS`.

    Every plain name may also be an unknown one that permissive resolution reads from
    ``$raw`` (``where level == "INFO"`` is ``$raw.level``): those go under :data:`PERMISSIVE`.
    """
    found: dict[str, set[Path]] = {}
    for node in query.walk():
        if isinstance(node, K.Call) and node.name in _KEY_READERS and len(node.args) == 1:
            named = chain(node.args[0])
            if named is not None and named[0] in STORED_BAGS and not named[1]:
                found.setdefault(named[0], set()).add(KEYS)
        if isinstance(node, K.Member | K.Index):
            named = chain(node)  # type: ignore[arg-type]
            if named is not None and named[1]:
                found.setdefault(named[0], set()).add(named[1])
                if not named[0].startswith("$"):
                    found.setdefault(PERMISSIVE, set()).add((named[0], *named[1]))
        elif isinstance(node, K.NameRef) and not node.name.startswith("$"):
            found.setdefault(PERMISSIVE, set()).add((node.name,))
    return found


# Where collect_paths files the paths of names that may resolve into $raw (no name spells it).
PERMISSIVE = "$raw?"
# The "path" of a stored bag's key list: no member chain is empty, so it names no value. The
# table read selects it as ``JSONAllPaths(bag)``, the stored paths of each row's bag (its keys
# as they were sent: OTel's keys are flat and dotted), without reading the bag as JSON text.
KEYS: Path = ()


# --- the table read --------------------------------------------------------------------------


def _subcolumn(column: str, path: Path, *, sub: bool = False) -> S.Expr:
    return S.SubColumn(column, tuple(path), sub)


# The whole-record column of a stored table (storage/schema.py: an ALIAS casting every column
# to one JSON object, costly per row). Its fields are the table's columns, so a path of it reads
# the column (or the bag path) it was made from, with the same JSON text.
RAW = "$raw"
# How a scalar column reads as a field of ``$raw``: a typed path (strings convert natively).
_RAW_SCALAR = {"string": "Nullable(String)"}


def table_paths(
    bags: Mapping[str, Mapping[str, str]],
    wanted: Mapping[str, set[Path]],
    registry: str | None = None,
    columns: Sequence[tuple[str, str]] = (),
    table: str | None = None,
    computed: Mapping[str, str] | None = None,
    absent: Mapping[str, str] | None = None,
) -> tuple[list[tuple[S.Expr, str]], dict[str, BagPaths]]:
    """Hidden select items for the wanted paths of a table's JSON columns, and their map.

    ``bags`` maps each JSON column to its declared typed paths (``{"service.name":
    "LowCardinality(Nullable(String))"}``); with the table's path ``registry``, a sub-object is
    read only when a stored path lies under the path. With the table's ``columns`` (name, KQL
    type) and name, paths of ``$raw`` read the stored column or bag path they name instead of
    ``$raw`` (a column the table computes on read, ``computed``, by its expression). A bag the
    table stores empty when absent (``absent``: TableSource.absent) tests absence by its keys.
    """
    items: list[tuple[S.Expr, str]] = []
    result: dict[str, BagPaths] = {}
    counter = 0

    def add(column: str, path: Path, typed: str | None) -> PathColumns:
        nonlocal counter
        leaf, sub = f"$bag_{counter}", f"$bagsub_{counter}"
        counter += 1
        items.append((_subcolumn(column, path), leaf))
        if typed is None:
            items.append((_subcolumn(column, path, sub=True), sub))
        if registry and not typed:
            return PathColumns(
                leaf,
                sub,
                None,
                has_children(registry, column, path),
                holds_other(registry, column, path, ("String",)),
                holds_other(registry, column, path, NUMBER_TYPES),
            )
        return PathColumns(leaf, None if typed else sub, typed)

    def keys(column: str) -> PathColumns:
        leaf = f"$bagkeys_{len(items)}"
        listed: S.Expr = S.Template("JSONAllPaths({0})", [S.Col(column)])
        if bags[column]:
            # A declared typed path is always listed, even where the record has no value for
            # it (`resource` without `service.name`): a key only where it has one.
            unset = [
                S.Template(
                    "(__p = {0} AND isNull({1}))",
                    [S.Lit(name), _subcolumn(column, tuple(name.split(".")))],
                )
                for name in sorted(bags[column])
            ]
            listed = S.Template(
                "arrayFilter(__p -> NOT ("
                + " OR ".join(f"{{{i}}}" for i in range(len(unset)))
                + "), {"
                + str(len(unset))
                + "})",
                [*unset, listed],
            )
        items.append((listed, leaf))
        empty_is_absent = (absent or {}).get(column) == "{}"
        return PathColumns(leaf, None, "Array(String)", empty_is_absent=empty_is_absent)

    for column, typed_paths in bags.items():
        paths = sorted(wanted.get(column, ()))[:MAX_PATHS_PER_BAG]
        # Every stored bag is in the map, with paths or without: its column is then a
        # NativeBag, the text of an object read from its table (never null, never a string).
        result[column] = {
            path: keys(column)
            if path == KEYS
            else add(column, path, typed_paths.get(".".join(path)))
            for path in paths
        }
    # Only a bzrk table (it has bags) has the ``$raw`` of storage/schema.py.
    raw = (
        _raw_paths(
            bags,
            wanted.get(RAW, set()),
            wanted.get(PERMISSIVE, set()),
            columns,
            table,
            add,
            items,
            computed or {},
        )
        if bags
        else {}
    )
    if raw:
        result[RAW] = raw
    return items, result


def _raw_paths(
    bags: Mapping[str, Mapping[str, str]],
    wanted: set[Path],
    permissive: set[Path],
    columns: Sequence[tuple[str, str]],
    table: str | None,
    add: Callable[[str, Path, str | None], PathColumns],
    items: list[tuple[S.Expr, str]],
    computed: Mapping[str, str],
) -> dict[Path, PathColumns]:
    """``$raw.severity_text`` as the column, ``$raw.attributes["k"]`` as the bag path.

    A field absent from the record is null either way (``$raw`` omits it, the column is NULL);
    ``$raw.attributes`` alone is the bag's text, null when the bag is empty, as ``$raw`` omits
    an empty bag. Other fields keep the general form: a column of another type, a name that is
    no column, and a bag with typed paths alone (its text shows an absent typed path as null,
    where ``$raw`` omits it).
    """
    stored = dict(columns)
    mapping: dict[Path, PathColumns] = {}
    for path in sorted(wanted)[:MAX_PATHS_PER_BAG]:
        head, rest = path[0], path[1:]
        if head in bags and rest:
            mapping[path] = add(head, rest, bags[head].get(".".join(rest)))
        elif head in bags and not bags[head] and table is not None:
            # The whole bag: no value of its own (NULL), the bag as the sub-object under it
            # (qualified: the table read names its JSON text after the bag).
            leaf, sub = f"$rawbag_{len(items)}", f"$rawbagsub_{len(items)}"
            items.append((S.Template("CAST(NULL, 'Dynamic')"), leaf))
            items.append((S.Col(head, table), sub))
            mapping[path] = PathColumns(leaf, sub)
        elif not rest and stored.get(head) in _RAW_SCALAR:
            leaf = f"$rawcol_{len(items)}"
            column = S.verbatim(computed[head]) if head in computed else S.Col(head)
            items.append((column, leaf))
            mapping[path] = PathColumns(leaf, None, _RAW_SCALAR[stored[head]])
        elif head not in stored:
            mapping[path] = _absent_field(items)
    # A name that is no column is no field of the record either ($raw is made of the columns):
    # permissive resolution reads it as null without building the record.
    unknown = sorted(p for p in permissive if p[0] not in stored and p not in mapping)
    for path in unknown[:MAX_PATHS_PER_BAG]:
        mapping[path] = _absent_field(items)
    return mapping


def _absent_field(items: list[tuple[S.Expr, str]]) -> PathColumns:
    """A field ``$raw`` never has: a typed NULL leaf, read as null by every consumer."""
    leaf = f"$rawnone_{len(items)}"
    items.append((S.Template("CAST(NULL, 'Nullable(String)')"), leaf))
    return PathColumns(leaf, None, "Nullable(String)")


# --- through the operators -----------------------------------------------------------------


def carry(
    bags: Mapping[str, BagPaths],
    columns: Sequence[tuple[S.Expr, str | None]],
    options: Mapping[str, Any],
) -> tuple[list[tuple[S.Expr, str]], dict[str, BagPaths]]:
    """The hidden columns a select passes on, and the output's bag map.

    A bag column selected as itself (any name) keeps its paths when the select keeps rows
    one for one; grouping, distinct, joins and array joins drop them.
    """
    if not bags or any(v for k, v in options.items() if k not in _ROW_PRESERVING):
        return [], {}
    out: dict[str, BagPaths] = {}
    hidden: dict[str, None] = {}
    for expr, name in columns:
        if name is None or not isinstance(expr, S.Col) or expr.table is not None:
            continue
        paths = bags.get(expr.name)
        if paths is None:
            continue
        out[name] = paths
        for cols in paths.values():
            hidden[cols.leaf] = None
            if cols.sub is not None:
                hidden[cols.sub] = None
    return [(S.Col(h), h) for h in hidden], out


def raw_member(raw_sql: S.Expr | None, node: K.Expr) -> PathText | None:
    """A whole constant chain on ``$raw`` (``$raw.resource["service.name"]``) as the native path
    it names, when the table read carries it; else None.

    Compiling the chain step by step would build ``$raw.resource`` first, whose text is the
    general (whole-record) form for a bag with typed paths, and the key would then be read from
    that text row by row.
    """
    found = chain(node)
    if raw_sql is None or found is None or found[0] != RAW or not found[1]:
        return None
    return member(raw_sql, found[1])


def absent_test(bag: NativeBag) -> S.Expr:
    """Whether a stored bag is absent (``isnull(attributes)``): the record has none. An OTel
    table stores an absent bag as an empty one, so its key list is empty; a table that
    declares no absence for the bag always has one. Without its key list carried the test
    reads the bag's text (null when absent)."""
    columns = bag.paths.get(KEYS)
    if columns is None:
        return S.IsNull(bag)
    if not columns.empty_is_absent:
        return S.Lit(False)
    return S.Template("empty({0})", [S.Col(columns.leaf)])


def stored_keys(base_sql: S.Expr) -> S.Expr | None:
    """``bag_keys`` of a stored bag from the key list carried with it, as JSON text (null for
    an absent bag, as ``bag_keys(dynamic(null))``), or None (then the keys come from its
    JSON text)."""
    if not isinstance(base_sql, NativeBag):
        return None
    columns = base_sql.paths.get(KEYS)
    if columns is None:
        return None
    text = (
        "if(empty({0}), NULL, toJSONString({0}))"
        if columns.empty_is_absent
        else "toJSONString({0})"
    )
    return S.Template(text, [S.Col(columns.leaf)])


def member(base_sql: S.Expr, keys: Path) -> PathText | None:
    """``base.keys`` as a native path, when ``base`` is a carried bag or path; else None."""
    prefix: tuple[str, ...]
    if isinstance(base_sql, NativeBag):
        paths, prefix = base_sql.paths, ()
    elif isinstance(base_sql, PathText):
        paths, prefix = base_sql.paths, base_sql.path
    else:
        return None
    path = (*prefix, *keys)
    columns = paths.get(path)
    return None if columns is None else PathText.of(columns, path, paths)
