"""End to end: the real ``mcp`` client through bzrk dev's gateway with the dev service-principal token.

These need the gateway's ``/mcp`` forwarding and the real query executor, which land on other
branches; until then each test skips with the reason instead of faking the missing part.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def ingest_logs(creds: dict[str, str]) -> None:
    """A few OTLP/JSON log records through the real ingest path (the demo loader may be absent)."""
    now_ns = time.time_ns()
    records = [
        {
            "timeUnixNano": str(now_ns - i * 60_000_000_000),
            "severityText": "ERROR" if i % 3 == 0 else "INFO",
            "body": {"stringValue": f"mcp e2e record {i}"},
            "attributes": [{"key": "http.route", "value": {"stringValue": f"/r/{i % 2}"}}],
        }
        for i in range(6)
    ]
    payload = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "mcp-e2e"}}]
                },
                "scopeLogs": [{"scope": {"name": "test"}, "logRecords": records}],
            }
        ]
    }
    response = httpx.post(
        creds["otlp_http"] + "/v1/logs",
        json=payload,
        headers={"authorization": f"Bearer {creds['ingest_token']}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def gateway(dev_server) -> dict[str, str]:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    url = creds["gateway"] + "/mcp"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    headers = {
        "authorization": f"Bearer {creds['token']}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": "server/discover",
    }
    probe = httpx.post(url, json=body, headers=headers, timeout=10)
    if probe.status_code != 200 or "result" not in probe.json():
        pytest.skip(f"needs the gateway's /mcp forwarding (got HTTP {probe.status_code})")
    ingest_logs(creds)
    return {"url": url, "token": creds["token"]}


def connect(gateway: dict[str, str], **options: Any) -> Client:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {gateway['token']}"},
        timeout=httpx2.Timeout(30, read=120),
    )
    return Client(
        streamable_http_client(gateway["url"], http_client=http),
        mode=VERSION,
        cache=None,
        **options,
    )


def needs_executor(result: Any) -> None:
    """Skip (outside the client's task group, so the reason survives) without the engine."""
    if result.is_error and "NotImplemented" in result.content[0].text:
        pytest.skip("needs the real executor")


def test_unauthenticated_post_is_challenged(gateway: dict[str, str]) -> None:
    response = httpx.post(gateway["url"], json={}, timeout=10)
    assert response.status_code == 401
    assert "resource_metadata=" in response.headers["www-authenticate"]


async def test_tools_through_the_gateway(gateway: dict[str, str]) -> None:
    async with connect(gateway) as mcp:
        tools = [t.name for t in (await mcp.list_tools()).tools]
        assert tools == [
            "list_databases",
            "list_tables",
            "discover_fields",
            "query",
            "get_run",
            "get_docs",
            "list_alerts",
            "get_alert",
            "create_alert",
            "update_alert",
            "delete_alert",
            "list_workflows",
            "run_workflow",
            "list_connections",
            "list_dashboards",
            "get_dashboard",
        ]
        databases = await mcp.call_tool("list_databases", {})
        assert "default" in [d["name"] for d in databases.structured_content["databases"]]
        tables = await mcp.call_tool("list_tables", {"database": "default"})
        assert "default" in [t["name"] for t in tables.structured_content["tables"]]
        fields = await mcp.call_tool(
            "discover_fields", {"database": "default", "table": "default", "since": "1d ago"}
        )
        assert not fields.is_error, fields.content[0].text
        paths = {f["path"] for f in fields.structured_content["fields"]}
        assert {"resource.service.name", "attributes.http.route", "severity_text"} <= paths, paths
        filtered = await mcp.call_tool(
            "discover_fields",
            {
                "database": "default",
                "table": "default",
                "since": "1d ago",
                "name_filter": "service",
            },
        )
        assert all("service" in f["path"] for f in filtered.structured_content["fields"])
        missing = await mcp.call_tool("list_tables", {"database": "no_such_db"})
        assert missing.is_error
        docs = await mcp.call_tool("get_docs", {"topic": "otel-fields"})
        assert "severity_text" in docs.content[0].text


async def test_query_demo_data_and_read_the_run_back(gateway: dict[str, str]) -> None:
    async with connect(gateway) as mcp:
        result = await mcp.call_tool(
            "query",
            {
                "query": "default | summarize n = count()",
                "database": "default",
                "since": "1d ago",
                "timeout_ms": 60_000,
            },
        )
        run = None
        if not result.is_error and result.structured_content["run_id"]:
            run = await mcp.call_tool("get_run", {"run_id": result.structured_content["run_id"]})
    needs_executor(result)
    assert not result.is_error, result.content[0].text
    structured = result.structured_content
    assert structured["status"] == "complete"
    assert structured["columns"] == [{"name": "n", "type": "long"}]
    assert structured["rows"][0][0] > 0
    assert run is not None, "the query returned no run_id"
    assert not run.is_error, run.content[0].text
    assert run.structured_content["query"] == "default | summarize n = count()"


async def test_stop_when_existence_and_sse_progress(gateway: dict[str, str]) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with connect(gateway) as mcp:
        result = await mcp.call_tool(
            "query",
            {
                "query": "default | where severity_text == 'ERROR'",
                "database": "default",
                "since": "1d ago",
                "stop_when": "rows >= 1",
                "timeout_ms": 60_000,
            },
            progress_callback=on_progress,
        )
    needs_executor(result)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["status"] in ("stopped_early", "complete")
    assert result.structured_content["row_count"] == 1
    assert progress == sorted(set(progress))


async def test_timeout_above_cap_is_a_tool_error(gateway: dict[str, str]) -> None:
    async with connect(gateway) as mcp:
        result = await mcp.call_tool(
            "query",
            {"query": "default | count", "database": "default", "timeout_ms": 300_001},
        )
        assert result.is_error
        assert "300000" in result.content[0].text


async def test_snapshot_logs_and_soft_budget_through_the_gateway(gateway: dict[str, str]) -> None:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with connect(gateway, log_level="info", logging_callback=on_log) as mcp:
        stopped = await mcp.call_tool(
            "query",
            {
                "query": "default | summarize n = count()",
                "database": "default",
                "since": "1d ago",
                "stop_when": "n >= 1",
                "timeout_ms": 60_000,
            },
        )
        budget = await mcp.call_tool(
            "query",
            {
                "query": "default | summarize n = count() by bin(timestamp, 1m)",
                "database": "default",
                "since": "1d ago",
                "timeout_ms": 1,
            },
        )
    needs_executor(stopped)
    assert stopped.structured_content["status"] == "stopped_early"
    assert stopped.structured_content["rows"][0][0] >= 1
    assert logs and logs[0].data["event"] == "snapshot"
    assert any(entry.data["event"] == "stop" for entry in logs)
    assert not budget.is_error, budget.content[0].text
    if budget.structured_content["status"] == "soft_budget":
        assert budget.structured_content["partial"] is True
        assert budget.structured_content["coverage"] < 1
        assert any("timeout_ms" in note for note in budget.structured_content["notes"])
    else:  # the engine finished inside 1 ms: nothing to cut
        assert budget.structured_content["status"] == "complete"


def doc_examples() -> tuple[list[str], list[dict[str, Any]]]:
    """The KQL snippets and the query-tool JSON examples of the bundled get_docs pages."""
    import json
    import re

    from bzrk.api.mcp.catalog_tools import DOCS

    queries: list[str] = []
    calls: list[dict[str, Any]] = []
    for text in DOCS.values():
        for lang, block in re.findall(r"```(\w+)\n(.*?)```", text, re.S):
            if lang == "json":
                calls.append(json.loads(block))
            elif lang == "kql":
                for snippet in re.split(r"\n\s*\n", block):
                    lines = [ln for ln in snippet.splitlines() if not ln.strip().startswith("//")]
                    if any(ln.strip() for ln in lines):
                        queries.append("\n".join(lines))
    return queries, calls


async def test_every_docs_example_runs(gateway: dict[str, str]) -> None:
    """get_docs must not teach queries bzrk rejects: each example runs on the real engine."""
    queries, calls = doc_examples()
    assert len(queries) >= 5 and len(calls) >= 3
    results = []
    async with connect(gateway) as mcp:
        for query in queries:
            args = {"query": query, "database": "default", "since": "1d ago", "timeout_ms": 60_000}
            results.append((query, await mcp.call_tool("query", args)))
        for args in calls:
            results.append(
                (args["query"], await mcp.call_tool("query", {**args, "timeout_ms": 60_000}))
            )
    needs_executor(results[0][1])
    failures = [(q, r.content[0].text) for q, r in results if r.is_error]
    # Known engine bug (reported): percentile(x, 95) reaches ClickHouse unscaled.
    known = [f for f in failures if "Quantile level is out of range" in f[1]]
    assert [f for f in failures if f not in known] == []
    if known:
        pytest.xfail(f"engine bug: percentile(x, p) fails ({len(known)} docs examples)")
