"""The receivers tell the batcher when a request's rows are in: a batch need not wait its
``max_wait`` when nothing more is on its way, and still acknowledges only after its INSERT."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from starlette.applications import Starlette

from bzrk.ingest.batcher import Batching
from bzrk.ingest.http import create_loki_routes, otlp_routes
from bzrk.ingest.pipeline import IngestPipeline
from bzrk.testing import client
from tests.ingest.conftest import query
from tests.ingest.test_otlp_http import logs_request

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _app(catalog) -> Starlette:  # type: ignore[no-untyped-def]
    pipeline = IngestPipeline(
        catalog,
        catalog.meta,
        # A batch would wait a minute if the receivers did not say their rows are in.
        batching=Batching(max_rows=10_000, max_wait_s=60, min_wait_s=0),
        max_inflight_bytes=64 * 1024 * 1024,
        max_body_bytes=1024 * 1024,
    )
    return Starlette(routes=[*otlp_routes(pipeline), *create_loki_routes(pipeline)])


async def test_otlp_and_loki_requests_are_written_without_waiting_for_max_wait(
    catalog, ingest_token
) -> None:
    body = logs_request().SerializeToString()
    otlp = {"Authorization": f"Bearer {ingest_token}", "Content-Type": "application/x-protobuf"}
    loki = {"Authorization": f"Bearer {ingest_token}", "Content-Type": "application/json"}
    push = {"streams": [{"stream": {"job": "a"}, "values": [[str(time.time_ns()), "line"]]}]}
    async with client(_app(catalog)) as http:
        responses = await asyncio.wait_for(
            asyncio.gather(
                http.post("/v1/logs", content=body, headers=otlp),
                http.post("/v1/logs", content=body, headers=otlp),
                http.post("/loki/api/v1/push", content=json.dumps(push), headers=loki),
            ),
            20,
        )
    assert [r.status_code for r in responses] == [200, 200, 204]
    # Acknowledged means written: every acknowledged record is in the table now.
    assert query(catalog, "SELECT count() AS n FROM {t}") == [{"n": 3}]
