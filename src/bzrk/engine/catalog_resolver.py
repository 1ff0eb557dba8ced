"""How the query service names tables: catalogue answers as the compiler's table sources."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bzrk.engine.compile.query import TableResolver, TableSource


@dataclass
class StoredTableSource(TableSource):
    """A :class:`TableSource` of a stored bzrk table, with how it stores absent fields.

    ``absent`` (a field of every :class:`TableSource`, read by the compiler's table read) maps
    every column (and each declared typed bag path, ``resource.service.name``) to how a record
    without that field is stored: ``"null"`` (NULL in a Nullable column), ``"[]"`` (an empty
    array), ``"{}"`` (an empty bag / no key in it) or ``"never"`` (every row has it);
    ``bzrk.storage.schema.ABSENCE`` is the source. KQL reads an absent field as null (issue
    20); the compiler expresses that from this, whatever the layout.
    """


class TableCatalog(Protocol):
    """Resolves bzrk tables (``bzrk.storage.catalog.StorageCatalog`` in a server)."""

    def resolve(self, database: str, table: str) -> Any: ...

    def list_tables(self, database: str) -> Any: ...


def stored_bags(columns: Sequence[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """The stored JSON columns among a table's columns, with their declared typed paths.

    The compiler reads constant paths of these natively (``compile/bag_paths.py``). ``$raw``
    is computed from every column on read (``TableSource.computed``), so it stays JSON text.
    """
    from bzrk.storage.schema import COLUMNS_BY_NAME, RESOURCE_TYPED_PATHS

    typed = {"resource": dict(RESOURCE_TYPED_PATHS)}
    bags: dict[str, dict[str, str]] = {}
    for name, _ in columns:
        column = COLUMNS_BY_NAME.get(name)
        if column is not None and column.alias is None and column.ch_type.startswith("JSON"):
            bags[name] = typed.get(name, {})
    return bags


class CatalogResolver(TableResolver):
    """Maps KQL table names of one bzrk database to ClickHouse tables, remembering what it used.

    ``tables``, when given, names the tables instead of the catalogue: a one-shot run
    (``engine/oneshot.py``) over tables its caller made, through the same service path.

    ``sources`` is shared by the service's resolvers: it keeps the :class:`TableSource` built
    for each catalogue answer, so a cached plan's check (``PlanCache.get``) compares the same
    object instead of a freshly built one per query.
    """

    def __init__(
        self,
        catalog: TableCatalog | None,
        database: str,
        sources: dict[tuple[str, str], tuple[Any, TableSource]] | None = None,
        tables: TableResolver | None = None,
    ) -> None:
        self.catalog = catalog
        self.tables = tables
        self.database = database
        self.sources = sources if sources is not None else {}
        self.used: dict[str, TableSource] = {}
        # Every name looked up and its answer, misses included (what a cached plan relies on).
        self.lookups: dict[str, TableSource | None] = {}
        # The database's table list was read (a leading search): a table added later would
        # change the plan, which the lookups cannot tell, so such a plan is not cached.
        self.listed = False

    def resolve(self, name: str) -> TableSource | None:
        source = self._resolve(name)
        self.lookups[name] = source
        if source is not None:
            self.used[f"{source.database}.{source.table}"] = source
        return source

    def table_names(self) -> tuple[str, ...]:
        if self.tables is not None:
            self.listed = True
            return self.tables.table_names()
        if self.catalog is None:
            return ()
        self.listed = True
        try:
            listed = self.catalog.list_tables(self.database)
        except Exception:  # no catalogue answer: no table to search
            return ()
        return tuple(sorted(table.name for table in listed))

    def _resolve(self, name: str) -> TableSource | None:
        if self.tables is not None:
            return self.tables.resolve(name)
        if self.catalog is None:
            return None
        try:
            resolved = self.catalog.resolve(self.database, name)
        except Exception:  # unknown names are the compiler's to report
            return None
        key = (resolved.ch_database, resolved.ch_table)
        known = self.sources.get(key)
        if known is not None and known[0] == resolved:
            return known[1]
        # The catalogue names the ClickHouse table and its KQL columns; nothing is re-derived here.
        source = StoredTableSource(
            database=resolved.ch_database,
            table=resolved.ch_table,
            columns=list(resolved.columns),
            bags=stored_bags(resolved.columns),
            path_registry=getattr(resolved, "path_registry", "") or None,
            absent=dict(getattr(resolved, "absent", ())),
            computed=dict(getattr(resolved, "computed", ())),
            distinct_parts=dict(getattr(resolved, "distinct_parts", ())),
            registry_reader=_reader(getattr(self.catalog, "backend", None)),
        )
        if len(self.sources) >= _MAX_KNOWN_SOURCES:
            self.sources.clear()
        self.sources[key] = (resolved, source)
        return source


# Registry reads a table's reader keeps (one per distinct set of paths a query names).
_MAX_CACHED_READS = 256


def _reader(backend: Any) -> Callable[[str], list[dict[str, Any]]] | None:
    """How a run reads the path registry's facts from the catalogue's store (None: the SQL
    asks for them itself).

    A store only this process writes (chDB: its ``write_generation`` counts every statement
    that may write) answers a registry read again from memory until the next write: the read
    is a query of its own (~3 ms) before every run of a query naming a bag path. The count is
    taken before the read, so a write racing with it makes the next run read again. A store
    others write too (a ClickHouse server) is read every run.
    """
    if backend is None or not hasattr(backend, "query_arrow"):
        return None

    def read(sql: str) -> list[dict[str, Any]]:
        return list(backend.query_arrow(sql, settings=None).to_pylist())

    if not hasattr(backend, "write_generation"):
        return read
    return CachedReader(backend, read)


class CachedReader:
    """A registry reader that answers a read again from memory until the store's next write
    (``backend.write_generation``); :meth:`peek` answers from memory only, so a run whose facts
    are known needs no worker thread to read them."""

    def __init__(self, backend: Any, read: Callable[[str], list[dict[str, Any]]]) -> None:
        self._backend = backend
        self._read = read
        self._cache: dict[str, tuple[int, list[dict[str, Any]]]] = {}

    def __call__(self, sql: str) -> list[dict[str, Any]]:
        generation = self._backend.write_generation
        hit = self._cache.get(sql)
        if hit is not None and hit[0] == generation:
            return hit[1]
        rows = self._read(sql)
        if len(self._cache) >= _MAX_CACHED_READS:
            self._cache.clear()
        self._cache[sql] = (generation, rows)
        return rows

    def peek(self, sql: str) -> list[dict[str, Any]] | None:
        """The rows of ``sql`` when memory holds them for the store as it is now, else None."""
        hit = self._cache.get(sql)
        if hit is not None and hit[0] == self._backend.write_generation:
            return hit[1]
        return None


# Distinct tables whose sources a service keeps (more is a sign of churn: start again).
_MAX_KNOWN_SOURCES = 1024
