"""Progress events of a run: cumulative engine figures, coverage and per-bin completion.

Between snapshots the coverage moves with the scan: while a window's queries run, ClickHouse's
own progress of them (``system.processes``: rows read of the rows its plan will read) is
polled every ``query_progress_tick_ms`` (500 ms), and the coverage reported is the completed windows' plus that
share of the running one's (at most 99 % of it: every row can be read while the aggregation
still runs). It never goes down, and reaches the window's coverage only when its snapshot
completes. A query done within the first tick is never polled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.backends.base import Backend, ScanStats
from bzrk.engine.errors import EngineError
from bzrk.engine.events import BinProgress, Progress
from bzrk.engine.scanplan import GranuleStats
from bzrk.engine.timewindow import Window

log = logging.getLogger(__name__)

# How often a running window's scan progress is read (and reported), in seconds, by default.
TICK_S = 0.5
# The most of a running window's share its scan progress reports: all its rows can be read
# while its aggregation still runs, and only its completed snapshot reaches the whole share.
RUNNING_SHARE_CAP = 0.99


def progress_event(
    scanned: ScanStats,
    granules: GranuleStats,
    started: int,
    waited_ns: int,
    coverage: float,
    done: int,
    total: int,
) -> Progress:
    return Progress(
        rows_processed=scanned.rows_read,
        chunks_total=granules.total,
        chunks_scanned=granules.scanned,
        chunks_skipped_range=granules.skipped_range,
        chunks_skipped_bloom=granules.skipped_bloom,
        chunk_scanned_raw_body_size=scanned.bytes_read,
        query_time_nanos=time.monotonic_ns() - started,
        queue_wait_nanos=waited_ns,
        coverage=coverage,
        slices_done=done,
        slices_total=total,
    )


MAX_PROGRESS_BINS = 10_000


def bin_progress(span: int | None, done: Window, full: Window) -> BinProgress | None:
    """Per-bin completion of ``summarize … by bin(timestamp, span)``: the share of each bin's
    time range the completed window covers (runs cover whole time ranges, so this is exact)."""
    if span is None or not done.bounded or not full.bounded:
        return None
    assert (
        full.start is not None
        and full.end is not None
        and done.start is not None
        and done.end is not None
    )
    first = full.start - full.start % span
    count = -(-(full.end - first) // span)
    if count <= 0 or count > MAX_PROGRESS_BINS:
        return None
    start, end = full.start, full.end
    done_start, done_end = done.start, done.end

    def share(n: int) -> int:
        low_in, high_in = max(first + n * span, start), min(first + (n + 1) * span, end)
        overlap = max(0, min(high_in, done_end) - max(low_in, done_start))
        return min(100, round(100 * overlap / max(high_in - low_in, 1)))

    # Bins wholly between the first and the last bin the completed window touches are done,
    # the rest untouched: only those two are computed (a week of 5 m bins is 2,016 of them,
    # and this runs on the event loop for every snapshot).
    percentages = bytearray(count)
    lo = max(0, (done_start - first) // span)
    hi = min(count - 1, (done_end - 1 - first) // span)
    if done_end > done_start and lo <= hi:
        percentages[lo + 1 : hi] = b"\x64" * max(0, hi - lo - 1)
        percentages[lo], percentages[hi] = share(lo), share(hi)
    return BinProgress(first * 100, span * 100, bytes(percentages), percentages.count(100), count)


def progress_dict(progress: Progress) -> dict[str, Any]:
    return {
        "rows_processed": progress.rows_processed,
        "chunks_total": progress.chunks_total,
        "chunks_scanned": progress.chunks_scanned,
        "chunks_skipped_range": progress.chunks_skipped_range,
        "chunks_skipped_bloom": progress.chunks_skipped_bloom,
        "bytes_scanned": progress.chunk_scanned_raw_body_size,
        "query_time_nanos": progress.query_time_nanos,
        "queue_wait_nanos": progress.queue_wait_nanos,
        "coverage": progress.coverage,
        "slices_done": progress.slices_done,
        "slices_total": progress.slices_total,
    }


# --- progress while a window runs --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScanSample:
    """ClickHouse's progress of a window's running queries (sums over their ``system.processes`` rows)."""

    rows_read: int
    bytes_read: int
    rows_total: int  # ClickHouse's estimate of the rows its plan reads (0: not known yet)

    @property
    def fraction(self) -> float:
        return min(1.0, self.rows_read / self.rows_total) if self.rows_total > 0 else 0.0


def _marker_filter(query_id_prefix: str) -> S.Expr:
    if not all(c.isalnum() for c in query_id_prefix):
        raise ValueError("query ids are alphanumeric")
    # chDB cannot set a query id: its SQL carries a marker comment (chdb_backend._tag); a
    # ClickHouse server has the real id.
    named = S.BinOp("LIKE", S.Col("query_id"), S.Lit(f"{query_id_prefix}x%"))
    tagged = S.BinOp("LIKE", S.Col("query"), S.Lit(f"%bzrk_qid:{query_id_prefix}x%"))
    # This read's own text holds the marker pattern: it leaves itself out by its id.
    itself = S.BinOp("!=", S.Col("query_id"), S.Func("queryID"))
    return S.BinOp("AND", S.BinOp("OR", named, tagged), itself)


def _sum(column: str) -> S.Expr:
    return S.Func("toInt64", [S.Func("sum", [S.Col(column)])])


def read_scan_progress(backend: Backend, query_id_prefix: str) -> ScanSample | None:
    """What the queries named ``<query_id_prefix>x<n>`` have read so far (blocking)."""
    sql = S.render(
        S.Select(
            columns=[
                (_sum("read_rows"), "r"),
                (_sum("read_bytes"), "b"),
                (_sum("total_rows_approx"), "t"),
                (S.Func("count"), "n"),
            ],
            from_=S.TableRef("system", "processes"),
            where=_marker_filter(query_id_prefix),
        )
    )
    try:
        row = backend.query_arrow(sql).to_pylist()[0]
    except EngineError:
        log.debug("could not read scan progress", exc_info=True)
        return None
    if not row["n"]:
        return None
    return ScanSample(int(row["r"] or 0), int(row["b"] or 0), int(row["t"] or 0))


class ScanTicker:
    """Samples the scan of one window's queries every ``interval_s`` while the caller waits."""

    def __init__(self, backend: Backend, query_id_prefix: str, interval_s: float = TICK_S) -> None:
        self.backend = backend
        self.prefix = query_id_prefix
        self.interval = interval_s
        self.next_at = time.monotonic() + interval_s

    async def wait(
        self, future: asyncio.Future[Any], timeout: float | None = None
    ) -> AsyncIterator[ScanSample]:
        """Until ``future`` is done, yield a sample whenever a tick is due (across calls).

        Raises:
            TimeoutError: ``timeout`` seconds passed first (``future`` keeps running).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            now = time.monotonic()
            until = self.next_at if deadline is None else min(self.next_at, deadline)
            done, _ = await asyncio.wait({future}, timeout=max(until - now, 0))
            if done:
                return
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise TimeoutError
            if now >= self.next_at:
                self.next_at = now + self.interval
                sample = await asyncio.to_thread(read_scan_progress, self.backend, self.prefix)
                if sample is not None:
                    yield sample


class RunProgress:
    """The cumulative progress of one run, after each window and while one runs."""

    def __init__(self, started: int, waited_ns: int, slices: int) -> None:
        self.started = started
        self.waited_ns = waited_ns
        self.slices = slices
        self.done = 0
        self.scanned = ScanStats()
        self.granules = GranuleStats()
        self.coverage = 0.0  # of the completed windows
        self.reported = 0.0  # the highest coverage sent, completed or not
        self.bins: BinProgress | None = None
        self.short_circuit = False

    def completed(
        self, stats: ScanStats, granules: GranuleStats, coverage: float, bins: BinProgress | None
    ) -> Progress:
        """A window's snapshot is whole: add its figures."""
        self.done += 1
        self.scanned = ScanStats(
            self.scanned.rows_read + stats.rows_read,
            self.scanned.bytes_read + stats.bytes_read,
            self.scanned.elapsed_ns + stats.elapsed_ns,
        )
        self.granules = self.granules + granules
        self.coverage = max(self.coverage, coverage)
        self.reported = max(self.reported, self.coverage)
        self.bins = bins
        return self._event(self.scanned, self.reported)

    def running(self, sample: ScanSample, coverage: float) -> Progress | None:
        """The window towards ``coverage`` is part read; None when nothing moved."""
        fraction = min(sample.fraction, RUNNING_SHARE_CAP)
        share = self.coverage + (coverage - self.coverage) * fraction
        if share <= self.reported:
            return None
        self.reported = share
        scanned = ScanStats(
            self.scanned.rows_read + sample.rows_read, self.scanned.bytes_read + sample.bytes_read
        )
        return self._event(scanned, share)

    def _event(self, scanned: ScanStats, coverage: float) -> Progress:
        event = progress_event(
            scanned,
            self.granules,
            self.started,
            self.waited_ns,
            coverage,
            self.done,
            self.slices,
        )
        return replace(event, bin_progress=self.bins, short_circuit=self.short_circuit)
