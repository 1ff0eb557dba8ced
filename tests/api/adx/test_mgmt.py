"""Management commands over the SchemaProvider protocol (adx.md §9)."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from tests.api.adx.scripted import MEMBER, ScriptedExecutor, make_app


@pytest.fixture
def client() -> TestClient:
    return TestClient(make_app(ScriptedExecutor()))


def _table(client: TestClient, csl: str, db: str = "default") -> dict:  # type: ignore[type-arg]
    response = client.post("/v1/rest/mgmt", json={"db": db, "csl": csl})
    assert response.status_code == 200, response.text
    tables = response.json()["Tables"]
    assert len(tables) == 1  # commands answer one table, no table of contents
    return tables[0]


def _names(table: dict) -> list[str]:  # type: ignore[type-arg]
    return [c["ColumnName"] for c in table["Columns"]]


def test_show_tables_and_subsets(client: TestClient) -> None:
    table = _table(client, ".show tables")
    assert _names(table) == ["TableName", "DatabaseName", "Folder", "DocString"]
    assert [r[0] for r in table["Rows"]] == ["default", "metrics"]
    assert [r[0] for r in _table(client, ".show tables (metrics, nope)")["Rows"]] == ["metrics"]
    assert _table(client, ".show tables", db="other-db")["Rows"] == []


def test_show_table_schema_json_and_csl(client: TestClient) -> None:
    table = _table(client, ".show table metrics schema as json")
    assert _names(table) == ["TableName", "Schema", "DatabaseName", "Folder", "DocString"]
    schema = json.loads(table["Rows"][0][1])
    assert schema["Name"] == "metrics"
    assert [(c["Name"], c["CslType"], c["Type"]) for c in schema["OrderedColumns"]] == [
        ("timestamp", "datetime", "System.DateTime"),
        ("value", "real", "System.Double"),
    ]
    # Berserk's `.show table T schema` (no `as json`) is the same table.
    assert _table(client, ".show table metrics schema")["Rows"] == table["Rows"]
    csl = _table(client, ".show table ['metrics'] cslschema")
    assert csl["Rows"][0][1] == "timestamp:datetime,value:real"


def test_show_database_schema_forms(client: TestClient) -> None:
    rows = _table(client, ".show database default schema", db="")["Rows"]
    assert ["default", "metrics", "value", "System.Double"] in [r[:4] for r in rows]
    doc = json.loads(_table(client, ".show database ['default'] schema as json")["Rows"][0][0])
    assert list(doc["Databases"]) == ["default"]
    doc = json.loads(
        _table(client, ".show databases (default, 'other-db') schema as json with (Tables=True)")[
            "Rows"
        ][0][0]
    )
    assert list(doc["Databases"]) == ["default", "other-db"]
    doc = json.loads(_table(client, ".show schema as json")["Rows"][0][0])  # the whole cluster
    assert list(doc["Databases"]) == ["default", "other-db"]


def test_show_functions_and_version(client: TestClient) -> None:
    functions = _table(client, ".show functions")
    assert _names(functions) == ["Name", "Parameters", "Body", "Folder", "DocString"]
    version = _table(client, "  .SHOW   VERSION ;")
    assert version["Rows"][0][0] == "0.1.0"
    assert version["Rows"][0][1].endswith("Z")


def test_errors(client: TestClient) -> None:
    response = client.post("/v1/rest/mgmt", json={"db": "", "csl": ".show database nope schema"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "DatabaseNotFound"
    response = client.post("/v1/rest/mgmt", json={"db": "", "csl": ".show tables"})
    assert response.status_code == 400
    assert "needs a database" in response.json()["message"]
    response = client.post(
        "/v1/rest/mgmt", json={"db": "default", "csl": ".show table x schema as json"}
    )
    assert response.status_code == 400
    assert "table 'x' not found" in response.json()["error"]["@message"]
    response = client.post("/v1/rest/mgmt", json={"db": "default", "csl": "T | take 1"})
    assert response.status_code == 400
    # A member sees what they may query (ADX's .show databases), and nothing else.
    member = TestClient(make_app(ScriptedExecutor(), principal=MEMBER))
    response = member.post("/v1/rest/mgmt", json={"db": "", "csl": ".show databases"})
    assert response.status_code == 200
    assert [r[0] for r in response.json()["Tables"][0]["Rows"]] == ["default"]
    schema = member.post("/v1/rest/mgmt", json={"db": "", "csl": ".show databases schema"})
    assert {r[0] for r in schema.json()["Tables"][0]["Rows"]} == {"default"}
    for csl in (".show database ['other-db'] schema", ".show databases (['other-db']) schema"):
        refused = member.post("/v1/rest/mgmt", json={"db": "", "csl": csl})
        assert refused.status_code == 403, csl
        assert refused.json()["code"] == "AccessDenied"
        assert refused.json()["error"]["code"] == "Forbidden"
    tables = member.post("/v1/rest/mgmt", json={"db": "other-db", "csl": ".show tables"})
    assert tables.status_code == 403


def test_commands_on_v2_and_without_schema_provider(client: TestClient) -> None:
    frames = client.post("/v2/rest/query", json={"db": "default", "csl": ".show tables"}).json()
    primary = next(f for f in frames if f.get("TableKind") == "PrimaryResult")
    assert [r[0] for r in primary["Rows"]] == ["default", "metrics"]
    bare = TestClient(make_app(ScriptedExecutor(), schema=None))
    response = bare.post("/v1/rest/mgmt", json={"db": "", "csl": ".show databases"})
    assert response.status_code == 503
    assert "schema discovery" in response.json()["message"]
