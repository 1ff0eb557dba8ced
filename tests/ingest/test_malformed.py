"""Malformed input: every case gets a located 4xx / INVALID_ARGUMENT, and nothing else is lost."""

from __future__ import annotations

import gzip
import json
import time

import grpc
import pytest
import snappy
from google.rpc import error_details_pb2, status_pb2

from bzrk.testing import client
from tests.ingest.conftest import query
from tests.ingest.test_otlp_http import NOW, logs_request

pytestmark = pytest.mark.anyio
PB = "application/x-protobuf"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _valid() -> bytes:
    return logs_request().SerializeToString()


def _utf8_broken() -> bytes:
    return _valid().replace(b"Deadlock", b"Dead\xfflock")


def _far_future() -> bytes:
    req = logs_request()
    req.resource_logs[0].scope_logs[0].log_records[0].time_unix_nano = 2**63
    return req.SerializeToString()


def _seconds_not_nanos() -> bytes:
    req = logs_request()
    req.resource_logs[0].scope_logs[0].log_records[0].time_unix_nano = int(time.time())
    return req.SerializeToString()


OTLP_CASES = [
    # (id, path, content type, extra headers, body, status, words in the message)
    ("truncated", "/v1/logs", PB, {}, _valid()[:-7], 400, "corrupt"),
    ("garbage", "/v1/traces", PB, {}, b"\xff\xff\xff\xff", 400, "invalid OTLP protobuf"),
    ("content-type", "/v1/logs", "text/plain", {}, _valid(), 415, "Content-Type"),
    ("no-content-type", "/v1/metrics", "", {}, _valid(), 415, "Content-Type"),
    ("utf8-protobuf", "/v1/logs", PB, {}, _utf8_broken(), 400, "UTF-8"),
    ("utf8-json", "/v1/logs", "application/json", {}, b'{"resourceLogs": "\xff"}', 400, "UTF-8"),
    ("json-syntax", "/v1/logs", "application/json", {}, b'{"resourceLogs": [', 400, "invalid JSON"),
    (
        "json-bad-hex",
        "/v1/traces",
        "application/json",
        {},
        json.dumps(
            {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "00"}]}]}]}
        ).encode(),
        400,
        "not hex",
    ),
    ("json-deep", "/v1/logs", "application/json", {}, b"[" * 100_000, 400, "nested too deeply"),
    ("far-future", "/v1/logs", PB, {}, _far_future(), 400, "out of range"),
    ("seconds", "/v1/logs", PB, {}, _seconds_not_nanos(), 400, "out of range"),
    ("oversized", "/v1/logs", PB, {}, b"\x00" * (4 * 1024 * 1024 + 1), 413, "exceeds the limit"),
    (
        "gzip-bomb",
        "/v1/logs",
        PB,
        {"Content-Encoding": "gzip"},
        gzip.compress(b"\x00" * (8 * 1024 * 1024)),
        413,
        "decompressed",
    ),
    (
        "gzip-truncated",
        "/v1/logs",
        PB,
        {"Content-Encoding": "gzip"},
        gzip.compress(_valid())[:-9],
        400,
        "gzip",
    ),
    ("encoding", "/v1/logs", PB, {"Content-Encoding": "br"}, _valid(), 415, "Content-Encoding"),
    # JSON that is not an object: protobuf's parser raised TypeError (500) or took "x" and []
    # as an empty request (200, nothing written).
    ("json-null", "/v1/logs", "application/json", {}, b"null", 400, "not null"),
    ("json-number", "/v1/traces", "application/json", {}, b"5", 400, "not a number"),
    ("json-bool", "/v1/metrics", "application/json", {}, b"true", 400, "not a boolean"),
    ("json-string", "/v1/logs", "application/json", {}, b'"x"', 400, "not a string"),
    ("json-array", "/v1/logs", "application/json", {}, b"[]", 400, "not an array"),
    (
        "json-wrong-kind",
        "/v1/logs",
        "application/json",
        {},
        b'{"resourceLogs": [5]}',
        400,
        "invalid OTLP JSON",
    ),
    # Fewer bytes than Content-Length declares.
    ("short-body", "/v1/logs", PB, {"Content-Length": "5000"}, _valid(), 400, "ended after"),
]


@pytest.mark.parametrize(
    ("path", "content_type", "extra", "body", "status", "words"),
    [case[1:] for case in OTLP_CASES],
    ids=[case[0] for case in OTLP_CASES],
)
async def test_otlp_http_rejects(
    catalog, ingest_app, ingest_token, path, content_type, extra, body, status, words
) -> None:
    headers = {"Authorization": f"Bearer {ingest_token}", **extra}
    if content_type:
        headers["Content-Type"] = content_type
    async with client(ingest_app) as http:
        response = await http.post(path, content=body, headers=headers)
        assert response.status_code == status, response.content
        if content_type == "application/json":
            message = response.json()["message"]
        else:
            message = status_pb2.Status.FromString(response.content).message
        assert words in message, message
        # The receiver keeps serving, and only the valid request's record is stored.
        kept = {k: v for k, v in headers.items() if k != "Content-Length"}
        ok = await http.post(
            "/v1/logs",
            content=_valid(),
            headers={**kept, "Content-Type": PB, "Content-Encoding": "identity"},
        )
        assert ok.status_code == 200, ok.content
    assert query(catalog, "SELECT count() AS n FROM {t}") == [{"n": 1}]


LOKI_CASES = [
    ("snappy", PB, b"not snappy at all", 400, "does not decompress"),
    ("snappy-truncated", PB, snappy.compress(b"line " * 400)[:-9], 400, "does not decompress"),
    ("snappy-huge", PB, b"\xff\xff\xff\xff\x0f" + b"\x00" * 10, 413, "exceeds the limit"),
    (
        "labels",
        PB,
        None,  # filled in by the test: a valid push with unparseable labels
        400,
        "labels",
    ),
    ("json-shape", "application/json", b'{"stream": []}', 400, '"streams"'),
    (
        "json-timestamp",
        "application/json",
        json.dumps({"streams": [{"stream": {}, "values": [["yesterday", "x"]]}]}).encode(),
        400,
        "unix nanoseconds",
    ),
    ("content-type", "text/plain", b"hello", 415, "Content-Type"),
    (
        "json-surrogate",
        "application/json",
        b'{"streams": [{"stream": {"a": "b"}, "values": [["1767225600000000000", "x\\udfff"]]}]}',
        400,
        "unpaired surrogate",
    ),
    ("json-deep", "application/json", b"[" * 100_000, 400, "nested too deeply"),
]


@pytest.mark.parametrize(
    ("content_type", "body", "status", "words"),
    [case[1:] for case in LOKI_CASES],
    ids=[case[0] for case in LOKI_CASES],
)
async def test_loki_rejects(
    catalog, ingest_app, ingest_token, content_type, body, status, words
) -> None:
    from bzrk.ingest.loki import PushRequest

    if body is None:
        bad = PushRequest()
        bad.streams.add(labels="service=unquoted").entries.add(line="x")
        body = snappy.compress(bad.SerializeToString())
    headers = {"Authorization": f"Bearer {ingest_token}", "Content-Type": content_type}
    good = PushRequest()
    entry = good.streams.add(labels='{job="ok"}').entries.add(line="fine")
    entry.timestamp.FromNanoseconds(NOW)
    async with client(ingest_app) as http:
        response = await http.post("/loki/api/v1/push", content=body, headers=headers)
        assert response.status_code == status, response.text
        assert words in response.text
        ok = await http.post(
            "/loki/api/v1/push",
            content=snappy.compress(good.SerializeToString()),
            headers={**headers, "Content-Type": PB},
        )
        assert ok.status_code == 204, ok.text
    assert query(catalog, "SELECT body FROM {t}") == [{"body": "fine"}]


async def test_grpc_rejects_with_invalid_argument(catalog, pipeline, ingest_token) -> None:
    from bzrk.ingest.grpc_server import create_server

    server = create_server(pipeline)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            export = channel.unary_unary(
                "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                request_serializer=None,
                response_deserializer=None,
            )
            auth = (("authorization", f"Bearer {ingest_token}"),)
            for body, code, words in (
                (_valid()[:-7], grpc.StatusCode.INVALID_ARGUMENT, "corrupt"),
                (_utf8_broken(), grpc.StatusCode.INVALID_ARGUMENT, "UTF-8"),
                (_far_future(), grpc.StatusCode.INVALID_ARGUMENT, "out of range"),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await export(body, metadata=auth)
                assert caught.value.code() == code and words in caught.value.details()
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await export(_valid(), metadata=(("authorization", "Bearer ing_nope"),))
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert await export(_valid(), metadata=auth) == b""  # success, no partial failure
            # Storage failing: UNAVAILABLE with a RetryInfo detail, as OTLP exporters expect.
            qualified = catalog.qualified_name("default", "default")
            catalog.backend.execute(f"DROP TABLE {qualified} SYNC")
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await export(_valid(), metadata=auth)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            trailers = dict(caught.value.trailing_metadata() or ())
            status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
            retry = error_details_pb2.RetryInfo()
            assert status.details[0].Unpack(retry) and retry.retry_delay.seconds == 2
            catalog.sync()  # storage is back (empty): the receiver serves again
            assert await export(_valid(), metadata=auth) == b""
    finally:
        await server.stop(None)
    assert query(catalog, "SELECT count() AS n FROM {t}") == [{"n": 1}]
