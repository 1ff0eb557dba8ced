"""Pressure: past the in-flight budget requests get 429 + Retry-After; a failed write gets 503."""

from __future__ import annotations

import asyncio

import pytest
from starlette.applications import Starlette

from bzrk.ingest.batcher import Batching
from bzrk.ingest.http import otlp_routes
from bzrk.ingest.pipeline import IngestPipeline
from bzrk.testing import client
from tests.ingest.conftest import query
from tests.ingest.test_otlp_http import logs_request

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _app(catalog, max_inflight_bytes: int) -> Starlette:  # type: ignore[no-untyped-def]
    pipeline = IngestPipeline(
        catalog,
        catalog.meta,
        # The batch waits its whole max_wait: a request stays in flight for 0.5 s.
        batching=Batching(max_rows=10_000, max_wait_s=0.5, min_wait_s=0.5),
        max_inflight_bytes=max_inflight_bytes,
        max_body_bytes=1024 * 1024,
    )
    return Starlette(routes=otlp_routes(pipeline))


async def test_over_budget_gets_429_with_retry_after(catalog, ingest_token) -> None:
    body = logs_request().SerializeToString()
    headers = {"Authorization": f"Bearer {ingest_token}", "Content-Type": "application/x-protobuf"}
    app = _app(catalog, max_inflight_bytes=len(body) * 3)  # room for one request at a time
    async with client(app) as http:
        first = asyncio.create_task(http.post("/v1/logs", content=body, headers=headers))
        await asyncio.sleep(0.1)  # the first request now waits for its batch
        second = await http.post("/v1/logs", content=body, headers=headers)
        assert second.status_code == 429 and second.headers["retry-after"] == "1"
        assert (await first).status_code == 200
        third = await http.post("/v1/logs", content=body, headers=headers)
        assert third.status_code == 200  # the budget is free again
    assert query(catalog, "SELECT count() AS n FROM {t}") == [{"n": 2}]


async def test_failed_write_gets_503_and_nothing_is_acknowledged(catalog, ingest_token) -> None:
    body = logs_request().SerializeToString()
    headers = {"Authorization": f"Bearer {ingest_token}", "Content-Type": "application/x-protobuf"}
    app = _app(catalog, max_inflight_bytes=64 * 1024 * 1024)
    qualified = catalog.qualified_name("default", "default")
    catalog.backend.execute(f"DROP TABLE {qualified} SYNC")  # storage fails under the receiver
    async with client(app) as http:
        response = await http.post("/v1/logs", content=body, headers=headers)
        assert response.status_code == 503 and response.headers["retry-after"] == "2"
        catalog.sync()  # storage is back
        response = await http.post("/v1/logs", content=body, headers=headers)
        assert response.status_code == 200
    assert query(catalog, "SELECT count() AS n FROM {t}") == [{"n": 1}]
