"""Symbols the binder resolves names to: types, columns, table schemas, tables, databases,
variables, functions, and the caller-supplied `GlobalState` (schema + options)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bzrk.kql import syntax

# KQL scalar type names, as Kusto spells them. "unknown" marks an expression whose type could
# not be determined (an opaque operator's output); it is accepted wherever a type is expected.
BOOL = "bool"
INT = "int"
LONG = "long"
REAL = "real"
DECIMAL = "decimal"
STRING = "string"
DATETIME = "datetime"
TIMESPAN = "timespan"
GUID = "guid"
DYNAMIC = "dynamic"
UNKNOWN = "unknown"
SCALAR_TYPES = (BOOL, INT, LONG, REAL, DECIMAL, STRING, DATETIME, TIMESPAN, GUID, DYNAMIC)
NUMERIC_TYPES = frozenset({INT, LONG, REAL, DECIMAL})

RAW_COLUMN = "$raw"


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class TableSchema:
    """Ordered columns of a tabular value.

    `raw` says the rows still carry `$raw` (a source table's full record), so in permissive
    mode an unknown name resolves into it. `opaque` marks a schema the binder could not
    compute (e.g. a data-dependent plugin); unknown names then bind as `dynamic` without error.
    """

    columns: tuple[Column, ...]
    raw: bool = False
    opaque: bool = False
    _index: dict[str, Column] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self._index:
            for c in self.columns:
                self._index.setdefault(c.name, c)

    def find(self, name: str) -> Column | None:
        return self._index.get(name)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def with_columns(self, columns: Iterable[Column]) -> TableSchema:
        return TableSchema(tuple(columns), self.raw, self.opaque)


EMPTY_SCHEMA = TableSchema(())


@dataclass(frozen=True, slots=True)
class TableSymbol:
    name: str
    database: str
    schema: TableSchema


@dataclass(frozen=True, slots=True)
class DatabaseSymbol:
    name: str
    tables: tuple[TableSymbol, ...]

    def find(self, name: str) -> TableSymbol | None:
        for t in self.tables:
            if t.name == name:
                return t
        return None


@dataclass(frozen=True, slots=True)
class GlobalState:
    """What the binder knows beyond the query: databases/tables and options.

    Args:
        databases: the databases, each with typed tables.
        default_database: the database unqualified table names resolve in.
        permissive: unknown names on rows that carry `$raw` resolve into `$raw` as dynamic
            (Berserk's default); False (strict) reports `UnknownName` instead.
        resolve: asked for a table of the default database that `databases` does not list
            (the engine resolves names lazily through its catalogue); None: none.
    """

    databases: tuple[DatabaseSymbol, ...] = ()
    default_database: str = "default"
    permissive: bool = True
    resolve: Callable[[str], TableSymbol | None] | None = field(default=None, compare=False)

    @staticmethod
    def from_tables(
        tables: dict[str, Iterable[tuple[str, str]]],
        database: str = "default",
        permissive: bool = True,
        raw: bool = True,
    ) -> GlobalState:
        """Build a state with one database from `{table: [(column, type), ...]}`.

        >>> g = GlobalState.from_tables({"logs": [("timestamp", "datetime"), ("body", "string")]})
        >>> g.find_table("logs").schema.names
        ['timestamp', 'body']
        """
        syms = tuple(
            TableSymbol(name, database, TableSchema(tuple(Column(c, t) for c, t in cols), raw=raw))
            for name, cols in tables.items()
        )
        return GlobalState((DatabaseSymbol(database, syms),), database, permissive)

    def with_permissive(self, permissive: bool) -> GlobalState:
        return replace(self, permissive=permissive)

    def find_database(self, name: str) -> DatabaseSymbol | None:
        for db in self.databases:
            if db.name == name:
                return db
        return None

    def find_table(self, name: str, database: str | None = None) -> TableSymbol | None:
        db = self.find_database(database or self.default_database)
        found = db.find(name) if db else None
        if found is None and self.resolve is not None and database in (None, self.default_database):
            found = self.resolve(name)
        return found


# --- what name references resolve to ------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class ColumnSymbol:
    """A column of the current row (or of `$left`/`$right` in join conditions)."""

    name: str
    type: str
    side: str = ""  # "", "left" or "right"


@dataclass(frozen=True, slots=True, eq=False)
class RawPathSymbol:
    """An unknown name resolved into `$raw` (permissive mode): `$raw.<path...>`, dynamic."""

    path: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False)
class VariableSymbol:
    """A `let`-bound value, lambda/declared parameter, or scan/`as` name.

    Exactly one of `type` (scalar) and `schema` (tabular) is meaningful; `value` is the
    defining expression (for a lambda parameter: the argument or default at the call site
    bound last; None for declared query parameters).
    """

    name: str
    type: str | None
    schema: TableSchema | None
    value: syntax.Expr | None
    kind: str  # "let" | "parameter" | "query_parameter"


@dataclass(frozen=True, slots=True, eq=False)
class UserFunctionSymbol:
    """A `let f = (params) { body }` lambda or `view`."""

    name: str
    declaration: syntax.Lambda


@dataclass(frozen=True, slots=True, eq=False)
class TableRefSymbol:
    """A database table referenced by name (or `database("d").T`, `table("T")`)."""

    table: TableSymbol


@dataclass(frozen=True, slots=True, eq=False)
class PatternSymbol:
    """A `declare pattern` statement; `p(args).path` picks the case whose literals match."""

    name: str
    declaration: syntax.DeclarePattern


Symbol = (
    ColumnSymbol
    | RawPathSymbol
    | VariableSymbol
    | UserFunctionSymbol
    | TableRefSymbol
    | PatternSymbol
)
