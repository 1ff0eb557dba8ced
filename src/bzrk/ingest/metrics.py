"""Prometheus metrics of the ingest service, named after Berserk's ``bzrk.ingest.*`` metrics.

They live in prometheus_client's default registry, which every listener serves at ``/metrics``.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RECORDS = Counter(
    "bzrk_ingest_records",
    "Records (log records, spans, data points, Loki entries) by signal and outcome.",
    ["signal", "outcome"],  # outcome: written | rejected
)
INVALID_REQUESTS = Counter(
    "bzrk_ingest_invalid_requests",
    "Requests refused as malformed (4xx / INVALID_ARGUMENT), by signal.",
    ["signal"],
)
QUEUE_REJECTIONS = Counter(
    "bzrk_ingest_queue_rejections", "Requests refused because the in-flight budget was spent."
)
WRITE_FAILURES = Counter("bzrk_ingest_write_failures", "Batch inserts that failed.")
BATCH_FLUSH_SECONDS = Histogram(
    "bzrk_ingest_batch_flush_duration_seconds",
    "Duration of one batch insert (including fsync).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
BATCH_ROWS = Histogram(
    "bzrk_ingest_batch_inputs",
    "Rows per batch insert.",
    buckets=(1, 10, 100, 1_000, 5_000, 10_000, 25_000, 50_000, 100_000),
)
INFLIGHT_BYTES = Gauge("bzrk_ingest_inflight_bytes", "Decoded request bytes held in memory.")
INFLIGHT_BYTES_LIMIT = Gauge("bzrk_ingest_inflight_bytes_limit", "The in-flight byte budget.")
