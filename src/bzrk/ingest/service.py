"""The ingest service's listeners: OTLP/HTTP and Loki apps, and the OTLP/gRPC server.

All three share one :class:`~bzrk.ingest.pipeline.IngestPipeline` kept in
``ctx.components["ingest"]``, and one :class:`~bzrk.storage.catalog.StorageCatalog` in
``ctx.components["schema"]`` (also the query side's ``SchemaProvider``).
"""

from __future__ import annotations

import asyncio

import grpc
from starlette.applications import Starlette

from bzrk.ingest.admin import AdminApi
from bzrk.ingest.batcher import Batching
from bzrk.ingest.grpc_server import create_server
from bzrk.ingest.http import create_loki_routes, otlp_routes
from bzrk.ingest.pipeline import IngestPipeline
from bzrk.server.context import AppContext
from bzrk.storage.catalog import StorageCatalog, catalog_for
from bzrk.types import ASGIApp


def pipeline_for(ctx: AppContext) -> IngestPipeline:
    """This process's ingest pipeline, created on first use."""
    pipeline = ctx.components.get("ingest")
    if pipeline is None:
        catalog: StorageCatalog = catalog_for(ctx)
        settings = ctx.settings
        pipeline = IngestPipeline(
            catalog,
            ctx.meta,
            batching=Batching(
                settings.ingest_batch_max_rows, settings.ingest_batch_max_wait_ms / 1000
            ),
            max_inflight_bytes=settings.ingest_max_inflight_bytes,
            max_body_bytes=settings.ingest_max_body_bytes,
        )
        ctx.components["ingest"] = pipeline
    return pipeline


def create_otlp_http_app(ctx: AppContext) -> ASGIApp:
    pipeline = pipeline_for(ctx)
    return Starlette(routes=[*otlp_routes(pipeline), AdminApi(pipeline, ctx.keys).routes()])


def create_loki_app(ctx: AppContext) -> ASGIApp:
    return Starlette(routes=create_loki_routes(pipeline_for(ctx)))


def create_otlp_grpc_server(ctx: AppContext) -> grpc.aio.Server:
    """An OTLP/gRPC server with its services registered; the caller binds and starts it."""
    return create_server(pipeline_for(ctx))


async def start(ctx: AppContext) -> None:
    """Create the ClickHouse tables the metadata store knows, before listeners take traffic."""
    pipeline = pipeline_for(ctx)
    await asyncio.to_thread(pipeline.catalog.sync)


async def stop(ctx: AppContext) -> None:
    """Flush pending batches; called after listeners stopped accepting."""
    pipeline = ctx.components.get("ingest")
    if pipeline is not None:
        await pipeline.close()
