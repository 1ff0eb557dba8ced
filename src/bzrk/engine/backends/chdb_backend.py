"""Embedded ClickHouse (chDB): one data path per process.

chDB refuses a second data path in the same process (even ``:memory:``) and a second process
on the same path, so the process that owns the store owns this backend. The Python API cannot
set a query id, so every SELECT carries a marker comment that :meth:`ChdbBackend.kill` finds
in ``system.processes``.

Queries are read-only, enforced by ClickHouse rather than by the compiler alone: each query
runs on a connection opened with ``readonly=1`` and bzrk's settings in its connection string
(``path?readonly=1&max_execution_time=…``). In that mode ClickHouse refuses every write and
every change of a setting, so query text cannot change ``readonly`` or any limit bzrk set (a
``SETTINGS`` clause the compiler never writes is refused as a change). Such connections are
kept per thread and per set of settings (see :meth:`ChdbBackend._readonly_kept`); streams get
one of their own. Writes (DDL, inserts) go through :meth:`ChdbBackend.execute` and
:meth:`ChdbBackend.insert_arrow` on ordinary connections, one per thread.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import chdb
import pyarrow as pa

from bzrk.engine.backends.base import QuerySettings, ScanStats
from bzrk.engine.errors import BackendError, map_backend_errors

_QID_MARKER = "bzrk_qid:"
# Rows per block of a streamed result: chDB buffers a fixed number of blocks ahead of the reader.
STREAM_BLOCK_ROWS = 8192

_open_path: str | None = None
_open_lock = threading.Lock()


# Read-only connections kept per thread, each for one set of settings (least recent go first).
KEPT_READONLY_CONNECTIONS = 4
# Idle connections kept for streamed results, per set of settings (a stream holds one alone).
KEPT_STREAM_CONNECTIONS = 4
_SETTING_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_SETTING_VALUE = re.compile(r"^[A-Za-z0-9_.\-]*$")
READONLY = 164  # ClickHouse's READONLY error code
READONLY_MESSAGE = "the query tried to write data or to change a setting, and queries run read-only"


def _readonly_url(path: str, settings: QuerySettings | None, extra: dict[str, Any]) -> str:
    """The connection string of a read-only query connection with bzrk's own settings."""
    pairs: dict[str, Any] = {**(settings.as_clickhouse() if settings else {}), **extra}
    parts = ["readonly=1"]
    for key, value in pairs.items():
        text = str(int(value)) if isinstance(value, bool) else str(value)
        if not _SETTING_NAME.match(key) or key == "readonly" or not _SETTING_VALUE.match(text):
            raise ValueError(f"bad setting {key!r}={value!r}")
        parts.append(f"{key}={quote(text)}")
    return f"{path}?{'&'.join(parts)}"


@contextlib.contextmanager
def _readonly_errors(query_id: str | None) -> Iterator[None]:
    """Backend errors, with ClickHouse's READONLY refusal told in bzrk's words."""
    try:
        with map_backend_errors(query_id):
            yield
    except BackendError as exc:
        # A streamed statement that is not a query (INSERT, ALTER…) is refused before readonly
        # is even consulted; to the caller it is the same refusal.
        not_a_query = exc.clickhouse_code == 36 and "Streaming query is not supported" in str(exc)
        if exc.clickhouse_code == READONLY or not_a_query:
            raise BackendError(
                READONLY_MESSAGE, clickhouse_code=READONLY, query_id=query_id
            ) from exc
        raise


def _settings_clause(settings: QuerySettings | None) -> str:
    if settings is None:
        return ""
    return _settings_text(settings.as_clickhouse())


def _settings_text(settings: Mapping[str, str | int | float]) -> str:
    parts = []
    for key, value in settings.items():
        if not key.replace("_", "").isalnum():
            raise ValueError(f"bad setting name {key!r}")
        if isinstance(value, str):
            escaped = value.replace("\\", "\\\\").replace("'", "\\'")
            parts.append(f"{key} = '{escaped}'")
        else:
            parts.append(f"{key} = {value}")
    return " SETTINGS " + ", ".join(parts) if parts else ""


def _tag(sql: str, query_id: str | None) -> str:
    if not query_id:
        return sql
    if not all(c.isalnum() or c in "-_" for c in query_id):
        raise ValueError("query ids are alphanumeric")
    return f"/* {_QID_MARKER}{query_id} */ {sql}"


class ChdbBackend:
    """The embedded backend over one chDB data directory."""

    name = "chdb"
    # stream_arrow really streams (one block in memory) and reports per-block scan figures.
    streams_results = True

    def __init__(self, path: str | Path) -> None:
        global _open_path
        resolved = str(Path(path).resolve())
        with _open_lock:
            if _open_path is not None and _open_path != resolved:
                raise RuntimeError(
                    f"chDB already holds {_open_path!r} in this process; "
                    f"cannot open a second store {resolved!r}"
                )
            Path(resolved).mkdir(parents=True, exist_ok=True)
            _open_path = resolved
        self.path = resolved
        # Counts the statements that may have written (inserts, DDL, anything run by
        # ``execute``; queries run read-only). No other process opens the store, so an
        # unchanged count means unchanged data: what a cache of small reads keys on.
        self.write_generation = 0
        self._local = threading.local()
        self._connections: list[chdb.Connection] = []
        self._connections_lock = threading.Lock()
        # Connections a finished stream left, by connection string (guarded by the lock above).
        self._idle_streams: dict[str, list[chdb.Connection]] = {}

    def _conn(self) -> chdb.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = chdb.connect(self.path)
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    def _run(self, sql: str, fmt: str, query_id: str | None) -> Any:
        conn = self._conn()
        with map_backend_errors(query_id):
            try:
                return conn.query(sql, fmt)
            except Exception:
                # chDB 4.4 leaves the failed query's bytes in the connection, and the next
                # Arrow result on it is corrupt ("Invalid flatbuffers message"); a throwaway
                # text-format query drains it.
                try:
                    conn.query("SELECT 1", "CSV")
                except Exception:
                    self._drop_connection(conn)
                raise

    def _drop_connection(self, conn: chdb.Connection) -> None:
        self._local.conn = None
        with self._connections_lock:
            if conn in self._connections:
                self._connections.remove(conn)
        with contextlib.suppress(Exception):  # already broken; the next call opens a fresh one
            conn.close()

    def execute(self, sql: str, *, settings: QuerySettings | None = None) -> None:
        try:
            self._run(sql + _settings_clause(settings), "CSV", None)
        finally:
            self.write_generation += 1

    @property
    def open_connections(self) -> int:
        """How many chDB connections the backend holds open (kept, idle or in use)."""
        with self._connections_lock:
            return len(self._connections)

    def _stream_connection(self, url: str) -> chdb.Connection:
        """An idle connection a finished stream left with exactly these settings, or a new one.

        A stream holds its connection until it ends, from whichever thread pulls it, so it
        cannot use the per-thread ones; opening one costs ~0.3 ms, a fast query's share."""
        with self._connections_lock:
            idle = self._idle_streams.get(url)
            if idle:
                return idle.pop()
        conn = chdb.connect(url)
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def _stream_done(self, url: str, conn: chdb.Connection, clean: bool) -> None:
        """Keep the connection of a stream read to its end without error; close any other (a
        stopped or failed query can leave bytes in it)."""
        if clean:
            with self._connections_lock:
                idle = self._idle_streams.setdefault(url, [])
                if len(idle) < KEPT_STREAM_CONNECTIONS and conn in self._connections:
                    idle.append(conn)
                    return
        self._forget(conn)

    @contextlib.contextmanager
    def _readonly_kept(self, settings: QuerySettings | None) -> Iterator[chdb.Connection]:
        """A read-only connection with exactly these settings, kept per thread for reuse.

        Reuse is safe because a ``readonly=1`` session cannot change: ``SET`` and temporary
        tables are refused in it, so it answers the next query exactly as configured. Opening
        one costs ~0.3-0.5 ms on this machine, a reused one nothing; queries with the same
        settings reuse theirs (the query service gives ClickHouse's time limit in whole seconds
        for that). A connection that saw an error is closed (chDB 4.4 leaves a failed query's
        bytes in it).
        """
        url = _readonly_url(self.path, settings, {})
        kept: OrderedDict[str, chdb.Connection] | None = getattr(self._local, "readonly", None)
        if kept is None:
            kept = self._local.readonly = OrderedDict()
        conn = kept.pop(url, None)
        if conn is None:
            conn = chdb.connect(url)
            with self._connections_lock:
                self._connections.append(conn)
        try:
            yield conn
        except BaseException:
            self._forget(conn)
            raise
        kept[url] = conn
        while len(kept) > KEPT_READONLY_CONNECTIONS:
            self._forget(kept.popitem(last=False)[1])

    def _forget(self, conn: chdb.Connection) -> None:
        with self._connections_lock:
            if conn in self._connections:
                self._connections.remove(conn)
        with contextlib.suppress(Exception):  # broken or evicted: the next query opens another
            conn.close()

    def query_arrow(
        self, sql: str, *, settings: QuerySettings | None = None, query_id: str | None = None
    ) -> pa.Table:
        with self._readonly_kept(settings) as conn, _readonly_errors(query_id):
            result: pa.Table = conn.query(_tag(sql, query_id), "ArrowTable")
        return result

    def query_arrow_stats(
        self, sql: str, *, settings: QuerySettings | None = None, query_id: str | None = None
    ) -> tuple[pa.Table, ScanStats]:
        """Like :meth:`query_arrow`, plus what the query read from storage."""
        with self._readonly_kept(settings) as conn, _readonly_errors(query_id):
            result = conn.query(_tag(sql, query_id), "Arrow")
            payload = result.bytes()
            stats = ScanStats(
                rows_read=int(result.storage_rows_read()),
                bytes_read=int(result.storage_bytes_read()),
                elapsed_ns=int(result.elapsed() * 1e9),
            )
        table = pa.ipc.open_file(pa.py_buffer(payload)).read_all()
        return table, stats

    def stream_arrow(
        self,
        sql: str,
        *,
        settings: QuerySettings | None = None,
        query_id: str | None = None,
        stats: list[ScanStats] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Yield the result as ClickHouse produces it, block by block, on a connection of its own.

        With ``stats``, what each block cost in storage reads is appended to it.

        chDB's streaming cursor holds its connection until the stream ends, so the stream gets a
        (read-only) connection of its own, and the caller may pull blocks from any thread; one
        read to its end is kept for the next stream with the same settings, any other closed.
        The first block arrives before the query ends, and closing early stops the query; chDB 4.4 does not apply back-pressure, though: it keeps producing blocks
        ahead of a slow reader. What it holds ahead is a fixed number of blocks, so the stream
        reads with small blocks (``STREAM_BLOCK_ROWS``) unless the settings name
        ``max_block_size``. Measured with 650-byte rows: peak RSS grows ~80 MB at 8,192-row
        blocks whether the result is 210 MB or 860 MB, against ~300 MB at 32,768 and ~480 MB at
        the default 65,409. An aggregation's scan is slower in small blocks (20–25 % on the bench's
        group-bys), so the query service names ClickHouse's block size for a grouped result
        (``service.GROUPED_BLOCK_ROWS``).
        """
        named = settings is not None and "max_block_size" in settings.extra
        extra = {} if named else {"max_block_size": STREAM_BLOCK_ROWS}
        url = _readonly_url(self.path, settings, extra)
        conn = self._stream_connection(url)
        clean = False
        try:
            with _readonly_errors(query_id):
                stream = conn.send_query(_tag(sql, query_id), "Arrow")
            try:
                while True:
                    with _readonly_errors(query_id):
                        chunk = stream.fetch()
                    payload = chunk.bytes() if chunk is not None else b""
                    if stats is not None and chunk is not None:
                        stats.append(
                            ScanStats(
                                int(chunk.storage_rows_read()), int(chunk.storage_bytes_read())
                            )
                        )
                    if not payload:
                        clean = True
                        break
                    yield from pa.ipc.open_file(pa.py_buffer(payload)).read_all().to_batches()
            finally:
                try:
                    stream.close()
                except Exception:  # closing is best effort; the connection is not kept
                    clean = False
        finally:
            self._stream_done(url, conn, clean)

    def insert_arrow(
        self, table: str, data: pa.Table, *, settings: Mapping[str, int] | None = None
    ) -> None:
        """``INSERT … SELECT`` from ``data`` through chDB's ``Python()`` table function.

        chDB reads the Arrow table in place (no IPC copy, ~25 % less time than
        ``send_insert`` of an Arrow stream on an ingest batch), and the INSERT's ``settings``
        govern how text becomes a JSON bag: ``send_insert``'s Arrow input casts text to JSON
        with ClickHouse's default input settings whatever the query or session sets, so a
        string attribute "2024-01-01" was stored as a ``Date``.
        """
        bzrk_insert_rows = data  # noqa: F841 (read by name by chDB's Python() table function)
        columns = ", ".join(f"`{name}`" for name in data.column_names)
        sql = (
            f"INSERT INTO {table} ({columns}) SELECT {columns} "
            f"FROM Python(bzrk_insert_rows){_settings_text(settings or {})}"
        )
        with map_backend_errors(None):
            conn = self._conn()
            try:
                conn.query(sql)
            finally:
                self.write_generation += 1

    def kill(self, query_id: str) -> None:
        if not all(c.isalnum() or c in "-_" for c in query_id):
            raise ValueError("query ids are alphanumeric")
        # A fresh connection: the one running the query is busy.
        conn = chdb.connect(self.path)
        try:
            conn.query(
                f"KILL QUERY WHERE query LIKE '%{_QID_MARKER}{query_id}%' "
                "AND query NOT LIKE '%KILL QUERY%' SYNC"
            )
        finally:
            conn.close()

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                # Closing is best effort at shutdown.
                with contextlib.suppress(Exception):
                    conn.close()
            self._connections.clear()
            self._idle_streams.clear()
