"""Pins the JSON error shapes of the ADX surface (seed 002 + adx.md §6)."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from bzrk.api.adx.errors import DISPOSITIONS, PROBLEM_TYPE, disposition
from bzrk.engine.events import Column, Error, Location, RowBatch, TableSchema
from tests.api.adx.scripted import ScriptedExecutor, make_app

KUSTO_ERROR_KEYS = {"code", "message", "@type", "@message", "@context", "@permanent"}


def _location_error(request):  # type: ignore[no-untyped-def]
    yield Error(
        code="ParseError",
        message="Syntax error: expected an expression",
        title="Syntax error",
        location=Location(6, 7, 1, 7, 1, 8),
    )


def _db_missing(request):  # type: ignore[no-untyped-def]
    yield Error(code="DatabaseNotFound", message=f"database '{request.database}' not found")


def _late_failure(request):  # type: ignore[no-untyped-def]
    yield TableSchema("PrimaryResult", (Column("n", "long"),))
    yield RowBatch("PrimaryResult", "it", [[1], [2]], False)
    yield Error(code="QueryTimeout", message="query exceeded its 60 s timeout")


@pytest.fixture
def client() -> TestClient:
    executor = ScriptedExecutor(
        {"T | where": _location_error, "T": _db_missing, "Late": _late_failure}
    )
    return TestClient(make_app(executor), headers={"x-ms-client-request-id": "KPC.execute;abc"})


def test_query_error_before_body_has_problem_and_kusto_fields(client: TestClient) -> None:
    response = client.post("/v2/rest/query", json={"db": "default", "csl": "T | where"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    body = response.json()
    assert body["type"] == PROBLEM_TYPE
    assert body["code"] == "ParseError"
    assert body["message"] == "Syntax error: expected an expression"
    assert body["error_details"]["message"] == body["message"]
    assert body["error_details"]["location"]["start_column"] == 7
    error = body["error"]
    assert set(error) >= KUSTO_ERROR_KEYS
    assert error["code"] == "General_BadRequest"
    assert error["@message"] == body["message"]
    assert error["@context"]["clientRequestId"] == "KPC.execute;abc"
    assert error["@permanent"] is True


@pytest.mark.parametrize("checked_by", ["schema provider", "engine"])
def test_unknown_database_envelope(checked_by: str) -> None:
    executor = ScriptedExecutor({"T": _db_missing})
    schema_kw = {} if checked_by == "schema provider" else {"schema": None}
    client = TestClient(make_app(executor, **schema_kw))
    for path in ("/v2/rest/query", "/v1/rest/query"):
        response = client.post(path, json={"db": "nope", "csl": "T"})
        assert response.status_code == 404
        body = response.json()
        assert set(body) == {"error", "status"}
        assert body["status"] == 404
        error = body["error"]
        assert error["code"] == "DatabaseNotFound"
        assert error["message"] == "database 'nope' not found"
        assert error["@type"] == "BzrkClient/v1"
        assert error["@message"] == "database 'nope' not found"
        assert set(error) >= KUSTO_ERROR_KEYS


def test_in_band_failure_after_frames(client: TestClient) -> None:
    response = client.post("/v2/rest/query", json={"db": "default", "csl": "Late"})
    assert response.status_code == 200
    frames = response.json()
    primary = next(f for f in frames if f.get("TableKind") == "PrimaryResult")
    assert primary["Rows"][:2] == [[1], [2]]
    error_row = primary["Rows"][2]
    assert set(error_row) == {"OneApiErrors"}
    assert error_row["OneApiErrors"][0]["error"]["@message"] == "query exceeded its 60 s timeout"
    assert error_row["OneApiErrors"][0]["error"]["@permanent"] is False
    qci = next(f for f in frames if f.get("TableKind") == "QueryCompletionInformation")
    levels = [row[5] for row in qci["Rows"]]
    assert 2 in levels
    completion = frames[-1]
    assert completion["FrameType"] == "DataSetCompletion"
    assert completion["HasErrors"] is True
    assert completion["OneApiErrors"][0]["error"]["code"] == "RequestTimeout"


def test_in_band_failure_v1_has_top_level_exceptions(client: TestClient) -> None:
    response = client.post("/v1/rest/query", json={"db": "default", "csl": "Late"})
    assert response.status_code == 200
    body = response.json()
    assert body["Exceptions"] == ["query exceeded its 60 s timeout"]
    assert body["Tables"][0]["Rows"][-1] == {"Exceptions": ["query exceeded its 60 s timeout"]}


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"not json", 400, "not JSON"),
        (b"[1]", 400, "JSON object"),
        (json.dumps({"db": "default"}).encode(), 400, "'csl'"),
        (json.dumps({"db": "", "csl": "T"}).encode(), 400, "'db'"),
        (json.dumps({"csl": "T"}).encode(), 400, "'db'"),
        (json.dumps({"db": "d", "csl": "T", "properties": "{oops"}).encode(), 400, "properties"),
        (
            json.dumps(
                {"db": "d", "csl": "T", "properties": {"Options": {"servertimeout": "soon"}}}
            ).encode(),
            400,
            "servertimeout",
        ),
    ],
)
def test_bad_requests_are_located(
    client: TestClient, body: bytes, status: int, fragment: str
) -> None:
    response = client.post("/v2/rest/query", content=body)
    assert response.status_code == status
    payload = response.json()
    assert fragment in payload["message"]
    assert payload["error"]["@message"] == payload["message"]


def test_unknown_command_names_it(client: TestClient) -> None:
    response = client.post("/v1/rest/mgmt", json={"db": "", "csl": ".drop table T"})
    assert response.status_code == 400
    assert "'.drop table T'" in response.json()["error"]["@message"]


def test_anonymous_gets_bearer_challenge() -> None:
    client = TestClient(make_app(ScriptedExecutor(), principal=None))
    response = client.post("/v2/rest/query", json={"db": "d", "csl": "T"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "error" in response.json()


def test_auth_metadata_and_unknown_paths_are_404(client: TestClient) -> None:
    assert client.get("/v1/rest/auth/metadata").status_code == 404
    response = client.get("/v2/rest/nothing")
    assert response.status_code == 404 and "error" in response.json()
    assert client.get("/v2/rest/query").status_code == 405


def test_status_table_is_the_one_place() -> None:
    assert disposition("SomethingNew").status == 400  # query-level failures default to 400
    assert {DISPOSITIONS[c].status for c in ("ParseError", "SemanticError", "ExecutionError")} == {
        400
    }
    assert DISPOSITIONS["DatabaseNotFound"].status == 404
    assert DISPOSITIONS["Forbidden"].status == 403
    assert DISPOSITIONS["Throttled"].status == 429


def test_servertimeout_holds_even_if_the_engine_does_not_stop(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import anyio

    from bzrk.api.adx import app as adx_app

    monkeypatch.setattr(adx_app, "DEADLINE_GRACE_S", 0.0)

    async def stuck(request):  # type: ignore[no-untyped-def]
        yield TableSchema("PrimaryResult", (Column("n", "long"),))
        yield RowBatch("PrimaryResult", "it", [[1]], False)
        await anyio.sleep(30)
        yield RowBatch("PrimaryResult", "it", [[2]], True)

    async def stuck_early(request):  # type: ignore[no-untyped-def]
        await anyio.sleep(30)
        yield TableSchema("PrimaryResult", (Column("n", "long"),))

    executor = ScriptedExecutor({"Stuck": stuck, "Early": stuck_early})
    client = TestClient(make_app(executor))
    options = {"Options": {"servertimeout": "00:00:00.300"}}
    response = client.post(
        "/v2/rest/query", json={"db": "default", "csl": "Stuck", "properties": options}
    )
    assert response.status_code == 200
    frames = response.json()
    assert frames[-1]["HasErrors"] is True
    assert "servertimeout" in frames[-1]["OneApiErrors"][0]["error"]["@message"]
    assert "Stuck" in executor.closed  # the run was cancelled, not left behind
    response = client.post(
        "/v2/rest/query", json={"db": "default", "csl": "Early", "properties": options}
    )
    assert response.status_code == 408
    assert response.json()["code"] == "QueryTimeout"


def test_crash_in_command_or_engine_keeps_the_envelope() -> None:
    class BrokenSchema:
        def list_databases(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("catalog offline")

    async def crash(request):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")
        yield  # pragma: no cover

    client = TestClient(make_app(ScriptedExecutor({"Crash": crash}), schema=BrokenSchema()))
    response = client.post("/v1/rest/mgmt", json={"db": "", "csl": ".show databases"})
    assert response.status_code == 503
    assert "catalog offline" in response.json()["error"]["@message"]
    response = client.post("/v2/rest/query", json={"db": "default", "csl": "Crash"})
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "InternalServiceError"
    assert "boom" not in response.text  # internals stay in the log
