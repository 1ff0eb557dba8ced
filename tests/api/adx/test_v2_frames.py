"""The v2 frame layouts as encoders of scripted event streams (adx.md §4-§5, seed 002)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anyio
import httpx
import pytest
from starlette.testclient import TestClient

from bzrk.engine.events import (
    Column,
    Done,
    Metadata,
    Progress,
    RowBatch,
    TableSchema,
    Visualization,
)
from tests.api.adx.scripted import LoopbackServer, ScriptedExecutor, make_app, simple_result

LONG = (Column("n", "long"),)

TWO_SNAPSHOTS = [
    TableSchema("PrimaryResult", LONG),
    TableSchema("Totals", (Column("s", "string"),)),
    Progress(coverage=0.25),
    RowBatch("PrimaryResult", "a", [[1], [2]], False),
    RowBatch("PrimaryResult", "a", [[3]], True),
    RowBatch("Totals", "a", [["partial"]], True),
    Metadata("a"),
    Progress(coverage=0.5),
    RowBatch("PrimaryResult", "b", [[10]], True),
    Metadata("b", visualization=Visualization("barchart")),
    Progress(coverage=1.0),
    Done(),
]
INTERLEAVED = [
    TableSchema("PrimaryResult", LONG),
    TableSchema("Totals", (Column("s", "string"),)),
    TableSchema("Third", LONG),
    RowBatch("Third", "i", [[7]], True),
    RowBatch("Totals", "i", [["x"]], False),
    RowBatch("PrimaryResult", "i", [[1]], False),
    RowBatch("Totals", "i", [["y"]], True),
    RowBatch("PrimaryResult", "i", [[2]], True),
    Metadata("i"),
    Done(),
]


@pytest.fixture
def executor() -> ScriptedExecutor:
    return ScriptedExecutor(
        {
            "Two": TWO_SNAPSHOTS,
            "Interleaved": INTERLEAVED,
            "One": TWO_SNAPSHOTS[:2] + TWO_SNAPSHOTS[3:7] + [Done()],
            "Empty": simple_result(LONG, []),
        }
    )


@pytest.fixture
def client(executor: ScriptedExecutor) -> TestClient:
    return TestClient(make_app(executor))


def _post(client: TestClient, csl: str, **options: Any) -> tuple[str, list[dict[str, Any]]]:
    body: dict[str, Any] = {"db": "default", "csl": csl}
    if options:
        body["properties"] = {"Options": options}
    response = client.post("/v2/rest/query", json=body)
    assert response.status_code == 200, response.text
    return response.text, response.json()


def test_default_layout_and_key_order(client: TestClient, executor: ScriptedExecutor) -> None:
    text, frames = _post(client, "One")
    assert [f["FrameType"] for f in frames] == [
        "DataSetHeader",
        "DataTable",
        "DataTable",
        "DataTable",
        "DataTable",
        "DataSetCompletion",
    ]
    assert frames[0] == {
        "FrameType": "DataSetHeader",
        "IsProgressive": False,
        "Version": "v2.0",
        "IsFragmented": False,
        "ErrorReportingPlacement": "InData",
    }
    kinds = [f.get("TableKind") for f in frames[1:-1]]
    assert kinds == [
        "PrimaryResult",
        "PrimaryResult",
        "QueryProperties",
        "QueryCompletionInformation",
    ]
    assert frames[1]["Rows"] == [[1], [2], [3]]
    assert frames[2]["TableName"] == "Totals" and frames[2]["Rows"] == [["partial"]]
    ids = [f["TableId"] for f in frames[1:-1]]
    assert len(set(ids)) == 4
    # Python's streaming parser: FrameType first, Rows last, in every frame.
    for raw in json.loads(text, object_pairs_hook=lambda pairs: pairs):
        keys = [k for k, _ in raw]
        assert keys[0] == "FrameType"
        if "Rows" in keys:
            assert keys[-1] == "Rows"
    assert executor.requests[-1].progressive is False
    allowed = {"PrimaryResult", "QueryProperties", "QueryCompletionInformation", "TableOfContents"}
    assert {f["TableKind"] for f in frames if "TableKind" in f} <= allowed


def test_interleaved_tables_come_out_whole_in_schema_order(client: TestClient) -> None:
    _, frames = _post(client, "Interleaved")
    primaries = [f for f in frames if f.get("TableKind") == "PrimaryResult"]
    assert [(t["TableName"], t["Rows"]) for t in primaries] == [
        ("PrimaryResult", [[1], [2]]),
        ("Totals", [["x"], ["y"]]),
        ("Third", [[7]]),
    ]


def test_empty_result_still_has_its_table(client: TestClient) -> None:
    _, frames = _post(client, "Empty")
    primary = next(f for f in frames if f.get("TableKind") == "PrimaryResult")
    assert primary["Rows"] == [] and primary["Columns"] == [
        {"ColumnName": "n", "ColumnType": "long"}
    ]


def test_progressive_replaces_per_snapshot(client: TestClient, executor: ScriptedExecutor) -> None:
    _, frames = _post(client, "Two", results_progressive_enabled=True)
    assert executor.requests[-1].progressive is True
    assert frames[0]["IsProgressive"] is True and frames[0]["IsFragmented"] is True
    headers = [f for f in frames if f["FrameType"] == "TableHeader"]
    ids = {h["TableName"]: h["TableId"] for h in headers}
    fragments = [
        (f["TableId"], f["TableFragmentType"], f["Rows"])
        for f in frames
        if f["FrameType"] == "TableFragment"
    ]
    p, t = ids["PrimaryResult"], ids["Totals"]
    assert fragments == [
        (p, "DataReplace", [[1], [2]]),
        (p, "DataAppend", [[3]]),
        (t, "DataReplace", [["partial"]]),
        (p, "DataReplace", [[10]]),
        (t, "DataReplace", []),  # not in snapshot "b": cleared
    ]
    progress = [f["TableProgress"] for f in frames if f["FrameType"] == "TableProgress"]
    assert progress[0] == 25.0 and progress[-1] == 100.0
    completions = {
        f["TableId"]: f["RowCount"] for f in frames if f["FrameType"] == "TableCompletion"
    }
    assert completions == {p: 1, t: 0}
    props = next(f for f in frames if f.get("TableKind") == "QueryProperties")
    assert '"Visualization":"barchart"' in props["Rows"][0][2]
    assert frames[-1] == {"FrameType": "DataSetCompletion", "HasErrors": False, "Cancelled": False}


def test_fragmented_non_progressive(client: TestClient, executor: ScriptedExecutor) -> None:
    _, frames = _post(client, "One", results_v2_fragment_primary_tables=True)
    assert executor.requests[-1].progressive is False
    assert frames[0]["IsProgressive"] is False and frames[0]["IsFragmented"] is True
    kinds = {f["TableFragmentType"] for f in frames if f["FrameType"] == "TableFragment"}
    assert kinds == {"DataAppend"}
    assert not [f for f in frames if f["FrameType"] == "TableProgress"]


def test_second_snapshot_without_progressive_is_reported_in_band(client: TestClient) -> None:
    # The executor ignores progressive=False here: the encoder must not emit wrong data.
    _, frames = _post(client, "Two")
    primaries = [f for f in frames if f.get("TableKind") == "PrimaryResult"]
    assert primaries[0]["Rows"] == [[1], [2], [3]]
    # the open (last) table carries the error row
    assert primaries[-1]["Rows"][-1]["OneApiErrors"][0]["error"]["@message"].startswith(
        "the engine sent a second snapshot"
    )
    assert frames[-1]["HasErrors"] is True


@pytest.mark.parametrize("server_kind", ["uvicorn", "hypercorn"])
def test_v2_streams_before_the_run_ends_and_cancels_on_disconnect(server_kind: str) -> None:
    finished = threading.Event()

    async def slow(request):  # type: ignore[no-untyped-def]
        yield TableSchema("PrimaryResult", LONG)
        yield RowBatch("PrimaryResult", "i", [[1]], False)
        for _ in range(1000):  # ~10 s of engine work, unless cancelled
            await anyio.sleep(0.01)
            yield Progress()
        finished.set()
        yield RowBatch("PrimaryResult", "i", [[2]], True)
        yield Metadata("i")
        yield Done()

    executor = ScriptedExecutor({"Slow": slow})
    with LoopbackServer(make_app(executor), server_kind) as server:
        body = {"db": "default", "csl": "Slow"}
        with httpx.stream("POST", f"{server.url}/v2/rest/query", json=body, timeout=10) as resp:
            assert resp.status_code == 200
            seen = b""
            for chunk in resp.iter_raw():
                seen += chunk
                if b"[[1]" in seen:
                    break
        # the client went away mid-run: the run is closed (cancelled), not finished
        deadline = time.monotonic() + 5
        while "Slow" not in executor.closed and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "Slow" in executor.closed
        assert not finished.is_set()


def test_progressive_failure_after_frames_ends_with_has_errors() -> None:
    from bzrk.engine.events import Error

    events = [*TWO_SNAPSHOTS[:7], Error(code="BackendUnavailable", message="store went away")]
    client = TestClient(make_app(ScriptedExecutor({"Breaks": events})))
    _, frames = _post(client, "Breaks", results_progressive_enabled=True)
    errors = [
        row
        for f in frames
        if f["FrameType"] == "TableFragment"
        for row in f["Rows"]
        if isinstance(row, dict)
    ]
    assert errors[0]["OneApiErrors"][0]["error"]["@message"] == "store went away"
    assert frames[-1]["HasErrors"] is True
    assert frames[-1]["OneApiErrors"][0]["error"]["code"] == "ServiceUnavailable"
    qci = next(f for f in frames if f.get("TableKind") == "QueryCompletionInformation")
    assert [row[5] for row in qci["Rows"]][-1] == 2
