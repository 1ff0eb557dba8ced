"""Loads the demo dataset once per data dir through the real ingest path (OTLP/HTTP protobuf).

``bzrk dev --demo`` calls :func:`load_demo_once` when every listener is live. It POSTs the last
``demo_hours`` hours of :func:`bzrk.demo.generate` output to the OTLP/HTTP receiver with the
default ingest token, a few requests in flight, retrying 429/503 as the OTLP spec asks
(honouring ``Retry-After``). Only when every request was acknowledged does it write
``DATA_DIR/.demo-loaded``; a failed or interrupted load is logged, never fatal, and resumed on
the next start from ``DATA_DIR/.demo-progress`` (same range and seed, so the generator yields
the same requests; the acknowledged prefix is skipped and at most a few requests are re-sent).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bzrk.demo.generator import DemoBatch, generate

if TYPE_CHECKING:
    from bzrk.server.bootstrap import Credentials
    from bzrk.server.context import AppContext

log = logging.getLogger("bzrk.demo")

MARKER = ".demo-loaded"
PROGRESS = ".demo-progress"
RETRYABLE = (429, 502, 503, 504)
MAX_ATTEMPTS = 8
MAX_RETRY_WAIT_S = 30.0
CONCURRENCY = 4
# The demo's size: ~150 k rows for 24 h (ingest on 2 busy cores takes ~3 k rows/s).
DEMO_SCALE = 0.5
DEMO_METRIC_INTERVAL_S = 120


class DemoLoadError(Exception):
    """The ingest endpoint refused the demo data (not retryable, or retries exhausted)."""


@dataclass
class LoadStats:
    requests: int = 0
    records: dict[str, int] = field(default_factory=lambda: {"logs": 0, "traces": 0, "metrics": 0})
    retries: int = 0
    # Requests 0..acked_prefix-1 (in generation order) were all acknowledged.
    acked_prefix: int = 0

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
    stats: LoadStats | None = None,
    on_progress: Callable[[LoadStats], None] | None = None,
) -> LoadStats:
    """POST every batch to ``base_url`` + its OTLP path; returns once all were acknowledged.

    Batches are produced in a worker thread (generation is CPU work and must not stall the
    event loop the receivers share in ``bzrk dev``). Raises :class:`DemoLoadError` on the first
    request that cannot be delivered; ``stats`` (pass your own to read it after a failure or a
    cancellation) keeps the acknowledged prefix. ``on_progress`` runs every ``progress_every_s``.
    """
    stats = stats if stats is not None else LoadStats()
    queue: asyncio.Queue[tuple[int, DemoBatch] | None] = asyncio.Queue(maxsize=concurrency * 2)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/x-protobuf",
        "User-Agent": "bzrk-demo-loader",
    }
    started = last_report = time.monotonic()
    base = base_url.rstrip("/")
    acked_beyond_prefix: set[int] = set()

    async def produce() -> None:
        index = 0
        while (batch := await asyncio.to_thread(next, batches, None)) is not None:
            await queue.put((index, batch))
            index += 1
        for _ in range(concurrency):
            await queue.put(None)

    async def consume(client: httpx.AsyncClient) -> None:
        nonlocal last_report
        while (item := await queue.get()) is not None:
            index, batch = item
            await _post(client, base + batch.path, batch, stats)
            stats.requests += 1
            stats.records[batch.signal] += batch.records
            acked_beyond_prefix.add(index)
            while stats.acked_prefix in acked_beyond_prefix:
                acked_beyond_prefix.discard(stats.acked_prefix)
                stats.acked_prefix += 1
            now = time.monotonic()
            if now - last_report >= progress_every_s:
                last_report = now
                log.info(
                    "demo data: %d records sent in %.0f s (logs %d, spans %d, metric points %d)",
                    stats.total, now - started, *stats.records.values(),
                )  # fmt: skip
                if on_progress is not None:
                    on_progress(stats)

    async with httpx.AsyncClient(
        headers=headers, timeout=httpx.Timeout(60.0, connect=5.0)
    ) as client:
        producer = asyncio.create_task(produce())
        consumers = [asyncio.create_task(consume(client)) for _ in range(concurrency)]
        try:
            # A failing producer or consumer ends the load; the rest are cancelled below.
            await asyncio.gather(producer, *consumers)
        finally:
            for task in (producer, *consumers):
                task.cancel()
            await asyncio.gather(producer, *consumers, return_exceptions=True)
    return stats


def _skip(batches: Iterator[DemoBatch], n: int) -> Iterator[DemoBatch]:
    for index, batch in enumerate(batches):
        if index >= n:
            yield batch


async def load_demo_once(ctx: AppContext, creds: Credentials, addresses: dict[str, str]) -> None:
    """Send the demo dataset through OTLP/HTTP unless ``DATA_DIR/.demo-loaded`` says it was."""
    settings = ctx.settings
    data_dir = Path(settings.data_dir)
    marker, progress_file = data_dir / MARKER, data_dir / PROGRESS
    if marker.exists():
        log.info("demo data already loaded (remove %s to load it again)", marker)
        return
    plan = {
        "seed": settings.demo_seed,
        "hours": settings.demo_hours,
        "scale": DEMO_SCALE,
        "metric_interval_s": DEMO_METRIC_INTERVAL_S,
    }
    resumed = 0
    previous = _read_json(progress_file)
    if previous and all(previous.get(k) == v for k, v in plan.items()):
        start_ns, end_ns, resumed = previous["start_ns"], previous["end_ns"], previous["acked"]
        stats = LoadStats(requests=resumed, records=previous["records"], acked_prefix=resumed)
        log.info("resuming the demo data load after %d acknowledged requests", resumed)
    else:
        end_ns = time.time_ns()
        start_ns = end_ns - int(settings.demo_hours * 3600e9)
        stats = LoadStats()
    plan.update(start_ns=start_ns, end_ns=end_ns)

    def save_progress(current: LoadStats) -> None:
        _write_json(
            progress_file, {**plan, "acked": current.acked_prefix, "records": current.records}
        )

    base_url = addresses["otlp_http"]
    log.info(
        "loading demo data: %.1f h up to now, seed %d, via %s", settings.demo_hours,
        settings.demo_seed, base_url,
    )  # fmt: skip
    began = time.monotonic()
    demo = generate(
        start_ns, end_ns, settings.demo_seed, DEMO_SCALE, metric_interval_s=DEMO_METRIC_INTERVAL_S
    )
    batches = _skip(demo, resumed)
    try:
        await send_batches(
            base_url, creds.ingest_token, batches, stats=stats, on_progress=save_progress
        )
    except DemoLoadError as exc:
        save_progress(stats)
        log.error("demo data not loaded (will retry on next start): %s", exc)
        return
    except asyncio.CancelledError:
        save_progress(stats)
        log.warning("demo data load interrupted; it resumes on the next start")
        raise
    _write_json(
        marker,
        {
            **plan,
            "loaded_at_ns": time.time_ns(),
            "records": stats.records,
            "requests": stats.requests,
        },
    )
    progress_file.unlink(missing_ok=True)
    log.info(
        "demo data loaded: %d logs, %d spans, %d metric points in %d requests, %.1f s (%d retries)",
        stats.records["logs"], stats.records["traces"], stats.records["metrics"], stats.requests,
        time.monotonic() - began, stats.retries,
    )  # fmt: skip


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
