"""What every service of one bzrk process shares: settings, stores, engine, keys, addresses.

Service factories take an :class:`AppContext` and return an ASGI app (or start a gRPC
server); they never open stores themselves, so ``bzrk dev`` and ``bzrk serve`` compose the
same pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bzrk.auth.internal import InternalKeys
from bzrk.meta.store import MetaStore
from bzrk.server.settings import Settings

if TYPE_CHECKING:
    from bzrk.engine.backends.base import Backend
    from bzrk.engine.request import QueryExecutor

SERVICE_NAMES = ("gateway", "query", "ingest", "ui")


@dataclass
class AppContext:
    settings: Settings
    meta: MetaStore
    keys: InternalKeys
    backend: Backend | None = None
    executor: QueryExecutor | None = None
    # Actual bound addresses, e.g. {"gateway": "http://127.0.0.1:9500", "otlp_grpc": ...}.
    addresses: dict[str, str] = field(default_factory=dict)
    # Per-service readiness, flipped by the composition once a listener serves.
    ready: dict[str, bool] = field(default_factory=dict)
    # Components services register for each other (e.g. the ingest pipeline).
    components: dict[str, Any] = field(default_factory=dict)

    def all_ready(self) -> bool:
        return bool(self.ready) and all(self.ready.values())

    @property
    def public_url(self) -> str:
        return (self.settings.public_url or self.addresses.get("gateway", "")).rstrip("/")
