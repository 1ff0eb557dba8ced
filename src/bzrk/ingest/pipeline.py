"""The one path from a decoded request to durable rows: token check, admission, routing, batching.

The three receivers (OTLP/gRPC, OTLP/HTTP, Loki) decode and map; everything after that is
here, so no receiver has a private way to storage.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from bzrk.auth.accounts import IngestTokenInfo, resolve_ingest_token
from bzrk.ingest import metrics
from bzrk.ingest.batcher import Batching, TableBatcher
from bzrk.ingest.errors import BadRequest, Overloaded, Unauthenticated, Unavailable
from bzrk.ingest.otlp import Mapped
from bzrk.meta.store import MetaError, MetaStore, NotFound
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.writer import concat_for_insert, write_arrow

log = logging.getLogger("bzrk.ingest")

_TOKEN_TTL_S = 5.0
_NEGATIVE_TOKEN_TTL_S = 1.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one request achieved: rows written and records rejected (partial success)."""

    accepted: int
    rejected: int
    message: str


def token_from_authorization(authorization: str | None) -> str:
    """The ingest token of an ``Authorization`` header: ``Bearer <token>``, or HTTP Basic with
    the token as the password (as Promtail, Grafana Alloy and Loki logging libraries send it:
    ``<tenant or user>:<token>``); :class:`Unauthenticated` otherwise."""
    if not authorization:
        raise Unauthenticated(
            "missing ingest token: send 'Authorization: Bearer ing_…' "
            "(or HTTP Basic auth with the ingest token as the password)"
        )
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return value
    if scheme.lower() == "basic" and value:
        try:
            _user, colon, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise Unauthenticated(
                "the Basic credentials are not base64 of 'user:password'"
            ) from exc
        if colon and password.strip():
            return password.strip()
        raise Unauthenticated("HTTP Basic auth needs the ingest token as the password")
    raise Unauthenticated(
        "the Authorization header must be 'Bearer ing_…' or HTTP Basic with the ingest token "
        "as the password"
    )


class TokenCache:
    """Ingest-token lookups, cached briefly so a hot client costs no metadata query."""

    def __init__(self, meta: MetaStore) -> None:
        self._meta = meta
        self._entries: dict[str, tuple[float, IngestTokenInfo | None]] = {}

    def invalidate(self) -> None:
        self._entries.clear()

    async def resolve(self, authorization: str | None) -> IngestTokenInfo:
        value = token_from_authorization(authorization)
        now = time.monotonic()
        hit = self._entries.get(value)
        if hit is None or hit[0] < now:
            try:
                info: IngestTokenInfo | None = await asyncio.to_thread(
                    resolve_ingest_token, self._meta, value
                )
            except NotFound:
                info = None
            ttl = _TOKEN_TTL_S if info is not None else _NEGATIVE_TOKEN_TTL_S
            if len(self._entries) > 10_000:
                self._entries.clear()
            self._entries[value] = (now + ttl, info)
            hit = self._entries[value]
        if hit[1] is None:
            raise Unauthenticated("unknown or revoked ingest token")
        return hit[1]


class Admission:
    """A budget of bytes in flight; past it requests are refused (429), not buffered.

    A request holds a :class:`Hold` from before its body is read (sized by Content-Length)
    until it is answered, and grows it as the decoded body turns out larger. A request alone
    is always admitted, so one body under the size limit can never be refused forever.

    It also counts the requests still on their way to a batch (``arriving``: admitted, their
    rows not yet handed to a batcher), which the batchers wait for before writing early.
    """

    def __init__(self, limit_bytes: int, on_arrived: Callable[[], None] = lambda: None) -> None:
        self.limit_bytes = limit_bytes
        metrics.INFLIGHT_BYTES_LIMIT.set(limit_bytes)
        self.inflight_bytes = 0
        self.rejections = 0
        self.arriving = 0
        # Called when the last request on its way has reached its batch (or failed).
        self._on_arrived = on_arrived

    def _take(self, nbytes: int, held: int) -> None:
        others = self.inflight_bytes - held
        if nbytes > 0 and others > 0 and self.inflight_bytes + nbytes > self.limit_bytes:
            self.rejections += 1
            metrics.QUEUE_REJECTIONS.inc()
            raise Overloaded(
                f"ingest is at its in-flight budget ({self.limit_bytes} bytes); retry later"
            )
        self.inflight_bytes += nbytes
        metrics.INFLIGHT_BYTES.set(self.inflight_bytes)

    @contextlib.asynccontextmanager
    async def hold(self, initial_bytes: int = 0) -> AsyncIterator[Hold]:
        hold = Hold(self)
        hold.grow_to(initial_bytes)
        self.arriving += 1
        try:
            yield hold
        finally:
            hold.arrived()
            self.inflight_bytes -= hold.bytes
            metrics.INFLIGHT_BYTES.set(self.inflight_bytes)

    @contextlib.asynccontextmanager
    async def admit(self, nbytes: int) -> AsyncIterator[Hold]:
        async with self.hold(nbytes) as hold:
            yield hold

    def _arrived(self) -> None:
        self.arriving -= 1
        if self.arriving == 0:
            self._on_arrived()


class Hold:
    """One request's share of the in-flight budget."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission
        self.bytes = 0
        self._arriving = True

    def arrived(self) -> None:
        """The request's rows are in their batches (or never will be): stop counting it as
        on its way. Idempotent."""
        if self._arriving:
            self._arriving = False
            self._admission._arrived()

    def grow_to(self, nbytes: int) -> None:
        """Hold at least ``nbytes``; :class:`Overloaded` if the budget cannot cover it."""
        extra = nbytes - self.bytes
        if extra > 0:
            self._admission._take(extra, self.bytes)
            self.bytes += extra


class IngestPipeline:
    """Shared by every receiver of one process; lives in ``ctx.components["ingest"]``."""

    def __init__(
        self,
        catalog: StorageCatalog,
        meta: MetaStore,
        *,
        batching: Batching,
        max_inflight_bytes: int,
        max_body_bytes: int,
    ) -> None:
        self.catalog = catalog
        self.tokens = TokenCache(meta)
        self.admission = Admission(max_inflight_bytes, on_arrived=self._wake_batchers)
        self.batching = batching
        self.max_body_bytes = max_body_bytes
        self._batchers: dict[str, TableBatcher] = {}
        # Decoding and mapping requests is Python holding the GIL: one thread for all of
        # them, off the event loop. Several such threads contend for the GIL (pyarrow drops
        # and retakes it while converting): 4.8 µs a log record on one thread, 7.6 on four.
        self._decoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bzrk-ingest-decode")

    async def decode(self, fn: Callable[..., Mapped], *args: Any) -> Mapped:
        """``fn(*args)`` (a request body → its rows) on the pipeline's decoding thread."""
        return await asyncio.get_running_loop().run_in_executor(self._decoder, fn, *args)

    def _write(self, qualified_table: str, table: pa.Table) -> int:
        with metrics.BATCH_FLUSH_SECONDS.time():
            try:
                written = write_arrow(self.catalog.backend, qualified_table, table)
            except Exception:
                metrics.WRITE_FAILURES.inc()
                raise
        metrics.BATCH_ROWS.observe(written)
        return written

    def _expecting(self) -> bool:
        return self.admission.arriving > 0

    def _wake_batchers(self) -> None:
        for batcher in self._batchers.values():
            batcher.wake()

    def _batcher(self, qualified_table: str) -> TableBatcher:
        batcher = self._batchers.get(qualified_table)
        if batcher is None:
            batcher = TableBatcher(
                qualified_table,
                self._write,
                self.batching,
                combine=concat_for_insert,
                expecting=self._expecting,
            )
            self._batchers[qualified_table] = batcher
        return batcher

    async def _target(self, token: IngestTokenInfo, route: str | None) -> str:
        name = route or token.table
        try:
            resolved = await asyncio.to_thread(self.catalog.resolve, token.database, name)
        except NotFound as exc:
            raise BadRequest(
                f"table '{name}' (from resource attribute bzrk.table) does not exist in "
                f"database '{token.database}'"
            ) from exc
        except (MetaError, ValueError) as exc:
            raise BadRequest(f"cannot route to table '{name}': {exc}") from exc
        return resolved.qualified_name

    async def write(
        self, token: IngestTokenInfo, mapped: Mapped, signal: str, hold: Hold | None = None
    ) -> Outcome:
        """Write ``mapped`` durably; reject (400) when no record at all can be stored.

        ``hold`` is the request's admission hold: once its rows are in their batches it no
        longer counts as on its way, so a batch need not wait for it.
        """
        targets: list[tuple[str, pa.Table]] = []
        for route, table in mapped.batches():
            try:
                targets.append((await self._target(token, route), table))
            except BadRequest as exc:
                mapped.reject(table.num_rows, exc.message)
        accepted = sum(table.num_rows for _, table in targets)
        if mapped.rejected:
            metrics.RECORDS.labels(signal, "rejected").inc(mapped.rejected)
        if accepted == 0 and mapped.rejected:
            raise BadRequest(f"nothing accepted ({signal}): {mapped.error_message()}")
        try:
            written = [self._batcher(q).add(table) for q, table in targets]
            if hold is not None:
                hold.arrived()
            await asyncio.gather(*(asyncio.shield(f) for f in written))
        except Exception as exc:
            log.error("ingest write failed: %s", exc)
            raise Unavailable(f"storage is unavailable, nothing acknowledged: {exc}") from exc
        metrics.RECORDS.labels(signal, "written").inc(accepted)
        return Outcome(accepted, mapped.rejected, mapped.error_message())

    async def close(self) -> None:
        """Flush every pending batch."""
        batchers, self._batchers = list(self._batchers.values()), {}
        await asyncio.gather(*(b.close() for b in batchers), return_exceptions=True)
        self._decoder.shutdown(wait=False)
