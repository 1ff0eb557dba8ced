"""Discovery tools: databases and tables, fields over real chDB data, saved runs, bundled docs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from jsonschema import Draft202012Validator

from bzrk.api.mcp.app import TOOLS
from bzrk.auth.internal import Principal
from bzrk.engine.request import DatabaseInfo, FieldInfo, TableInfo
from bzrk.meta import schema as meta_schema
from bzrk.testing import client
from tests.api.mcp.harness import make_context, mcp_app, rpc_body, rpc_headers

pytestmark = pytest.mark.anyio
OUTPUTS = {tool.name: Draft202012Validator(tool.output_schema) for tool in TOOLS}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(ctx, name: str, arguments: dict[str, Any], principal: Principal | None = None):  # type: ignore[no-untyped-def]
    app = mcp_app(ctx) if principal is None else mcp_app(ctx, principal)
    body = rpc_body("tools/call", {"name": name, "arguments": arguments})
    async with client(app) as http:
        response = await http.post(
            "/mcp", content=json.dumps(body), headers=rpc_headers("tools/call", name)
        )
    assert response.status_code == 200
    result = response.json()["result"]
    if not result["isError"]:
        OUTPUTS[name].validate(result["structuredContent"])
    return result


class ChdbSchemaProvider:
    """A small SchemaProvider over a real ClickHouse table (the storage helper ships the real one)."""

    def __init__(self, backend: Any, database: str) -> None:
        self.backend = backend
        self.database = database

    def list_databases(self) -> list[DatabaseInfo]:
        return [DatabaseInfo("db-1", "default", ("default",))]

    def list_tables(self, database: str) -> list[TableInfo]:
        if database != "default":
            raise LookupError(f"database '{database}' not found; call list_databases")
        cols = self.backend.query_arrow(
            f"SELECT name, type FROM system.columns WHERE database = '{self.database}' "
            "AND table = 'logs' ORDER BY position"
        ).to_pylist()
        kql = {"String": "string", "Int64": "long", "JSON": "dynamic"}
        columns = tuple((c["name"], kql.get(c["type"], "datetime")) for c in cols)
        return [TableInfo("t-1", "default", "default", columns, 30)]

    def discover_fields(self, database: str, table: str, **kw: Any) -> list[FieldInfo]:
        since = kw["since_ticks"] // 10_000_000
        rows = self.backend.query_arrow(
            "SELECT path, count() AS n, any(v) AS sample FROM ("
            " SELECT arrayJoin(JSONAllPaths(attributes)) AS path,"
            " toString(attributes.^path) AS v FROM "
            f" {self.database}.logs WHERE timestamp >= fromUnixTimestamp({since}))"
            " GROUP BY path ORDER BY path"
        ).to_pylist()
        total = self.backend.query_arrow(
            f"SELECT count() AS c FROM {self.database}.logs WHERE timestamp >= fromUnixTimestamp({since})"
        ).to_pylist()[0]["c"]
        found = [
            FieldInfo(f"attributes.{r['path']}", "string", r["n"] / total, None, ()) for r in rows
        ]
        name_filter = kw.get("name_filter")
        return [f for f in found if not name_filter or name_filter in f.path]


async def test_list_databases_and_tables_from_the_metadata_store(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    result = await call(ctx, "list_databases", {})
    databases = result["structuredContent"]["databases"]
    assert [d["name"] for d in databases] == ["default"]
    assert databases[0]["tables"] == ["default"]
    tables = await call(ctx, "list_tables", {"database": "default"})
    assert [t["name"] for t in tables["structuredContent"]["tables"]] == ["default"]
    missing = await call(ctx, "list_tables", {"database": "nope"})
    assert missing["isError"] is True and "nope" in missing["content"][0]["text"]
    unavailable = await call(ctx, "discover_fields", {"database": "default", "table": "default"})
    assert unavailable["isError"] is True
    ctx.meta.close()


async def test_discover_fields_over_real_data(tmp_path: Path, chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    chdb_backend.execute(
        f"CREATE TABLE {ch_database}.logs (timestamp DateTime64(7, 'UTC'), body String,"
        " attributes JSON) ENGINE = MergeTree ORDER BY timestamp"
    )
    chdb_backend.execute(
        f"INSERT INTO {ch_database}.logs VALUES "
        '(now64(7) - 60, \'GET /a\', \'{"http.route": "/a", "user": "x"}\'),'
        "(now64(7) - 120, 'GET /b', '{\"http.route\": \"/b\"}'),"
        "(now64(7) - 86400 * 3, 'old', '{\"legacy.flag\": \"1\"}')"
    )
    provider = ChdbSchemaProvider(chdb_backend, ch_database)
    ctx = make_context(tmp_path, components={"schema": provider})
    tables = await call(ctx, "list_tables", {"database": "default"})
    columns = tables["structuredContent"]["tables"][0]["columns"]
    assert {"name": "attributes", "type": "dynamic"} in columns
    recent = await call(ctx, "discover_fields", {"database": "default", "table": "default"})
    paths = {f["path"]: f["frequency"] for f in recent["structuredContent"]["fields"]}
    assert paths == {"attributes.http.route": 1.0, "attributes.user": 0.5}
    assert "attributes.http.route" in recent["content"][0]["text"]
    wide = await call(
        ctx,
        "discover_fields",
        {"database": "default", "table": "default", "since": "7d ago", "name_filter": "legacy"},
    )
    assert [f["path"] for f in wide["structuredContent"]["fields"]] == ["attributes.legacy.flag"]
    bad_time = await call(
        ctx, "discover_fields", {"database": "default", "table": "default", "since": "last tuesday"}
    )
    assert bad_time["isError"] is True and "last tuesday" in bad_time["content"][0]["text"]
    ctx.meta.close()


def insert_run(ctx, run_id: str, principal: str) -> None:  # type: ignore[no-untyped-def]
    with ctx.meta.begin() as conn:
        conn.execute(
            sa.insert(meta_schema.runs).values(
                id=run_id,
                query="default | count",
                database="default",
                parameters={"since": "1h ago"},
                principal=principal,
                surface="mcp",
                status="complete",
                started_at=datetime(2026, 11, 30, 1, 0, tzinfo=UTC),
                finished_at=datetime(2026, 11, 30, 1, 0, 2, tzinfo=UTC),
                progress={"coverage": 1.0},
                result={"columns": [{"name": "Count", "type": "long"}], "rows": [[42]]},
                error=None,
            )
        )


async def test_get_run_reads_the_callers_own_run(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    insert_run(ctx, "run-mine", "sp:tester")
    insert_run(ctx, "run-theirs", "user:else")
    mine = await call(ctx, "get_run", {"run_id": "run-mine"})
    structured = mine["structuredContent"]
    assert structured["status"] == "complete"
    assert structured["result"]["rows"] == [[42]]
    assert structured["parameters"] == {"since": "1h ago"}
    assert "default | count" in mine["content"][0]["text"]
    theirs = await call(ctx, "get_run", {"run_id": "run-theirs"})
    assert theirs["isError"] is True
    missing = await call(ctx, "get_run", {"run_id": "nope"})
    assert missing["isError"] is True
    assert theirs["content"][0]["text"].replace("run-theirs", "X") == missing["content"][0][
        "text"
    ].replace("nope", "X")
    admin = await call(
        ctx, "get_run", {"run_id": "run-theirs"}, Principal("user", "admin", "admin", ("admin",))
    )
    assert admin["isError"] is False
    ctx.meta.close()


async def test_get_docs_topics_and_pages(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    index = await call(ctx, "get_docs", {})
    topics = [t["topic"] for t in index["structuredContent"]["topics"]]
    for topic in (
        "kql",
        "operators",
        "functions",
        "time",
        "stop_when",
        "trace-find",
        "otel-fields",
    ):
        assert topic in topics
    page = await call(ctx, "get_docs", {"topic": "stop_when"})
    assert "rows >= 1" in page["content"][0]["text"]
    assert page["structuredContent"]["topic"] == "stop_when"
    bad = await call(ctx, "get_docs", {"topic": "nope"})
    assert bad["isError"] is True
    ctx.meta.close()
