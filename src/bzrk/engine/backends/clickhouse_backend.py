"""A ClickHouse server or cluster through clickhouse-connect: the scale-out backend.

Same interface as :class:`bzrk.engine.backends.chdb_backend.ChdbBackend`; per-query settings
travel as HTTP settings and every query gets a real ClickHouse ``query_id``, so
:meth:`ClickHouseBackend.kill` is an exact ``KILL QUERY WHERE query_id = …``.

Queries (``query_arrow``, ``stream_arrow``) carry ``readonly=2``: the server refuses writes and
any change of ``readonly`` while bzrk's own per-query settings still apply. Unlike chDB's
``readonly=1`` connections this does not stop query text from changing *other* settings; a
deployment that wants that gives bzrk's ClickHouse user a profile with ``readonly=1`` and
``changeable_in_readonly`` constraints on bzrk's settings (docs/auth.md shows one). This
backend is not exercised against a server in this repository's tests.
"""

from __future__ import annotations

import io
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from bzrk.engine.backends.arrow_input import input_structure
from bzrk.engine.backends.base import QuerySettings
from bzrk.engine.errors import BackendUnavailable, map_backend_errors
from bzrk.engine.sql import quote_identifier, quote_string

# Reads only, readonly itself fixed; other settings stay changeable (bzrk sends its own).
READONLY_QUERIES = 2


class ClickHouseBackend:
    """The backend over a ClickHouse server (HTTP interface, default port 8123)."""

    name = "clickhouse"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8123,
        *,
        username: str = "default",
        password: str = "",
        database: str = "default",
        secure: bool = False,
        connect_timeout_s: float = 5.0,
    ) -> None:
        self._params: dict[str, Any] = {
            "host": host,
            "port": port,
            "username": username,
            "password": password,
            "database": database,
            "secure": secure,
            "connect_timeout": connect_timeout_s,
        }
        self._local = threading.local()
        self._clients: list[Any] = []
        self._lock = threading.Lock()
        self._client()  # fail fast when the server is unreachable

    def _client(self) -> Any:
        # clickhouse-connect clients are not safe to share between threads running queries.
        client = getattr(self._local, "client", None)
        if client is None:
            import clickhouse_connect

            try:
                client = clickhouse_connect.get_client(**self._params)
            except Exception as exc:
                raise BackendUnavailable(f"cannot reach ClickHouse: {exc}") from exc
            self._local.client = client
            with self._lock:
                self._clients.append(client)
        return client

    @staticmethod
    def _settings(settings: QuerySettings | None) -> dict[str, Any]:
        return dict((settings or QuerySettings()).as_clickhouse())

    @classmethod
    def _query_settings(
        cls, settings: QuerySettings | None, query_id: str | None
    ) -> dict[str, Any]:
        values = cls._settings(settings)
        values["readonly"] = READONLY_QUERIES
        values["query_id"] = query_id or uuid.uuid4().hex
        return values

    def execute(self, sql: str, *, settings: QuerySettings | None = None) -> None:
        with map_backend_errors(None):
            self._client().command(sql, settings=self._settings(settings))

    def query_arrow(
        self, sql: str, *, settings: QuerySettings | None = None, query_id: str | None = None
    ) -> pa.Table:
        query_settings = self._query_settings(settings, query_id)
        with map_backend_errors(query_id):
            return self._client().query_arrow(sql, settings=query_settings)

    def stream_arrow(
        self, sql: str, *, settings: QuerySettings | None = None, query_id: str | None = None
    ) -> Iterator[pa.RecordBatch]:
        query_settings = self._query_settings(settings, query_id)
        with map_backend_errors(query_id):
            stream = self._client().query_arrow_stream(sql, settings=query_settings)
            with stream:
                yield from stream

    def insert_arrow(
        self, table: str, data: pa.Table, *, settings: Mapping[str, int] | None = None
    ) -> None:
        """``INSERT … SELECT … FROM input(…) FORMAT ArrowStream`` with ``data`` as the body.

        Read through :func:`arrow_input.input_structure`, text reaches a JSON column by the
        SELECT's cast, which applies the INSERT's ``settings`` (the Arrow reader's own cast to
        JSON ignores them: a string "2024-01-01" would be stored as a ``Date``).
        """
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, data.schema) as writer:
            writer.write_table(data)
        columns = ", ".join(quote_identifier(name) for name in data.column_names)
        structure = quote_string(input_structure(data.schema))
        sql = (
            f"INSERT INTO {table} ({columns}) SELECT {columns} "
            f"FROM input({structure}) FORMAT ArrowStream"
        )
        with map_backend_errors(None):
            self._client().command(sql, data=sink.getvalue(), settings=dict(settings or {}))

    def kill(self, query_id: str) -> None:
        with map_backend_errors(query_id):
            # A separate client: the one running the query is busy in another thread.
            import clickhouse_connect

            client = clickhouse_connect.get_client(**self._params)
            try:
                client.command(f"KILL QUERY WHERE query_id = {quote_string(query_id)} SYNC")
            finally:
                client.close()

    def close(self) -> None:
        with self._lock:
            for client in self._clients:
                client.close()
            self._clients.clear()
