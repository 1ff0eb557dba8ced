"""What a caller asks the query service for, and the one interface every API talks to.

Every surface (gRPC, ADX REST, MCP, the Berserk HTTP API, the CLI through them) builds a
:class:`QueryRequest` and encodes the events that :meth:`QueryExecutor.execute` yields. No
surface reaches into the engine any other way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from bzrk.engine.events import Event


@dataclass(frozen=True, slots=True)
class ResultLimits:
    """Caps on what one result may hold; finite by default (no "unlimited")."""

    max_rows: int = 500_000
    max_bytes: int = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """One query execution request.

    Time strings (``since``/``until``/``ingest_*``) are the Berserk forms: ``"1h ago"``,
    ``"2d ago"``, ``"now"``, ``"today"``, ``"yesterday"``, dates and RFC 3339. ``until`` is
    exclusive and defaults to now. ``timeout_ms`` None means the surface's default.
    """

    query: str
    database: str  # name or id
    since: str | None = None
    until: str | None = None
    timezone: str = "UTC"
    ingest_since: str | None = None
    ingest_until: str | None = None
    timeout_ms: int | None = None
    stop_when: str | None = None
    limits: ResultLimits = field(default_factory=ResultLimits)
    bypass_cache: bool = False
    # Whether to stream intermediate snapshots (False: one final snapshot only).
    progressive: bool = True
    # Query parameters for `declare query_parameters(...)`: name -> KQL literal text or value.
    parameters: Mapping[str, Any] = field(default_factory=dict)
    # Who asked (the identity subject from the gateway-signed token), for runs and audit.
    principal: str = ""
    # Which surface asked ("grpc", "adx", "mcp", "http", "ui"), for runs and defaults.
    surface: str = ""
    client_request_id: str = ""


class QueryExecutor(Protocol):
    """The query service as the API surfaces see it."""

    def execute(self, request: QueryRequest) -> AsyncIterator[Event]:
        """Run ``request`` and yield its result stream. Closing the iterator cancels the run."""
        ...


@dataclass(frozen=True, slots=True)
class DatabaseInfo:
    id: str
    name: str
    tables: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TableInfo:
    id: str
    database: str
    name: str
    columns: tuple[tuple[str, str], ...] = ()  # (name, KQL type) of top-level columns
    retention_days: int | None = None


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """One discovered field: a top-level column or a path inside a bag (``attributes.http.route``)."""

    path: str
    type: str  # KQL type name; "dynamic" when mixed
    frequency: float  # share of sampled rows holding a non-null value, 0.0-1.0
    cardinality: int | None = None
    samples: tuple[str, ...] = ()


class SchemaProvider(Protocol):
    """Schema discovery for ``.show`` commands, ``getschema``, MCP discovery tools and the UI.

    Implemented by :mod:`bzrk.storage` over the metadata store and ClickHouse; the composition
    puts it in ``AppContext.components["schema"]``. Methods are blocking (run in a thread).
    """

    def list_databases(self) -> list[DatabaseInfo]: ...

    def list_tables(self, database: str) -> list[TableInfo]: ...

    def discover_fields(
        self,
        database: str,
        table: str,
        *,
        since_ticks: int | None = None,
        until_ticks: int | None = None,
        name_filter: str | None = None,
        limit: int = 200,
    ) -> list[FieldInfo]: ...
