"""Loads the demo dataset once per data dir through the real ingest path (OTLP/HTTP protobuf).

``bzrk dev --demo`` calls :func:`load_demo_once` when every listener is live. It POSTs the last
``demo_hours`` hours of :func:`bzrk.demo.generate` output to the OTLP/HTTP receiver with the
default ingest token, a few requests in flight, retrying 429/503 as the OTLP spec asks
(honouring ``Retry-After``). Only when every request was acknowledged does it write
``DATA_DIR/.demo-loaded``; a failed load is logged, never fatal, and retried on the next start.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from bzrk.demo.generator import DemoBatch, generate

if TYPE_CHECKING:
    from bzrk.server.bootstrap import Credentials
    from bzrk.server.context import AppContext

log = logging.getLogger("bzrk.demo")

MARKER = ".demo-loaded"
RETRYABLE = (429, 502, 503, 504)
MAX_ATTEMPTS = 8
MAX_RETRY_WAIT_S = 30.0
CONCURRENCY = 4


class DemoLoadError(Exception):
    """The ingest endpoint refused the demo data (not retryable, or retries exhausted)."""


@dataclass
class LoadStats:
    requests: int = 0
    records: dict[str, int] = field(default_factory=lambda: {"logs": 0, "traces": 0, "metrics": 0})
    retries: int = 0

    @property
    def total(self) -> int:
        return sum(self.records.values())


def _retry_after(response: httpx.Response, attempt: int) -> float:
    """Seconds to wait before retrying: ``Retry-After`` (seconds or HTTP date) or backoff."""
    value = response.headers.get("retry-after")
    if value:
        try:
            return min(max(float(value), 0.0), MAX_RETRY_WAIT_S)
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                parsed = None
            if parsed is not None:
                return min(max(parsed.timestamp() - time.time(), 0.0), MAX_RETRY_WAIT_S)
    return min(0.25 * 2**attempt, MAX_RETRY_WAIT_S)


async def _post(client: httpx.AsyncClient, url: str, batch: DemoBatch, stats: LoadStats) -> None:
    for attempt in range(MAX_ATTEMPTS):
        try:
            response = await client.post(url, content=batch.payload)
        except httpx.TransportError as exc:
            if attempt == MAX_ATTEMPTS - 1:
                raise DemoLoadError(f"POST {url} failed: {exc}") from exc
            stats.retries += 1
            await asyncio.sleep(min(0.25 * 2**attempt, MAX_RETRY_WAIT_S))
            continue
        if response.status_code == 200:
            return
        if response.status_code in RETRYABLE and attempt < MAX_ATTEMPTS - 1:
            stats.retries += 1
            await asyncio.sleep(_retry_after(response, attempt))
            continue
        detail = response.text[:200].strip()
        raise DemoLoadError(
            f"POST {url} answered {response.status_code}" + (f": {detail}" if detail else "")
        )


async def send_batches(
    base_url: str,
    token: str,
    batches: Iterator[DemoBatch],
    *,
    concurrency: int = CONCURRENCY,
    progress_every_s: float = 5.0,
) -> LoadStats:
    """POST every batch to ``base_url`` + its OTLP path; returns once all were acknowledged.

    Batches are produced in a worker thread (generation is CPU work and must not stall the
    event loop the receivers share in ``bzrk dev``). Raises :class:`DemoLoadError` on the first
    request that cannot be delivered.
    """
    stats = LoadStats()
    queue: asyncio.Queue[DemoBatch | None] = asyncio.Queue(maxsize=concurrency * 2)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/x-protobuf",
        "User-Agent": "bzrk-demo-loader",
    }
    started = last_report = time.monotonic()
    base = base_url.rstrip("/")

    async def produce() -> None:
        try:
            while True:
                batch = await asyncio.to_thread(next, batches, None)
                if batch is None:
                    break
                await queue.put(batch)
        finally:
            for _ in range(concurrency):
                await queue.put(None)

    async def consume(client: httpx.AsyncClient) -> None:
        nonlocal last_report
        while (batch := await queue.get()) is not None:
            await _post(client, base + batch.path, batch, stats)
            stats.requests += 1
            stats.records[batch.signal] += batch.records
            now = time.monotonic()
            if now - last_report >= progress_every_s:
                last_report = now
                log.info(
                    "demo data: %d records sent in %.0f s (logs %d, spans %d, metric points %d)",
                    stats.total, now - started, *stats.records.values(),
                )  # fmt: skip

    async with httpx.AsyncClient(
        headers=headers, timeout=httpx.Timeout(60.0, connect=5.0)
    ) as client:
        producer = asyncio.create_task(produce())
        consumers = [asyncio.create_task(consume(client)) for _ in range(concurrency)]
        try:
            await asyncio.gather(*consumers)
        finally:
            for task in (producer, *consumers):
                task.cancel()
            await asyncio.gather(producer, *consumers, return_exceptions=True)
    return stats


async def load_demo_once(ctx: AppContext, creds: Credentials, addresses: dict[str, str]) -> None:
    """Send the demo dataset through OTLP/HTTP unless ``DATA_DIR/.demo-loaded`` says it was."""
    settings = ctx.settings
    marker = Path(settings.data_dir) / MARKER
    if marker.exists():
        log.info("demo data already loaded (remove %s to load it again)", marker)
        return
    end_ns = time.time_ns()
    start_ns = end_ns - int(settings.demo_hours * 3600e9)
    base_url = addresses["otlp_http"]
    log.info(
        "loading demo data: %.1f h up to now, seed %d, via %s", settings.demo_hours,
        settings.demo_seed, base_url,
    )  # fmt: skip
    began = time.monotonic()
    try:
        stats = await send_batches(
            base_url, creds.ingest_token, generate(start_ns, end_ns, settings.demo_seed)
        )
    except DemoLoadError as exc:
        log.error("demo data not loaded (will retry on next start): %s", exc)
        return
    elapsed = time.monotonic() - began
    marker.write_text(
        json.dumps(
            {
                "loaded_at_ns": time.time_ns(),
                "start_ns": start_ns,
                "end_ns": end_ns,
                "seed": settings.demo_seed,
                "hours": settings.demo_hours,
                "records": stats.records,
                "requests": stats.requests,
            },
            indent=2,
        )
        + "\n"
    )
    log.info(
        "demo data loaded: %d logs, %d spans, %d metric points in %d requests, %.1f s (%d retries)",
        stats.records["logs"], stats.records["traces"], stats.records["metrics"], stats.requests,
        elapsed, stats.retries,
    )  # fmt: skip
