"""The demo loader against a real OTLP/HTTP receiver on loopback that decodes the real protobuf.

The receiver here is a small Starlette app (the real one belongs to the ingest service); it
checks the bearer token and content type, decodes each body with opentelemetry-proto and counts
records, and can be told to answer 429/503/404 to exercise the loader's retry rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from hypercorn.asyncio import serve
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bzrk.demo import generate
from bzrk.demo.loader import DEMO_METRIC_INTERVAL_S, DEMO_SCALE, MARKER, load_demo_once
from bzrk.server.bootstrap import Credentials
from bzrk.server.run import hypercorn_config
from bzrk.server.settings import Settings

TOKEN = "ing_" + "x" * 42
SIGNALS = {
    "/v1/logs": ("logs", ExportLogsServiceRequest, ExportLogsServiceResponse),
    "/v1/traces": ("traces", ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": ("metrics", ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}


@dataclass
class Receiver:
    # Status codes (with Retry-After) to answer before accepting, consumed in order.
    refusals: list[tuple[int, str | None]] = field(default_factory=list)
    always: int | None = None
    # Accept this many requests, then answer 400 to everything.
    fail_after: int | None = None
    records: dict[str, int] = field(default_factory=lambda: {"logs": 0, "traces": 0, "metrics": 0})
    accepted: int = 0
    admitted: int = 0
    seen: list[tuple[float, int]] = field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = 0

    async def export(self, request: Request) -> Response:
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            await asyncio.sleep(0.005)
            return await self._answer(request)
        finally:
            self._in_flight -= 1

    async def _answer(self, request: Request) -> Response:
        if self.always is not None:
            self.seen.append((time.monotonic(), self.always))
            return Response(status_code=self.always)
        if self.fail_after is not None:
            if self.admitted >= self.fail_after:
                return Response("enough", status_code=400)
            self.admitted += 1
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return Response("bad token", status_code=401)
        assert request.headers["content-type"] == "application/x-protobuf"
        if self.refusals:
            status, retry_after = self.refusals.pop(0)
            self.seen.append((time.monotonic(), status))
            headers = {"Retry-After": retry_after} if retry_after else {}
            return Response(status_code=status, headers=headers)
        signal, request_cls, response_cls = SIGNALS[request.url.path]
        message = request_cls.FromString(await request.body())
        groups = getattr(message, f"resource_{'spans' if signal == 'traces' else signal}")
        count = 0
        for group in groups:
            for scoped in getattr(group, f"scope_{'spans' if signal == 'traces' else signal}"):
                if signal == "logs":
                    count += len(scoped.log_records)
                elif signal == "traces":
                    count += len(scoped.spans)
                else:
                    for metric in scoped.metrics:
                        count += len(getattr(metric, metric.WhichOneof("data")).data_points)
        self.records[signal] += count
        self.accepted += 1
        self.seen.append((time.monotonic(), 200))
        return Response(response_cls().SerializeToString(), media_type="application/x-protobuf")

    def app(self) -> Starlette:
        return Starlette(routes=[Route(path, self.export, methods=["POST"]) for path in SIGNALS])


@asynccontextmanager
async def serving(receiver: Receiver) -> AsyncIterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.set_inheritable(True)
    config = hypercorn_config(sock, graceful_timeout_s=1.0)
    shutdown = asyncio.Event()
    task = asyncio.create_task(serve(receiver.app(), config, shutdown_trigger=shutdown.wait))  # type: ignore[arg-type]
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for _ in range(200):
        try:
            async with httpx.AsyncClient() as client:
                await client.get(url + "/nothing")
            break
        except httpx.TransportError:
            await asyncio.sleep(0.02)
    try:
        yield url
    finally:
        shutdown.set()
        await task
        with contextlib.suppress(OSError):  # Hypercorn closes the socket it was handed
            sock.close()


def _ctx(data_dir: Path, hours: float = 0.5) -> SimpleNamespace:
    return SimpleNamespace(settings=Settings(data_dir=data_dir, demo_hours=hours, demo_seed=3))


def _creds(token: str = TOKEN) -> Credentials:
    return Credentials(
        token="bzrk_sp_x", ingest_token=token, admin_user="admin", admin_password="pw"
    )


def _load(receiver: Receiver, data_dir: Path, token: str = TOKEN, hours: float = 0.5) -> None:
    async def run() -> None:
        async with serving(receiver) as url:
            await load_demo_once(_ctx(data_dir, hours), _creds(token), {"otlp_http": url})  # type: ignore[arg-type]

    asyncio.run(run())


def _expected_counts(hours: float) -> tuple[int, dict[str, int]]:
    # The loader ends its range at "now"; compare against a same-length range (counts vary a
    # little with the start time, so only the signals' presence and the order of magnitude).
    end = time.time_ns()
    counts = {"logs": 0, "traces": 0, "metrics": 0}
    batches = 0
    for batch in generate(
        end - int(hours * 3600e9), end, 3, DEMO_SCALE, metric_interval_s=DEMO_METRIC_INTERVAL_S
    ):
        counts[batch.signal] += batch.records
        batches += 1
    return batches, counts


def test_loads_everything_once_and_writes_the_marker(tmp_path: Path) -> None:
    receiver = Receiver()
    _load(receiver, tmp_path)
    marker = tmp_path / MARKER
    assert marker.exists()
    _, expected = _expected_counts(0.5)
    for signal, count in expected.items():
        assert count > 0
        assert 0.5 * count <= receiver.records[signal] <= 2 * count, signal
    assert json.loads(marker.read_text())["records"] == receiver.records
    assert receiver.max_in_flight >= 2

    again = Receiver()
    _load(again, tmp_path)
    assert again.accepted == 0 and not again.seen


def test_retries_429_and_503_honouring_retry_after(tmp_path: Path) -> None:
    receiver = Receiver(refusals=[(429, "1"), (503, None), (429, "0")])
    _load(receiver, tmp_path, hours=0.1)
    assert (tmp_path / MARKER).exists()
    statuses = [status for _, status in receiver.seen]
    assert statuses[:3] == [429, 503, 429]
    assert statuses.count(200) == receiver.accepted > 0
    # The request refused with Retry-After: 1 came back no sooner than a second later.
    first_refusal = receiver.seen[0][0]
    assert max(t for t, s in receiver.seen if s == 200) - first_refusal >= 0.9


@pytest.mark.parametrize(("status", "token"), [(None, "ing_wrong"), (404, TOKEN), (400, TOKEN)])
def test_refused_load_is_logged_not_fatal_and_not_marked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, status: int | None, token: str
) -> None:
    receiver = Receiver(always=status)
    with caplog.at_level(logging.INFO, logger="bzrk.demo"):
        _load(receiver, tmp_path, token=token, hours=0.1)
    assert not (tmp_path / MARKER).exists()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert f"answered {status or 401}" in errors[0]
    assert "will retry on next start" in errors[0]


def test_retries_give_up_on_a_receiver_that_stays_busy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bzrk.demo import loader

    monkeypatch.setattr(loader, "MAX_ATTEMPTS", 3)
    receiver = Receiver(always=503)
    with caplog.at_level(logging.INFO, logger="bzrk.demo"):
        _load(receiver, tmp_path, hours=0.1)
    assert not (tmp_path / MARKER).exists()
    assert any(
        "answered 503" in r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR
    )
    assert 3 <= len(receiver.seen) <= 3 * loader.CONCURRENCY


def test_an_interrupted_load_resumes_where_it_stopped(tmp_path: Path) -> None:
    from bzrk.demo.loader import PROGRESS

    first = Receiver(fail_after=5)
    _load(first, tmp_path, hours=4.0)
    assert not (tmp_path / MARKER).exists()
    progress = json.loads((tmp_path / PROGRESS).read_text())
    assert 0 <= progress["acked"] <= 5  # requests finish out of order: the prefix may be short
    second = Receiver()
    _load(second, tmp_path, hours=4.0)
    assert (tmp_path / MARKER).exists() and not (tmp_path / PROGRESS).exists()

    expected = {"logs": 0, "traces": 0, "metrics": 0}
    batches = list(
        generate(
            progress["start_ns"],
            progress["end_ns"],
            3,
            progress["scale"],
            metric_interval_s=progress["metric_interval_s"],
        )
    )
    for batch in batches:
        expected[batch.signal] += batch.records
    # Everything arrived; only requests acknowledged beyond the saved prefix came twice.
    assert second.accepted == len(batches) - progress["acked"]
    duplicated = first.accepted - progress["acked"]
    assert 0 <= duplicated <= 5
    for signal, count in expected.items():
        assert count <= first.records[signal] + second.records[signal]
    assert sum(first.records.values()) + sum(second.records.values()) <= sum(
        expected.values()
    ) + duplicated * max(b.records for b in batches)
