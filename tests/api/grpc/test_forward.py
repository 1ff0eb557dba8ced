"""The gateway's gRPC forwarder: grpcio client → Hypercorn(forwarder) → Hypercorn(query gRPC app).

The upstream verifies the forwarded internal token with the real ``verify_internal_token``, as
the query service does; its executor is scripted (see test_server.py).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from bzrk.api.grpc.server import send_status as send_grpc_status
from bzrk.api.grpc.service import create_app
from bzrk.auth.internal import InternalKeys, InvalidInternalToken, Principal, verify_internal_token
from bzrk.gateway.grpc_forward import GrpcForwarder, send_status
from bzrk.types import ASGIApp, Receive, Scope, Send

from .helpers import ScriptedExecutor, payloads, request, serve, stub, table_rows
from .test_server import endless, one_row, queue_full, wide_rows

TOKEN = "bzrk_sp_good"


class VerifyingQueryService:
    """The query service's token check in front of the gRPC app; records what arrived."""

    def __init__(self, keys: InternalKeys, app: ASGIApp) -> None:
        self.keys, self.app = keys, app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.seen.append(headers)
        try:
            principal = verify_internal_token(self.keys, headers.get("authorization"), "query")
        except InvalidInternalToken:
            await send_grpc_status(scope, send, 16, "internal token required")
            return
        scope["bzrk.principal"] = principal
        await self.app(scope, receive, send)


async def authenticate(authorization: str | None) -> Principal | None:
    if authorization == f"Bearer {TOKEN}":
        return Principal("service_principal", "sp-123", "sp-123", ("admin",))
    if authorization == "Bearer explode":
        raise RuntimeError("token store down")
    return None


@contextlib.contextmanager
def forwarding(
    tmp_path: Path,
    script: Any = one_row,
    wrap: Callable[[ASGIApp], ASGIApp] = lambda app: app,
    **options: Any,
) -> Iterator[tuple[str, ScriptedExecutor, VerifyingQueryService]]:
    """grpcio → Hypercorn(``wrap(forwarder)``) → Hypercorn(query gRPC app): (target, executor,
    upstream); ``options`` go to the forwarder."""
    keys = InternalKeys.load_or_create(tmp_path)
    executor = ScriptedExecutor(script)
    upstream = VerifyingQueryService(
        keys, create_app(SimpleNamespace(meta=None, executor=executor))
    )  # type: ignore[arg-type]
    with serve(upstream) as query_target:
        forwarder = GrpcForwarder(
            f"http://{query_target}", lambda p: keys.sign(p, "query"), authenticate, **options
        )
        with serve(wrap(forwarder)) as gateway_target:
            yield gateway_target, executor, upstream


@pytest.fixture
def chain(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, ScriptedExecutor, VerifyingQueryService]]:
    with forwarding(tmp_path, getattr(request, "param", one_row)) as chained:
        yield chained


def forwarded(target: str, message: Any, token: str | None = TOKEN, **kwargs: Any) -> list[Any]:
    channel, execute = stub(target, prefix="/api/grpc")
    metadata = [("authorization", f"Bearer {token}")] if token is not None else []
    metadata += kwargs.pop("metadata", [])
    with channel:
        return list(execute(message, metadata=metadata, **kwargs))


def forwarded_status(target: str, message: Any, **kwargs: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        forwarded(target, message, **kwargs)
    return info.value.code(), info.value.details()


def test_forwards_with_an_internal_token_and_clean_metadata(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService],
) -> None:
    target, executor, upstream = chain
    frames = forwarded(
        target,
        request("print v = 1"),
        metadata=[
            ("x-bzrk-client-name", "pytest"),
            ("x-bzrk-username", "root"),
            ("x-forwarded-for", "1.2.3.4"),
            ("x-trace-bin", b"\x00\x01"),
        ],
    )
    assert payloads(frames) == ["schema", "batch", "metadata", "done"]
    assert table_rows(frames) == [[1]]
    assert executor.requests[0].principal == "sp:sp-123"
    headers = upstream.seen[0]
    assert headers["authorization"] != f"Bearer {TOKEN}"
    assert headers["x-bzrk-client-name"] == "pytest"
    assert "x-bzrk-username" not in headers and "x-forwarded-for" not in headers
    assert "x-trace-bin" in headers


@pytest.mark.parametrize("token", ["wrong", "explode", None])
def test_bad_credentials_are_unauthenticated(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService], token: str | None
) -> None:
    target, executor, upstream = chain
    code, _ = forwarded_status(target, request("print v = 1"), token=token)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert upstream.seen == [] and executor.requests == []


def test_upstream_statuses_propagate(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService],
) -> None:
    code, details = forwarded_status(chain[0], request("print v = 1", now_unix_nanos=1))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "now_unix_nanos" in details


@pytest.mark.parametrize("chain", [queue_full], indirect=True)
def test_resource_exhausted_propagates(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService],
) -> None:
    code, _ = forwarded_status(chain[0], request("print v = 1"))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.mark.parametrize("chain", [endless], indirect=True)
def test_client_cancel_reaches_the_executor(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService],
) -> None:
    target, executor, _ = chain
    channel, execute = stub(target, prefix="/api/grpc")
    with channel:
        responses = execute(request("print v = 1"), metadata=[("authorization", f"Bearer {TOKEN}")])
        assert payloads([next(responses) for _ in range(3)])[0] == "schema"
        responses.cancel()
        assert executor.closed.wait(5), "upstream executor kept running after the client cancel"


@pytest.mark.parametrize("chain", [endless], indirect=True)
def test_deadline_reaches_the_executor(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService],
) -> None:
    target, executor, _ = chain
    code, _ = forwarded_status(target, request("print v = 1"), timeout=0.5)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    # Through the forwarder the deadline still stops the run (as a transport deadline).
    assert executor.closed.wait(5)


@pytest.mark.parametrize("chain", [wide_rows], indirect=True)
def test_large_streams_pass_through_intact(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService],
) -> None:
    frames = forwarded(chain[0], request("big"))
    batches = [f.batch for f in frames if f.WhichOneof("payload") == "batch"]
    values = [row.values[0].long_value for b in batches for row in b.rows]
    assert values == list(range(50_000))
    assert max(f.ByteSize() for f in frames) <= 4 * 1024 * 1024
    assert batches[-1].is_iteration_complete


def test_unknown_path_and_unreachable_upstream() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    forwarder = GrpcForwarder(dead, lambda p: "token", authenticate)
    with serve(forwarder) as target:
        code, _ = forwarded_status(target, request("print v = 1"))
        assert code == grpc.StatusCode.UNAVAILABLE
        with grpc.insecure_channel(target) as channel, pytest.raises(grpc.RpcError) as info:
            list(channel.unary_stream("/api/grpc/not a method")(b""))
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_principal_from_the_gateway_scope(tmp_path: Path) -> None:
    """The gateway authenticates, sets scope["bzrk.principal"] and root_path, then calls us."""
    keys = InternalKeys.load_or_create(tmp_path)
    executor = ScriptedExecutor(one_row)
    upstream = VerifyingQueryService(
        keys, create_app(SimpleNamespace(meta=None, executor=executor))
    )  # type: ignore[arg-type]
    with serve(upstream) as query_target:
        forwarder = GrpcForwarder(f"http://{query_target}", lambda p: keys.sign(p, "query"))

        async def gateway(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"].startswith("/api/grpc/"):
                inner = dict(scope, root_path="/api/grpc")
                if dict(scope["headers"]).get(b"authorization") == f"Bearer {TOKEN}".encode():
                    inner["bzrk.principal"] = Principal("user", "alice-id", "alice", ("admin",))
                scope = inner
            await forwarder(scope, receive, send)

        with serve(gateway) as target:
            frames = forwarded(target, request("print v = 1"))
            assert table_rows(frames) == [[1]]
            assert executor.requests[0].principal == "user:alice-id"
            code, _ = forwarded_status(target, request("print v = 1"), token="other")
            assert code == grpc.StatusCode.UNAUTHENTICATED


def test_status_only_answers_reach_grpcio_as_their_status() -> None:
    async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await send_status(send, 16, "authentication required: send a bearer token")

    with serve(refuse) as target:
        code, details = forwarded_status(target, request("print v = 1"))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert details == "authentication required: send a bearer token"


class CompressionProbe:
    """In front of the forwarder: records each call's grpc-encoding and message flag byte."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.calls: list[tuple[str | None, int]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        encoding = dict(scope["headers"]).get(b"grpc-encoding")
        first = True

        async def probing() -> Any:
            nonlocal first
            message = await receive()
            if first and message.get("body"):
                first = False
                self.calls.append((encoding.decode() if encoding else None, message["body"][0]))
            return message

        await self.app(scope, probing, send)


def test_a_compressed_request_answers_as_an_uncompressed_one(tmp_path: Path) -> None:
    # grpcio sends a message uncompressed when compressing would not shrink it: a long one.
    query = "print v = 1 // " + "compressible " * 200
    probes: list[CompressionProbe] = []

    def probed(app: ASGIApp) -> ASGIApp:
        probes.append(CompressionProbe(app))
        return probes[0]

    with forwarding(tmp_path, wrap=probed) as (target, executor, upstream):
        plain = forwarded(target, request(query))
        gzip = forwarded(target, request(query), compression=grpc.Compression.Gzip)
        deflate = forwarded(target, request(query), compression=grpc.Compression.Deflate)
    assert probes[0].calls == [(None, 0), ("gzip", 1), ("deflate", 1)]
    for frames in (gzip, deflate):
        assert payloads(frames) == payloads(plain) == ["schema", "batch", "metadata", "done"]
        assert table_rows(frames) == table_rows(plain) == [[1]]
    assert [r.query for r in executor.requests] == [query] * 3
    assert all("grpc-encoding" not in seen for seen in upstream.seen)


def test_a_compressed_request_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    with forwarding(tmp_path, max_request_bytes=4096) as (target, executor, _):
        # 100 kB of one letter compresses to a few hundred bytes: small on the wire only.
        code, details = forwarded_status(
            target,
            request("print v = '" + "a" * 100_000 + "'"),
            compression=grpc.Compression.Gzip,
        )
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "decompressed" in details
    assert executor.requests == []


def test_grpc_over_http1_is_a_clear_426_without_a_traceback(
    chain: tuple[str, ScriptedExecutor, VerifyingQueryService], caplog: pytest.LogCaptureFixture
) -> None:
    import httpx

    target, executor, _ = chain
    message = request("print v = 1").SerializeToString()
    with caplog.at_level("WARNING"), httpx.Client(http1=True, http2=False) as client:
        answer = client.post(
            f"http://{target}/api/grpc/query.QueryService/ExecuteQuery",
            content=b"\x00" + len(message).to_bytes(4, "big") + message,
            headers={"content-type": "application/grpc", "authorization": f"Bearer {TOKEN}"},
        )
    assert answer.status_code == 426
    assert answer.headers["upgrade"] == "h2c"
    assert answer.json()["error"]["code"] == "Http2Required"
    assert "HTTP/2" in answer.json()["error"]["message"]
    assert executor.requests == []
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text
