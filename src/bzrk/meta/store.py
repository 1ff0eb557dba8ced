"""Opening the metadata store, migrating it, and the catalogue of databases and tables."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from bzrk.meta import schema

DEFAULT_DATABASE = "default"
DEFAULT_TABLE = "default"


def new_id() -> str:
    """A time-ordered UUID (v7 layout) as text, like Berserk's database and table ids."""
    ms = int(datetime.now(UTC).timestamp() * 1000)
    rand = uuid.uuid4().int & ((1 << 74) - 1)
    value = (
        (ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    )
    return str(uuid.UUID(int=value))


def utcnow() -> datetime:
    return datetime.now(UTC)


def private_file(path: Path) -> None:
    """Make ``path`` exist with mode 0600 (it holds token and password hashes, CSRF secrets).

    SQLite gives its ``-wal`` and ``-shm`` files the mode of the database file, so they are
    private too once the file is.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if candidate.exists():
            candidate.chmod(0o600)


class MetaError(Exception):
    """A metadata operation failed (conflict, not found, store unreachable)."""


class NotFound(MetaError):
    pass


class Conflict(MetaError):
    pass


@dataclass(frozen=True, slots=True)
class DatabaseRow:
    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TableRow:
    id: str
    database_id: str
    database: str
    name: str
    retention_days: int | None
    shard_fields: dict[str, int] | None
    created_at: datetime


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class MetaStore:
    """The metadata store. Methods are blocking; async callers use ``asyncio.to_thread``."""

    def __init__(self, url: str) -> None:
        self.url = url
        if url.startswith("sqlite"):
            self.engine = sa.create_engine(url, connect_args={"check_same_thread": False})
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            self.engine = sa.create_engine(url, pool_pre_ping=True)

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> MetaStore:
        path = (data_dir / "meta.sqlite3").resolve()
        private_file(path)
        return cls(f"sqlite:///{path}")

    # -- lifecycle -------------------------------------------------------------------------
    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision`` (the newest), then seed ``default``/``default``."""
        config = Config()
        config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        with self.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, revision)
        self.ensure_database(DEFAULT_DATABASE)
        self.ensure_table(DEFAULT_DATABASE, DEFAULT_TABLE)

    def current_revision(self) -> str | None:
        with self.engine.connect() as conn:
            try:
                return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
            except sa.exc.DBAPIError:
                return None

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def begin(self) -> Iterator[sa.Connection]:
        with self.engine.begin() as conn:
            yield conn

    # -- databases -------------------------------------------------------------------------
    def list_databases(self) -> list[DatabaseRow]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(schema.databases).order_by(schema.databases.c.name))
            return [DatabaseRow(r.id, r.name, r.created_at) for r in rows]

    def get_database(self, name_or_id: str) -> DatabaseRow:
        t = schema.databases
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(t).where(sa.or_(t.c.name == name_or_id, t.c.id == name_or_id))
            ).first()
        if row is None:
            raise NotFound(f"database '{name_or_id}' not found")
        return DatabaseRow(row.id, row.name, row.created_at)

    def ensure_database(self, name: str) -> DatabaseRow:
        try:
            return self.get_database(name)
        except NotFound:
            return self.create_database(name)

    def create_database(self, name: str) -> DatabaseRow:
        row = DatabaseRow(new_id(), name, utcnow())
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    sa.insert(schema.databases).values(
                        id=row.id, name=name, created_at=row.created_at
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise Conflict(f"database '{name}' already exists") from exc
        return row

    def drop_database(self, name: str) -> None:
        db = self.get_database(name)
        with self.engine.begin() as conn:
            conn.execute(sa.delete(schema.tables).where(schema.tables.c.database_id == db.id))
            conn.execute(sa.delete(schema.databases).where(schema.databases.c.id == db.id))

    # -- tables ----------------------------------------------------------------------------
    def _table_query(self) -> sa.Select:
        t, d = schema.tables, schema.databases
        return sa.select(t, d.c.name.label("database")).join(d, d.c.id == t.c.database_id)

    @staticmethod
    def _table_row(r: sa.Row) -> TableRow:
        return TableRow(
            r.id, r.database_id, r.database, r.name, r.retention_days, r.shard_fields, r.created_at
        )

    def list_tables(self, database: str | None = None) -> list[TableRow]:
        query = self._table_query().order_by(schema.databases.c.name, schema.tables.c.name)
        if database is not None:
            db = self.get_database(database)
            query = query.where(schema.tables.c.database_id == db.id)
        with self.engine.connect() as conn:
            return [self._table_row(r) for r in conn.execute(query)]

    def get_table(self, database: str, name_or_id: str) -> TableRow:
        db = self.get_database(database)
        t = schema.tables
        query = self._table_query().where(
            t.c.database_id == db.id, sa.or_(t.c.name == name_or_id, t.c.id == name_or_id)
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise NotFound(f"table '{name_or_id}' not found in database '{db.name}'")
        return self._table_row(row)

    def get_table_by_id(self, table_id: str) -> TableRow:
        query = self._table_query().where(schema.tables.c.id == table_id)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise NotFound(f"table id '{table_id}' not found")
        return self._table_row(row)

    def ensure_table(self, database: str, name: str) -> TableRow:
        try:
            return self.get_table(database, name)
        except NotFound:
            return self.create_table(database, name)

    def create_table(
        self,
        database: str,
        name: str,
        *,
        retention_days: int | None = None,
        shard_fields: dict[str, int] | None = None,
    ) -> TableRow:
        db = self.get_database(database)
        table_id, now = new_id(), utcnow()
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    sa.insert(schema.tables).values(
                        id=table_id,
                        database_id=db.id,
                        name=name,
                        retention_days=retention_days,
                        shard_fields=shard_fields,
                        created_at=now,
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise Conflict(f"table '{name}' already exists in database '{db.name}'") from exc
        return TableRow(table_id, db.id, db.name, name, retention_days, shard_fields, now)

    def drop_table(self, database: str, name: str) -> None:
        table = self.get_table(database, name)
        with self.engine.begin() as conn:
            conn.execute(sa.delete(schema.tables).where(schema.tables.c.id == table.id))
