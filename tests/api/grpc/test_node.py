"""The gRPC layer as a Node client sees it: @grpc/grpc-js + @grpc/proto-loader (keepCase, longs
as String, oneofs), directly and through the gateway forwarder. Executor scripted, as in
test_server.py; the same client runs against a real ``bzrk dev`` in test_e2e.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from bzrk.api.grpc.service import create_app
from bzrk.auth.internal import InternalKeys
from bzrk.engine import events as ev
from bzrk.engine.request import QueryRequest
from bzrk.gateway.grpc_forward import GrpcForwarder

from .helpers import (
    ScriptedExecutor,
    WithPrincipal,
    check_node_value_table,
    node_call,
    node_ready,
    node_value,
    serve,
    value_table_events,
)
from .test_forward import TOKEN, VerifyingQueryService, authenticate
from .test_server import endless, query_error, snapshots

pytestmark = pytest.mark.skipif(bool(reason := node_ready()), reason=reason or "")


def multi_table(request: QueryRequest) -> list[ev.Event]:
    cols = (ev.Column("name", "string"), ev.Column("count", "long"))
    return [
        ev.TableSchema(ev.PRIMARY_RESULT, cols),
        ev.TableSchema("Totals", (ev.Column("total", "long"),)),
        ev.RowBatch(ev.PRIMARY_RESULT, "i", [["a", 1], ["b", 2]], True),
        ev.RowBatch("Totals", "i", [[3]], True),
        ev.Metadata("i"),
        ev.Done(),
    ]


SCRIPTS = {
    "values": lambda r: value_table_events(),
    "error": query_error,
    "endless": endless,
    "snapshots": snapshots,
    "multi": multi_table,
}


@pytest.fixture(params=["direct", "gateway"])
def route(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict]:  # type: ignore[type-arg]
    """A scripted query service, reached directly or through the forwarder at /api/grpc."""
    executor = ScriptedExecutor(lambda r: SCRIPTS[r.query](r))
    app = create_app(SimpleNamespace(meta=None, executor=executor))  # type: ignore[arg-type]
    if request.param == "direct":
        with serve(WithPrincipal(app)) as target:
            yield {"target": target, "executor": executor, "options": {}}
        return
    keys = InternalKeys.load_or_create(tmp_path)
    with serve(VerifyingQueryService(keys, app)) as upstream:
        forwarder = GrpcForwarder(upstream, lambda p: keys.sign(p, "query"), authenticate)
        with serve(forwarder) as target:
            options = {"prefix": "/api/grpc", "token": TOKEN}
            yield {"target": target, "executor": executor, "options": options}


def test_value_table(route: dict) -> None:  # type: ignore[type-arg]
    check_node_value_table(node_call(route["target"], "values", **route["options"]))


def test_multi_table(route: dict) -> None:  # type: ignore[type-arg]
    result = node_call(route["target"], "multi", **route["options"])
    frames = result["frames"]
    assert [f["payload"] for f in frames] == [
        "schema",
        "schema",
        "batch",
        "batch",
        "metadata",
        "done",
    ]
    assert [f["schema"]["name"] for f in frames[:2]] == ["PrimaryResult", "Totals"]
    primary = frames[2]["batch"]
    assert primary["table_name"] == "PrimaryResult" and primary["is_iteration_complete"] is True
    assert [[node_value(c) for c in r["values"]] for r in primary["rows"]] == [
        ["a", "1"],
        ["b", "2"],
    ]
    assert frames[3]["batch"]["rows"][0]["values"][0]["long_value"] == "3"


def test_error_frame(route: dict) -> None:  # type: ignore[type-arg]
    result = node_call(route["target"], "error", **route["options"])
    assert result["status"]["code"] == 0
    (frame,) = result["frames"]
    assert frame["payload"] == "error"
    assert frame["error"]["code"] == "ParseError"
    assert frame["error"]["location"]["start_column"] == 7


def test_iterations(route: dict) -> None:  # type: ignore[type-arg]
    frames = node_call(route["target"], "snapshots", **route["options"])["frames"]
    ids = [f["batch"]["result_iteration_id"] for f in frames if f["payload"] == "batch"]
    assert ids == ["snap-1", "snap-2", "snap-3"]
    assert [f["payload"] for f in frames].count("metadata") == 3
    assert frames[-1]["payload"] == "done"
    progress = [f["progress"]["rows_processed"] for f in frames if f["payload"] == "progress"]
    assert progress == ["100", "200", "300"]


def test_missing_database_status(route: dict) -> None:  # type: ignore[type-arg]
    result = node_call(route["target"], "values", database="", **route["options"])
    assert result["status"]["code"] == 3  # INVALID_ARGUMENT
    assert route["executor"].requests == []


def test_cancel_stops_the_executor(route: dict) -> None:  # type: ignore[type-arg]
    result = node_call(route["target"], "endless", cancelAfter=3, **route["options"])
    assert result["status"]["code"] == 1  # CANCELLED
    assert route["executor"].closed.wait(5), "executor kept running after the Node client cancelled"


def test_gateway_refuses_bad_credentials(route: dict) -> None:  # type: ignore[type-arg]
    if "prefix" not in route["options"]:
        pytest.skip("credentials are the gateway's concern")
    options = {**route["options"], "token": "nope"}
    result = node_call(route["target"], "values", **options)
    assert result["status"]["code"] == 16  # UNAUTHENTICATED
