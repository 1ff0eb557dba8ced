"""Progress events of a run: cumulative engine figures, coverage and per-bin completion."""

from __future__ import annotations

import time
from typing import Any

from bzrk.engine.backends.base import ScanStats
from bzrk.engine.events import BinProgress, Progress
from bzrk.engine.scanplan import GranuleStats
from bzrk.engine.timewindow import Window


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
    percentages = bytearray()
    for n in range(count):
        low, high = first + n * span, first + (n + 1) * span
        low_in, high_in = max(low, full.start), min(high, full.end)
        overlap = max(0, min(high_in, done.end) - max(low_in, done.start))
        width = max(high_in - low_in, 1)
        percentages.append(min(100, round(100 * overlap / width)))
    done_bins = sum(1 for p in percentages if p == 100)
    return BinProgress(first * 100, span * 100, bytes(percentages), done_bins, count)


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
