"""Replays the Grafana ADX plugin's requests (adx.md §2.3, §9.1) and checks what it reads."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from starlette.testclient import TestClient

from bzrk.engine.events import Column, Done, Metadata, RowBatch, TableSchema
from tests.api.adx.scripted import MEMBER, ScriptedExecutor, make_app

GRAFANA_HEADERS = {
    "Accept": "application/json",
    "Content-Type": "application/json",  # no charset, as the Go client sends
    "x-ms-app": "Grafana-ADX",
    "x-ms-client-request-id": "KGC.raw;9f1c2a7e3b4d5e6f;admin",
}
OPTIONS = {
    "options": {
        "queryconsistency": "strongconsistency",
        "query_results_cache_max_age": "00:00:00",
        "servertimeout": "00:00:30",
    }
}
# A time series panel query after the plugin expanded $__timeFilter and $__timeInterval.
TIME_SERIES = (
    "default\n| where timestamp >= datetime(2024-01-01T00:00:00Z) and "
    "timestamp <= datetime(2024-01-01T06:00:00.5Z)\n"
    "| summarize count() by bin(timestamp, 1h), service = tostring(resource.service)\n"
    "| order by timestamp asc"
)
HOUR = 36_000_000_000
T0 = 17_040_672_000_000_000  # 2024-01-01T00:00:00Z
ALLOWED_COLUMN_TYPES = {
    "string", "guid", "timespan", "dynamic", "datetime", "int", "long", "real", "bool", "decimal",
}  # fmt: skip


def _series_events() -> list:  # type: ignore[type-arg]
    cols = (Column("timestamp", "datetime"), Column("service", "string"), Column("count_", "long"))
    rows = [
        [T0 + i * HOUR, svc, 10 * i + n] for i in range(6) for n, svc in enumerate(("api", "db"))
    ]
    return [
        TableSchema("PrimaryResult", cols),
        RowBatch("PrimaryResult", "it", rows, True),
        Metadata("it"),
        Done(),
    ]


GETSCHEMA = [
    TableSchema(
        "PrimaryResult",
        (
            Column("ColumnName", "string"),
            Column("ColumnOrdinal", "int"),
            Column("DataType", "string"),
            Column("ColumnType", "string"),
        ),
    ),
    RowBatch(
        "PrimaryResult",
        "it",
        [["timestamp", 0, "System.DateTime", "datetime"], ["body", 1, "System.String", "string"]],
        True,
    ),
    Metadata("it"),
    Done(),
]


@pytest.fixture
def executor() -> ScriptedExecutor:
    return ScriptedExecutor(
        {TIME_SERIES: _series_events(), "MyFunc\n | take 50000\n | getschema": GETSCHEMA}
    )


@pytest.fixture
def grafana(executor: ScriptedExecutor) -> TestClient:
    return TestClient(make_app(executor), headers=GRAFANA_HEADERS)


def _post(client: TestClient, path: str, body: dict) -> dict:  # type: ignore[type-arg]
    response = client.post(path, content=json.dumps(body))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def test_health_check_succeeds_for_any_principal(executor: ScriptedExecutor) -> None:
    body = {
        "db": "default",
        "csl": ".show databases schema",
        "querySource": "",
        "properties": OPTIONS,
    }
    for principal_app in (make_app(executor), make_app(executor, principal=MEMBER)):
        client = TestClient(principal_app, headers=GRAFANA_HEADERS)
        assert client.post("/v1/rest/query", content=json.dumps(body)).status_code // 100 == 2


def test_database_list_by_position(grafana: TestClient) -> None:
    tables = _post(grafana, "/v1/rest/mgmt", {"db": "", "csl": ".show databases"})["Tables"]
    names = [c["ColumnName"] for c in tables[0]["Columns"]]
    assert names[:8] == [
        "DatabaseName",
        "PersistentStorage",
        "Version",
        "IsCurrent",
        "DatabaseAccessMode",
        "PrettyName",
        "ReservedSlot1",
        "DatabaseId",
    ]
    shown = [row[5] or row[0] for row in tables[0]["Rows"]]  # PrettyName || DatabaseName
    assert shown == ["default", "other-db"]


@pytest.mark.parametrize(
    "csl", [".show databases schema as json", ".show databases (['default']) schema as json"]
)
def test_schema_discovery_json(grafana: TestClient, csl: str) -> None:
    tables = _post(grafana, "/v1/rest/mgmt", {"db": "", "csl": csl})["Tables"]
    document = json.loads(tables[0]["Rows"][0][0])
    database = document["Databases"]["default"]
    for key in ("Tables", "ExternalTables", "MaterializedViews", "Functions"):
        assert isinstance(database[key], dict)
    columns = database["Tables"]["default"]["OrderedColumns"]
    assert columns[0] == {
        "Name": "timestamp",
        "Type": "System.DateTime",
        "CslType": "datetime",
        "DocString": "",
    }
    assert {c["CslType"] for c in columns} <= ALLOWED_COLUMN_TYPES
    if "(['default'])" in csl:
        assert list(document["Databases"]) == ["default"]


def test_time_series_query(grafana: TestClient, executor: ScriptedExecutor) -> None:
    body = {"db": "default", "csl": TIME_SERIES, "querySource": "visual", "properties": OPTIONS}
    response = grafana.post("/v1/rest/query", content=json.dumps(body))
    assert response.status_code == 200
    raw = response.text
    payload = response.json()
    assert "Exceptions" not in payload
    table = payload["Tables"][0]
    assert [(c["ColumnName"], c["ColumnType"]) for c in table["Columns"]] == [
        ("timestamp", "datetime"),
        ("service", "string"),
        ("count_", "long"),
    ]
    assert {c["ColumnType"] for c in table["Columns"]} <= ALLOWED_COLUMN_TYPES
    assert len(table["Rows"]) == 12
    first = table["Rows"][0]
    assert first == ["2024-01-01T00:00:00Z", "api", 0]
    datetime.fromisoformat(table["Rows"][-1][0].replace("Z", "+00:00"))  # RFC 3339
    assert all(type(row[2]) is int for row in table["Rows"])
    assert ".0," not in raw and ".0]" not in raw  # Grafana's Int64() fails on 3.0
    sent = executor.requests[-1]
    assert sent.query == TIME_SERIES
    assert sent.timeout_ms == 30_000
    assert sent.client_request_id == GRAFANA_HEADERS["x-ms-client-request-id"]


def test_function_column_schema(grafana: TestClient) -> None:
    body = {"db": "default", "csl": "MyFunc\n | take 50000\n | getschema", "properties": OPTIONS}
    table = _post(grafana, "/v1/rest/query", body)["Tables"][0]
    names = [c["ColumnName"] for c in table["Columns"]]
    idx_name, idx_type = names.index("ColumnName"), names.index("ColumnType")
    assert [(r[idx_name], r[idx_type]) for r in table["Rows"]] == [
        ("timestamp", "datetime"),
        ("body", "string"),
    ]


def test_query_error_reads_as_grafana_expects(grafana: TestClient) -> None:
    body = {"db": "default", "csl": "nope | take 1", "properties": OPTIONS}
    response = grafana.post("/v1/rest/query", content=json.dumps(body))
    assert response.status_code == 400
    error = response.json()["error"]
    # Grafana: azure HTTP "400 Bad Request": "<message>".\nReceived "<@type>": "<@message>"
    assert error["message"] and error["@type"] and "nope | take 1" in error["@message"]
