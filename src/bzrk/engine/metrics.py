"""Query metrics: what each run did, by surface, on the query listener's ``/metrics``.

:class:`QueryMetrics` is the query service's run observer (``engine/runlog.py``): every run
that ends (complete, stopped early, soft budget, error or cancelled) moves these families.
Names follow the Prometheus conventions (base units, ``_total`` counters); ``docs/metrics.md``
lists them, and a test keeps the two equal.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from bzrk.engine.admission import Admission
from bzrk.engine.runlog import RunSummary
from bzrk.metrics import LATENCY_BUCKETS, registry

_REGISTRY = registry("query")
_SURFACE = ["surface"]

QUERIES = Counter(
    "bzrk_queries_total",
    "Query runs that ended, by surface (grpc, adx, mcp, http, …) and status (complete, "
    "stopped_early, soft_budget, error, cancelled).",
    ["surface", "status"],
    registry=_REGISTRY,
)
ERRORS = Counter(
    "bzrk_query_errors_total",
    "Query runs that ended with an error, by surface and error code (ParseError, QueueFull, …).",
    ["surface", "code"],
    registry=_REGISTRY,
)
CANCELLATIONS = Counter(
    "bzrk_query_cancellations_total",
    "Query runs cancelled by their client (the stream closed before its end).",
    _SURFACE,
    registry=_REGISTRY,
)
SHORT_CIRCUITS = Counter(
    "bzrk_query_short_circuits_total",
    "Query runs that stopped early because a snapshot already held the whole answer.",
    _SURFACE,
    registry=_REGISTRY,
)
DURATION = Histogram(
    "bzrk_query_duration_seconds",
    "Wall time of a query run, from the request to its last event (queue wait included).",
    _SURFACE,
    buckets=LATENCY_BUCKETS,
    registry=_REGISTRY,
)
QUEUE_WAIT = Histogram(
    "bzrk_query_queue_wait_seconds",
    "Time a query waited for an execution slot (admission queue).",
    _SURFACE,
    buckets=LATENCY_BUCKETS,
    registry=_REGISTRY,
)
SCANNED_ROWS = Counter(
    "bzrk_query_scanned_rows_total",
    "Rows ClickHouse read for queries (all progressive slices).",
    _SURFACE,
    registry=_REGISTRY,
)
SCANNED_BYTES = Counter(
    "bzrk_query_scanned_bytes_total",
    "Uncompressed bytes ClickHouse read for queries (all progressive slices).",
    _SURFACE,
    registry=_REGISTRY,
)
SNAPSHOTS = Counter(
    "bzrk_query_snapshots_total",
    "Result snapshots (progressive iterations) queries sent.",
    _SURFACE,
    registry=_REGISTRY,
)
RUNNING = Gauge(
    "bzrk_queries_running", "Queries holding an execution slot now.", registry=_REGISTRY
)
WAITING = Gauge(
    "bzrk_queries_waiting", "Queries waiting in the admission queue now.", registry=_REGISTRY
)
SLOTS = Gauge("bzrk_query_slots", "Execution slots (query_max_concurrent).", registry=_REGISTRY)


class QueryMetrics:
    """Records every finished run; reads the admission queue's depth when scraped."""

    def __init__(self, admission: Admission) -> None:
        RUNNING.set_function(lambda: admission.running)
        WAITING.set_function(lambda: admission.waiting)
        SLOTS.set(admission.max_running)

    def run_finished(self, summary: RunSummary) -> None:
        surface = summary.surface or "internal"
        QUERIES.labels(surface, summary.status).inc()
        if summary.error_code is not None:
            ERRORS.labels(surface, summary.error_code).inc()
        if summary.status == "cancelled":
            CANCELLATIONS.labels(surface).inc()
        if summary.short_circuit:
            SHORT_CIRCUITS.labels(surface).inc()
        DURATION.labels(surface).observe(summary.duration_s)
        if summary.queue_wait_s is not None:
            QUEUE_WAIT.labels(surface).observe(summary.queue_wait_s)
        SCANNED_ROWS.labels(surface).inc(summary.rows_scanned)
        SCANNED_BYTES.labels(surface).inc(summary.bytes_scanned)
        SNAPSHOTS.labels(surface).inc(summary.snapshots)
