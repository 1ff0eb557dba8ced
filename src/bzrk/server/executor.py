"""Builds the query service of one process from its context (backend, catalogue, runs, limits)."""

from __future__ import annotations

from bzrk.engine.admission import Admission
from bzrk.engine.metrics import QueryMetrics
from bzrk.engine.request import QueryExecutor
from bzrk.engine.runlog import RunObservers
from bzrk.engine.service import QueryService, ServiceLimits
from bzrk.meta.runs import RunStore
from bzrk.server.context import AppContext
from bzrk.server.selftelemetry import RunSpans
from bzrk.server.storage_metrics import STORAGE
from bzrk.storage.catalog import catalog_for


def create_executor(ctx: AppContext) -> QueryExecutor:
    settings = ctx.settings
    assert ctx.backend is not None, "the query service needs an engine backend"
    admission = Admission(settings.query_max_concurrent, settings.query_queue_size)
    catalog = catalog_for(ctx)
    STORAGE.bind(catalog)
    return QueryService(
        ctx.backend,
        catalog=catalog,
        admission=admission,
        runs=RunStore(ctx.meta),
        observer=RunObservers(QueryMetrics(admission), RunSpans()),
        limits=ServiceLimits(
            max_timeout_ms=settings.query_max_timeout_ms,
            max_memory_bytes=settings.query_max_memory_bytes,
            max_result_rows=settings.query_max_result_rows,
            summarize_budget_bytes=settings.query_summarize_budget_bytes,
            chunk_counters_after_ms=settings.query_chunk_counters_after_ms,
            progress_tick_ms=settings.query_progress_tick_ms,
            progressive_direct_below_ms=settings.query_progressive_direct_below_ms,
        ),
    )
