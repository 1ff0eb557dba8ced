"""The catalogue of databases, tables and fields: metadata rows plus the ClickHouse objects behind them.

:class:`StorageCatalog` is the one place that creates, lists and drops bzrk databases and
tables (metadata store first, then ClickHouse DDL), resolves a bzrk (database, table) to its
ClickHouse name for the engine, and implements :class:`bzrk.engine.request.SchemaProvider`.
Methods are blocking; async callers use ``asyncio.to_thread``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bzrk.engine.backends.base import Backend
from bzrk.engine.errors import EngineError
from bzrk.engine.request import DatabaseInfo, FieldInfo, TableInfo
from bzrk.meta import schema as meta_schema
from bzrk.meta.store import DEFAULT_DATABASE, DEFAULT_TABLE, MetaStore, NotFound, TableRow
from bzrk.storage import json_paths
from bzrk.storage.naming import TableNaming, check_name, quote_identifier, quote_string
from bzrk.storage.schema import (
    ABSENCE,
    COLUMNS,
    COMPUTED,
    DEFAULT_SHARD_FIELDS,
    DISTINCT_PARTS,
    FIELDS,
    SchemaError,
    TableLayout,
    field_sql,
    render_codec_changes,
    render_computed_drops,
    render_create_table,
    render_id_additions,
    render_id_renames,
    render_index_additions,
    render_layout_settings,
    render_ttl_change,
)

_SAMPLE_ROWS = 2000
_MAX_SAMPLES = 3
_RESOLVE_TTL_S = 5.0


class StorageError(Exception):
    """A catalogue operation failed in ClickHouse (the metadata store was left consistent)."""


@dataclass(frozen=True, slots=True)
class ResolvedTable:
    """A bzrk table as the engine needs it."""

    id: str
    database: str  # bzrk database name
    name: str  # bzrk table name
    qualified_name: str  # ClickHouse ``FROM`` target, quoted
    retention_days: int | None
    ch_database: str = ""  # the ClickHouse database, unquoted
    ch_table: str = ""  # the ClickHouse table, unquoted
    columns: tuple[tuple[str, str], ...] = ()  # (name, KQL type), ``$raw`` last
    # The table's JSON path registry (json_paths.py), quoted and qualified.
    path_registry: str = ""
    # How each column and typed bag path stores a field a record lacks (schema.ABSENCE).
    absent: tuple[tuple[str, str], ...] = ()
    # Columns computed on read, not stored: name -> expression (schema.COMPUTED: ``$raw``).
    computed: tuple[tuple[str, str], ...] = ()
    # Computed columns whose distinct values are those of stored columns (schema.DISTINCT_PARTS).
    distinct_parts: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _layout(row: TableRow) -> TableLayout:
    # None: created without shard fields (Berserk's defaults); {}: cleared since.
    return TableLayout(
        shard_fields=dict(DEFAULT_SHARD_FIELDS if row.shard_fields is None else row.shard_fields),
        retention_days=row.retention_days,
    )


class StorageCatalog:
    """Databases, tables and fields over a metadata store and a ClickHouse backend."""

    def __init__(
        self, backend: Backend, meta: MetaStore, naming: TableNaming | None = None
    ) -> None:
        self.backend = backend
        self.meta = meta
        self.naming = naming or TableNaming()
        self._resolved: dict[tuple[str, str], tuple[float, ResolvedTable]] = {}
        # Databases seen to exist (name or id -> when), cached like resolved tables: every
        # query asks, and a metadata round trip per query was a measurable share of a small one.
        self._databases: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    # -- ClickHouse DDL ----------------------------------------------------------------------
    def _ddl(self, sql: str) -> None:
        try:
            self.backend.execute(sql)
        except EngineError as exc:
            raise StorageError(exc.message) from exc

    def _create_ch_table(self, row: TableRow) -> None:
        database = self.naming.database(row.database)
        self._ddl(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)}")
        qualified = self.naming.qualified(row.database, row.name)
        self._ddl(render_create_table(qualified, _layout(row)))
        # A table an older bzrk created keeps its data (and its sorting key) and takes today's
        # part layout, codecs and fixed skip indexes, all metadata only.
        self._ddl(render_layout_settings(qualified))
        self._ddl(render_computed_drops(qualified))
        self._ddl(render_id_renames(qualified))
        self._ddl(render_id_additions(qualified))
        self._ddl(render_codec_changes(qualified))
        self._ddl(render_index_additions(qualified))
        self._ensure_path_registry(database, row.name)

    def _names(self, system_table: str, database: str, table: str) -> list[str]:
        """``name`` of the rows of ``system.<system_table>`` (columns, indexes) for one table."""
        try:
            found = self.backend.query_arrow(
                f"SELECT name FROM system.{system_table} WHERE database = "
                f"{quote_string(database)} AND table = {quote_string(table)}",
                settings=None,
            ).column(0)
        except EngineError as exc:
            raise StorageError(exc.message) from exc
        return [name.as_py() for name in found]

    def _ensure_path_registry(self, database: str, table: str) -> None:
        """The table's JSON path registry and its views (``json_paths.py``).

        A registry created for a table that already holds rows is filled from them once; one
        from an older bzrk (without every column of ``json_paths.REGISTRY_COLUMNS``) is
        dropped and built again the same way.
        """
        columns = set(self._names("columns", database, json_paths.registry_name(table)))
        current = columns >= set(json_paths.REGISTRY_COLUMNS)
        if columns and not current:
            for statement in json_paths.render_drop(database, table):
                self._ddl(statement)
        for statement in json_paths.render_registry(database, table):
            self._ddl(statement)
        if not current:
            for statement in json_paths.render_backfill(database, table):
                self._ddl(statement)

    def sync(self) -> None:
        """Create the ClickHouse objects of every table in the metadata store (idempotent)."""
        self.meta.ensure_database(DEFAULT_DATABASE)
        self.meta.ensure_table(DEFAULT_DATABASE, DEFAULT_TABLE)
        for row in self.meta.list_tables():
            self._create_ch_table(row)

    def _forget(self) -> None:
        with self._lock:
            self._resolved.clear()
            self._databases.clear()

    # -- databases ---------------------------------------------------------------------------
    def create_database(self, name: str) -> DatabaseInfo:
        check_name("database", name)
        row = self.meta.create_database(name)
        self._ddl(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(self.naming.database(name))}")
        return DatabaseInfo(row.id, row.name)

    def drop_database(self, name: str) -> None:
        row = self.meta.get_database(name)
        if row.name == DEFAULT_DATABASE:
            raise SchemaError("the default database cannot be dropped")
        self.meta.drop_database(row.name)
        self._forget()
        self._ddl(
            f"DROP DATABASE IF EXISTS {quote_identifier(self.naming.database(row.name))} SYNC"
        )

    # -- tables ------------------------------------------------------------------------------
    def create_table(
        self,
        database: str,
        name: str,
        *,
        retention_days: int | None = None,
        shard_fields: dict[str, int] | None = None,
    ) -> TableInfo:
        check_name("table", name)
        TableLayout(  # validate before anything is written
            shard_fields=dict(shard_fields or DEFAULT_SHARD_FIELDS), retention_days=retention_days
        )
        row = self.meta.create_table(
            database, name, retention_days=retention_days, shard_fields=shard_fields
        )
        try:
            self._create_ch_table(row)
        except StorageError:
            self.meta.drop_table(row.database, row.name)
            raise
        return self._table_info(row)

    def drop_table(self, database: str, name: str) -> None:
        row = self.meta.get_table(database, name)
        if (row.database, row.name) == (DEFAULT_DATABASE, DEFAULT_TABLE):
            raise SchemaError("the default table cannot be dropped")
        self.meta.drop_table(row.database, row.name)
        self._forget()
        for statement in json_paths.render_drop(self.naming.database(row.database), row.name):
            self._ddl(statement)
        self._ddl(f"DROP TABLE IF EXISTS {self.naming.qualified(row.database, row.name)} SYNC")

    def set_retention(self, database: str, name: str, retention_days: int | None) -> TableInfo:
        """Change a table's retention (TTL); ClickHouse applies it to existing parts too."""
        row = self.meta.get_table(database, name)
        layout = TableLayout(shard_fields=_layout(row).shard_fields, retention_days=retention_days)
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(meta_schema.tables)
                .where(meta_schema.tables.c.id == row.id)
                .values(retention_days=retention_days)
            )
        self._forget()
        self._ddl(render_ttl_change(self.naming.qualified(row.database, row.name), layout))
        return self._table_info(self.meta.get_table(database, name))

    def shard_fields(self, database: str, name: str) -> dict[str, int]:
        """The table's shard fields (Berserk's defaults for a table created without any)."""
        return _layout(self.meta.get_table(database, name)).shard_fields

    def set_shard_fields(self, database: str, name: str, shard_fields: dict[str, int]) -> TableInfo:
        """Replace a table's shard fields (``{}`` clears them); they shape data written from now on.

        As in Berserk, the layout of stored data stays: the sorting key is the one the table was
        created with, and each shard field's bloom filter covers parts written (or merged) after
        the change. A field no longer listed loses its filter.
        """
        row = self.meta.get_table(database, name)
        layout = TableLayout(shard_fields=dict(shard_fields), retention_days=row.retention_days)
        qualified = self.naming.qualified(row.database, row.name)
        present = [
            index
            for index in self._names(
                "data_skipping_indices", self.naming.database(row.database), row.name
            )
            if index.startswith("idx_shard_")
        ]
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(meta_schema.tables)
                .where(meta_schema.tables.c.id == row.id)
                .values(shard_fields=dict(shard_fields))
            )
        self._forget()
        for old in present:
            self._ddl(f"ALTER TABLE {qualified} DROP INDEX IF EXISTS {quote_identifier(old)}")
        for index in layout.skip_indexes(sorted_by=_layout(row).sort_field):
            if index.name.startswith("idx_shard_"):
                self._ddl(f"ALTER TABLE {qualified} ADD {index.ddl()}")
        return self._table_info(self.meta.get_table(database, name))

    def resolve(self, database: str, table: str) -> ResolvedTable:
        """The ClickHouse table of bzrk ``database``.``table`` (names or ids); cached briefly.

        Raises :class:`bzrk.meta.store.NotFound` for an unknown database or table.
        """
        key = (database, table)
        now = time.monotonic()
        with self._lock:
            hit = self._resolved.get(key)
        if hit is not None and now - hit[0] < _RESOLVE_TTL_S:
            return hit[1]
        row = self.meta.get_table(database, table)
        resolved = ResolvedTable(
            row.id,
            row.database,
            row.name,
            self.naming.qualified(row.database, row.name),
            row.retention_days,
            self.naming.database(row.database),
            row.name,
            tuple((c.name, c.kql_type) for c in COLUMNS),
            f"{quote_identifier(self.naming.database(row.database))}."
            f"{quote_identifier(json_paths.registry_name(row.name))}",
            tuple(ABSENCE.items()),
            tuple(COMPUTED.items()),
            tuple(DISTINCT_PARTS.items()),
        )
        with self._lock:
            self._resolved[key] = (now, resolved)
        return resolved

    def has_database(self, database: str) -> bool:
        """Whether ``database`` (name or id) exists (a yes is cached briefly, as tables are)."""
        return self.database_name(database) is not None

    def database_name(self, database: str) -> str | None:
        """The name of ``database`` (given by name or id); None when there is no such one."""
        now = time.monotonic()
        with self._lock:
            seen = self._databases.get(database)
        if seen is not None and now - seen[0] < _RESOLVE_TTL_S:
            return seen[1]
        try:
            name = self.meta.get_database(database).name
        except NotFound:
            return None
        with self._lock:
            self._databases[database] = (now, name)
        return name

    def qualified_name(self, database: str, table: str) -> str:
        return self.resolve(database, table).qualified_name

    # -- SchemaProvider ----------------------------------------------------------------------
    def list_databases(self) -> list[DatabaseInfo]:
        tables: dict[str, list[str]] = {}
        for row in self.meta.list_tables():
            tables.setdefault(row.database_id, []).append(row.name)
        return [
            DatabaseInfo(db.id, db.name, tuple(tables.get(db.id, ())))
            for db in self.meta.list_databases()
        ]

    def list_tables(self, database: str) -> list[TableInfo]:
        return [self._table_info(row) for row in self.meta.list_tables(database)]

    @staticmethod
    def _table_info(row: TableRow) -> TableInfo:
        return TableInfo(
            row.id,
            row.database,
            row.name,
            tuple((c.name, c.kql_type) for c in COLUMNS),
            row.retention_days,
        )

    def discover_fields(
        self,
        database: str,
        table: str,
        *,
        since_ticks: int | None = None,
        until_ticks: int | None = None,
        name_filter: str | None = None,
        limit: int = 200,
    ) -> list[FieldInfo]:
        """Fields seen in a sample of up to 2,000 rows spread over the window, most frequent first.

        Top-level columns carry their declared type; bag paths (``attributes.http.route``)
        the KQL type of the values seen (``dynamic`` when mixed). ``name_filter`` is a
        case-insensitive substring of the path.
        """
        resolved = self.resolve(database, table)
        where = []
        if since_ticks is not None:
            where.append(f"timestamp >= fromUnixTimestamp64Nano(toInt64({int(since_ticks) * 100}))")
        if until_ticks is not None:
            where.append(f"timestamp < fromUnixTimestamp64Nano(toInt64({int(until_ticks) * 100}))")
        select = ", ".join(
            f"toJSONString({field_sql(c)}) AS {quote_identifier(c.name)}"
            if c.ch_type.startswith(("JSON", "Array(JSON"))
            else f"{field_sql(c)} AS {quote_identifier(c.name)}"
            for c in FIELDS
        )
        try:
            # Rows are stored in (service, time) order, so the first rows of the window would
            # all be one service's: sample evenly instead, 1 row in `stride` by a hash of the
            # timestamp (counting and filtering read only the timestamp column).
            window = " WHERE " + " AND ".join(where) if where else ""
            counted = self.backend.query_arrow(
                f"SELECT count() AS n FROM {resolved.qualified_name}{window}", settings=None
            )
            stride = max(1, int(counted.column("n")[0].as_py()) // _SAMPLE_ROWS)
            spread = [*where, f"cityHash64(timestamp) % {stride} = 0"] if stride > 1 else where
            sql = f"SELECT {select} FROM {resolved.qualified_name}"
            if spread:
                sql += " WHERE " + " AND ".join(spread)
            sql += f" LIMIT {_SAMPLE_ROWS}"
            sample = self.backend.query_arrow(sql, settings=None).to_pylist()
        except EngineError as exc:
            raise StorageError(exc.message) from exc
        fields = _profile(sample)
        if name_filter:
            needle = name_filter.lower()
            fields = [f for f in fields if needle in f.path.lower()]
        fields.sort(key=lambda f: (-f.frequency, f.path))
        return fields[:limit]


class _FieldStats:
    __slots__ = ("count", "distinct", "samples", "types")

    def __init__(self) -> None:
        self.count = 0
        self.types: set[str] = set()
        self.distinct: set[str] = set()
        self.samples: list[str] = []

    def add(self, value: Any, kql_type: str) -> None:
        self.count += 1
        self.types.add(kql_type)
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if len(self.distinct) < 10_000:
            self.distinct.add(text)
        if len(self.samples) < _MAX_SAMPLES and text not in self.samples:
            self.samples.append(text[:200])


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str):
        return "string"
    return "dynamic"


def _walk(prefix: str, value: Any, stats: dict[str, _FieldStats]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _walk(f"{prefix}.{key}", inner, stats)
        return
    if value is None:  # typed bag paths read back as null when a row lacks them
        return
    stats.setdefault(prefix, _FieldStats()).add(value, _value_type(value))


def _profile(sample: list[dict[str, Any]]) -> list[FieldInfo]:
    declared = {c.name: c.kql_type for c in COLUMNS}
    stats: dict[str, _FieldStats] = {}
    for row in sample:
        for name, value in row.items():
            if name in json_paths.BAG_COLUMNS:
                _walk(name, json.loads(value) if value else {}, stats)
                continue
            if value is None or value == [] or value == "[]":
                continue
            if isinstance(value, str) and name in ("events", "links"):
                value = json.loads(value)
            stats.setdefault(name, _FieldStats()).add(value, declared[name])
    total = max(len(sample), 1)
    result = []
    for path, st in stats.items():
        kql_type = declared.get(path) or (next(iter(st.types)) if len(st.types) == 1 else "dynamic")
        result.append(
            FieldInfo(path, kql_type, st.count / total, len(st.distinct), tuple(st.samples))
        )
    return result


def catalog_for(ctx: Any) -> StorageCatalog:
    """The process's catalogue in ``ctx.components["schema"]``, created on first use.

    ``ctx`` is a :class:`bzrk.server.context.AppContext` with an open backend.
    """
    catalog = ctx.components.get("schema")
    if catalog is None:
        if ctx.backend is None:
            raise RuntimeError("the storage catalogue needs a ClickHouse backend")
        catalog = StorageCatalog(ctx.backend, ctx.meta)
        ctx.components["schema"] = catalog
    return catalog
