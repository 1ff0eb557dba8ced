"""Every surface's runs are recorded as they ended, through the real gateway of ``bzrk dev --demo``:
a completed run ``complete`` with its row count, a failed one ``error`` with its code, one the
client abandoned ``cancelled``. Clients: grpcio, azure-kusto-data, the ``mcp`` client, httpx for
``POST /query`` (bearer) and for the web UI's way (session cookie, streamed NDJSON).

The record is read back through ``GET /api/v1/runs`` (what the UI's history and MCP's
``get_run`` read). A cancel needs a run that is still going: a heavy query over the day of demo
data, whose first snapshot arrives at once and whose later slices take seconds.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bzrk.testing import DevServer
from tests.api.grpc.helpers import gateway_call

pytestmark = [pytest.mark.e2e]

# The first slice (1/512 of the day) is quick; the whole day then takes many seconds.
HEAVY = (
    "default | where timestamp > ago(1d) | mv-expand k = range(1, 100)"
    " | summarize n = dcount(hash_sha256(strcat(body, tostring(k)))) by bin(timestamp, 1h)"
)


def tagged(query: str) -> str:
    """``query`` with a unique trailing comment, to find its run."""
    return f"{query} // {uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def creds(dev_server: DevServer) -> dict[str, Any]:
    return dev_server.credentials


@pytest.fixture(scope="module")
def bearer(creds: dict[str, Any]) -> Iterator[httpx.Client]:
    headers = {"authorization": f"Bearer {creds['token']}"}
    with httpx.Client(base_url=creds["gateway"], headers=headers, timeout=120) as client:
        yield client


@pytest.fixture(scope="module")
def session(creds: dict[str, Any]) -> Iterator[httpx.Client]:
    """Signed in as the web UI is: a session cookie and its CSRF header."""
    with httpx.Client(base_url=creds["gateway"], timeout=120) as client:
        answer = client.post(
            "/auth/login",
            json={"username": creds["admin_user"], "password": creds["admin_password"]},
        )
        assert answer.status_code == 200, answer.text
        client.headers["X-CSRF-Token"] = answer.json()["csrf_token"]
        yield client


def recorded(client: httpx.Client, query: str, timeout_s: float = 60) -> dict[str, Any]:
    """The finished run record of ``query`` (the finish is written just after the stream ends)."""
    deadline = time.monotonic() + timeout_s
    while True:
        runs = client.get("/api/v1/runs", params={"limit": 200}).json()["runs"]
        found = [r for r in runs if r["query"] == query]
        if found and found[0]["status"] != "running":
            answer = client.get(f"/api/v1/runs/{found[0]['id']}")
            assert answer.status_code == 200, answer.text
            run: dict[str, Any] = answer.json()["run"]
            return run
        assert time.monotonic() < deadline, f"no finished run for {query!r}: {found}"
        time.sleep(0.2)


def assert_complete(run: dict[str, Any], surface: str, rows: int) -> None:
    assert run["status"] == "complete", run
    assert run["surface"] == surface
    assert run["result"]["row_count"] == rows
    assert run["finished_at"] is not None and run["error"] is None


def assert_error(run: dict[str, Any], surface: str, code: str) -> None:
    assert run["status"] == "error", run
    assert run["surface"] == surface
    assert run["error"]["code"] == code


def assert_cancelled(run: dict[str, Any], surface: str) -> None:
    assert run["status"] == "cancelled", run
    assert run["surface"] == surface
    assert run["finished_at"] is not None


# --- gRPC (the CLI's and Berserk clients' surface) -----------------------------------------


def test_grpc_runs(creds: dict[str, Any], bearer: httpx.Client) -> None:
    done = tagged("range x from 1 to 3 step 1")
    channel, call = gateway_call(creds, done)
    with channel:
        frames = list(call)
    assert frames[-1].WhichOneof("payload") == "done"
    assert_complete(recorded(bearer, done), "grpc", 3)

    failed = tagged("print x = ")
    channel, call = gateway_call(creds, failed)
    with channel:
        frames = list(call)
    assert frames[-1].WhichOneof("payload") == "error"
    assert_error(recorded(bearer, failed), "grpc", "ParseError")

    abandoned = tagged(HEAVY)
    channel, call = gateway_call(creds, abandoned)
    with channel:
        for frame in call:
            if frame.WhichOneof("payload") == "metadata":  # the first snapshot is whole
                break
        call.cancel()
    assert_cancelled(recorded(bearer, abandoned), "grpc")


# --- ADX REST (Kusto SDKs, Grafana) -------------------------------------------------------------


def test_adx_runs(creds: dict[str, Any], bearer: httpx.Client) -> None:
    from azure.kusto.data import KustoClient, KustoConnectionStringBuilder
    from azure.kusto.data.exceptions import KustoServiceError

    kcsb = KustoConnectionStringBuilder.with_token_provider(
        creds["gateway"], lambda: creds["token"]
    )
    client = KustoClient(kcsb)
    try:
        done = tagged("range x from 1 to 4 step 1")
        result = client.execute("default", done)
        assert len(result.primary_results[0].rows) == 4
        assert_complete(recorded(bearer, done), "adx", 4)

        failed = tagged("print x = ")
        with pytest.raises(KustoServiceError):
            client.execute("default", failed)
        assert_error(recorded(bearer, failed), "adx", "ParseError")
    finally:
        client.close()

    # Progressive v2: leave after the first DataReplace fragment.
    abandoned = tagged(HEAVY)
    body = {
        "db": "default",
        "csl": abandoned,
        "properties": {"Options": {"results_progressive_enabled": True}},
    }
    with bearer.stream("POST", "/v2/rest/query", json=body) as answer:
        assert answer.status_code == 200
        seen = b""
        for chunk in answer.iter_raw():
            seen += chunk
            if b"DataReplace" in seen:
                break
    assert_cancelled(recorded(bearer, abandoned), "adx")


# --- POST /query (the Berserk HTTP API) and the web UI's way of calling it ------------------


def test_http_query_runs(bearer: httpx.Client) -> None:
    done = tagged("range x from 1 to 5 step 1")
    answer = bearer.post("/query", json={"query": done, "database": "default"})
    assert answer.status_code == 200, answer.text
    assert_complete(recorded(bearer, done), "http", 5)

    failed = tagged("print x = ")
    assert bearer.post("/query", json={"query": failed, "database": "default"}).status_code == 400
    assert_error(recorded(bearer, failed), "http", "ParseError")

    abandoned = tagged(HEAVY)
    with bearer.stream(
        "POST", "/query", json={"query": abandoned, "database": "default", "stream": True}
    ) as answer:
        for line in answer.iter_lines():
            if json.loads(line)["type"] == "metadata":
                break
    assert_cancelled(recorded(bearer, abandoned), "http")


def test_ui_runs(session: httpx.Client) -> None:
    def streamed(query: str, until: str | None = None) -> list[dict[str, Any]]:
        events = []
        with session.stream(
            "POST", "/query", json={"query": query, "database": "default", "stream": True}
        ) as answer:
            assert answer.status_code in (200, 400), answer.status_code
            for line in answer.iter_lines():
                events.append(json.loads(line))
                if events[-1]["type"] == until:
                    break
        return events

    done = tagged("range x from 1 to 6 step 1")
    assert streamed(done)[-1]["type"] == "done"
    assert_complete(recorded(session, done), "http", 6)

    failed = tagged("print x = ")
    streamed(failed)
    assert_error(recorded(session, failed), "http", "ParseError")

    abandoned = tagged(HEAVY)
    streamed(abandoned, until="metadata")
    assert_cancelled(recorded(session, abandoned), "http")


# --- MCP --------------------------------------------------------------------------------------

MCP_VERSION = "2026-07-28"


def mcp_call(creds: dict[str, Any], query: str, *, stream: bool) -> httpx.Response | Any:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "query",
            "arguments": {"query": query, "database": "default", "since": "1d ago"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MCP_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "progressToken": "p1",
            },
        },
    }
    headers = {
        "authorization": f"Bearer {creds['token']}",
        "accept": "application/json, text/event-stream" if stream else "application/json",
        "mcp-protocol-version": MCP_VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "query",
    }
    return body, headers


def test_mcp_runs(creds: dict[str, Any], bearer: httpx.Client) -> None:
    url = creds["gateway"] + "/mcp"
    done = tagged("range x from 1 to 7 step 1")
    body, headers = mcp_call(creds, done, stream=False)
    answer = httpx.post(url, json=body, headers=headers, timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["structuredContent"]["status"] == "complete"
    assert_complete(recorded(bearer, done), "mcp", 7)

    failed = tagged("print x = ")
    body, headers = mcp_call(creds, failed, stream=False)
    answer = httpx.post(url, json=body, headers=headers, timeout=120)
    assert answer.json()["result"]["isError"] is True
    assert_error(recorded(bearer, failed), "mcp", "ParseError")

    abandoned = tagged(HEAVY)
    body, headers = mcp_call(creds, abandoned, stream=True)
    with httpx.stream("POST", url, json=body, headers=headers, timeout=120) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if "notifications/progress" in line:  # the first snapshot is in: leave
                break
    assert_cancelled(recorded(bearer, abandoned), "mcp")
