"""The wire contract of spec/mcp.md §0 and §3.2-3.3: methods, Origin, the ladder, error codes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from bzrk.testing import client
from tests.api.mcp.harness import (
    VERSION,
    ScriptedExecutor,
    count_script,
    envelope_meta,
    make_context,
    mcp_app,
    rpc_body,
    rpc_headers,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def ctx(tmp_path: Path):  # type: ignore[no-untyped-def]
    context = make_context(tmp_path, ScriptedExecutor(count_script([3])))
    yield context
    context.meta.close()


@pytest.fixture
async def http(ctx):  # type: ignore[no-untyped-def]
    async with client(mcp_app(ctx)) as c:
        yield c


async def post(http, body, headers):  # type: ignore[no-untyped-def]
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    return await http.post("/mcp", content=raw, headers=headers)


async def test_get_and_delete_are_405_with_allow_post(http) -> None:  # type: ignore[no-untyped-def]
    for method in ("GET", "DELETE", "PUT"):
        response = await http.request(method, "/mcp")
        assert response.status_code == 405
        assert response.headers["allow"] == "POST"


async def test_bad_origin_is_403_and_the_gateways_own_or_absent_is_fine(ctx, http) -> None:  # type: ignore[no-untyped-def]
    ctx.addresses["gateway"] = "http://127.0.0.1:9500"
    body = rpc_body("server/discover")
    headers = rpc_headers("server/discover")
    evil = await post(http, body, {**headers, "origin": "http://evil.example.com"})
    assert evil.status_code == 403
    # DNS rebinding: the attacker's page has a matching Host; that must not make it same-origin.
    rebound = {**headers, "origin": "http://evil.example.com", "host": "evil.example.com"}
    assert (await post(http, body, rebound)).status_code == 403
    forwarded = {
        **headers,
        "origin": "http://evil.example.com",
        "x-forwarded-host": "evil.example.com",
    }
    assert (await post(http, body, forwarded)).status_code == 403
    # Another port on loopback is another site (a local dev server, a rebinding page).
    for origin in ("http://127.0.0.1:6274", "http://localhost:3000", "http://[::1]:80"):
        refused = await post(http, body, {**headers, "origin": origin})
        assert refused.status_code == 403, origin
    # The gateway's own origin, in any loopback spelling of its bound port, and no Origin.
    for origin in (None, "http://127.0.0.1:9500", "http://localhost:9500", "http://[::1]:9500"):
        extra = {"origin": origin} if origin else {}
        ok = await post(http, body, {**headers, **extra})
        assert ok.status_code == 200, origin


async def test_allowed_origins_setting_and_public_url(tmp_path: Path) -> None:
    ctx = make_context(
        tmp_path,
        mcp_allowed_origins="https://app.example.com, https://other.example.com",
        public_url="https://bzrk.example.com",
    )
    headers = rpc_headers("server/discover")
    async with client(mcp_app(ctx)) as http:
        for origin, status in (
            ("https://app.example.com", 200),
            ("https://bzrk.example.com", 200),
            ("https://evil.example.com", 403),
            ("null", 403),
        ):
            response = await post(http, rpc_body("server/discover"), {**headers, "origin": origin})
            assert response.status_code == status, origin
    ctx.meta.close()


async def test_parse_error_and_invalid_request(http) -> None:  # type: ignore[no-untyped-def]
    headers = rpc_headers("tools/list")
    bad = await post(http, "{not json", headers)
    assert bad.status_code == 400
    assert bad.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: invalid JSON"},
    }
    for body in ([rpc_body("tools/list")], {"jsonrpc": "2.0", "id": 4}, {"id": 4, "method": "x"}):
        response = await post(http, body, headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32600
    wrong_type = await post(http, rpc_body("tools/list"), {**headers, "content-type": "text/plain"})
    assert wrong_type.status_code == 415


async def test_notification_is_202_without_body(http) -> None:  # type: ignore[no-untyped-def]
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    response = await post(http, body, rpc_headers("notifications/cancelled"))
    assert response.status_code == 202
    assert response.content == b""


async def test_missing_meta_fields_are_32602_but_client_info_is_optional(http) -> None:  # type: ignore[no-untyped-def]
    headers = rpc_headers("tools/list")
    for meta in (None, {"io.modelcontextprotocol/protocolVersion": VERSION}):
        body = {"jsonrpc": "2.0", "id": "x1", "method": "tools/list", "params": {}}
        if meta is not None:
            body["params"]["_meta"] = meta
        response = await post(http, body, headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32602
        assert response.json()["id"] == "x1"
    meta = envelope_meta()
    del meta["io.modelcontextprotocol/clientInfo"]
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}
    assert (await post(http, body, headers)).status_code == 200


async def test_header_mismatch_is_32020(http) -> None:  # type: ignore[no-untyped-def]
    body = rpc_body("tools/call", {"name": "get_docs", "arguments": {}}, rid=9)
    good = rpc_headers("tools/call", "get_docs")
    cases = [
        {**good, "mcp-protocol-version": "2025-11-25"},
        {k: v for k, v in good.items() if k != "mcp-protocol-version"},
        {**good, "mcp-method": "tools/list"},
        {k: v for k, v in good.items() if k != "mcp-method"},
        {**good, "mcp-name": "query"},
        {k: v for k, v in good.items() if k != "mcp-name"},
    ]
    for headers in cases:
        response = await post(http, body, headers)
        assert response.status_code == 400, headers
        assert response.json()["error"]["code"] == -32020
        assert response.json()["id"] == 9
    # Header names are case-insensitive, values are trimmed, and base64-wrapped names decode.
    wrapped = "=?base64?" + base64.b64encode(b"get_docs").decode() + "?="
    renamed = {k: v for k, v in good.items() if k != "mcp-name"}
    ok = await post(http, body, {**renamed, "Mcp-Name": f"  {wrapped} "})
    assert ok.status_code == 200
    assert ok.json()["result"]["isError"] is False


async def test_unsupported_version_is_32022_with_supported_list(http) -> None:  # type: ignore[no-untyped-def]
    body = rpc_body("tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    headers = {**rpc_headers("tools/list"), "mcp-protocol-version": "2099-01-01"}
    response = await post(http, body, headers)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2099-01-01"}


async def test_legacy_initialize_gets_32022_and_modern_initialize_404(http) -> None:  # type: ignore[no-untyped-def]
    legacy = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
    }
    response = await post(http, legacy, {"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["data"]["supported"] == ["2026-07-28"]
    for method in (
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "no/such",
    ):
        response = await post(http, rpc_body(method, rid="m"), rpc_headers(method))
        assert response.status_code == 404, method
        assert response.json() == {
            "jsonrpc": "2.0",
            "id": "m",
            "error": {"code": -32601, "message": f"Method not found: {method}"},
        }


async def test_invalid_log_level_is_32602(http) -> None:  # type: ignore[no-untyped-def]
    body = rpc_body("tools/list", **{"io.modelcontextprotocol/logLevel": "loud"})
    response = await post(http, body, rpc_headers("tools/list"))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602


async def test_discover_shape(http) -> None:  # type: ignore[no-untyped-def]
    response = await post(
        http,
        rpc_body("server/discover", rid="d"),
        {**rpc_headers("server/discover"), "mcp-session-id": "abc"},
    )
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    result = response.json()["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["capabilities"] == {"tools": {}, "logging": {}}
    assert result["ttlMs"] > 0 and result["cacheScope"] in ("public", "private")
    info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert info["name"] == "bzrk" and info["version"]
    assert "discover_fields" in result["instructions"]


async def test_tools_list_shape_and_order(http) -> None:  # type: ignore[no-untyped-def]
    first = (await post(http, rpc_body("tools/list"), rpc_headers("tools/list"))).json()["result"]
    second = (await post(http, rpc_body("tools/list"), rpc_headers("tools/list"))).json()["result"]
    names = [t["name"] for t in first["tools"]]
    assert names == [
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
    assert names == [t["name"] for t in second["tools"]]
    assert isinstance(first["ttlMs"], int) and first["cacheScope"] in ("public", "private")
    assert first["resultType"] == "complete"
    for tool in first["tools"]:
        assert tool["inputSchema"]["type"] == "object"
        assert tool["outputSchema"]["type"] == "object"
        assert tool["description"]
    query = next(t for t in first["tools"] if t["name"] == "query")
    assert "not guessable" in query["description"]
    assert "discover_fields" in query["description"]
    bad_cursor = await post(
        http, rpc_body("tools/list", {"cursor": "zz"}), rpc_headers("tools/list")
    )
    assert bad_cursor.status_code == 400 and bad_cursor.json()["error"]["code"] == -32602


async def test_unknown_tool_is_32602(http) -> None:  # type: ignore[no-untyped-def]
    body = rpc_body("tools/call", {"name": "nope", "arguments": {}}, rid=5)
    response = await post(http, body, rpc_headers("tools/call", "nope"))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602
    assert response.json()["id"] == 5


async def test_bad_arguments_are_a_tool_error(http) -> None:  # type: ignore[no-untyped-def]
    body = rpc_body("tools/call", {"name": "list_tables", "arguments": {"db": "x"}})
    response = await post(http, body, rpc_headers("tools/call", "list_tables"))
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert "database" in result["content"][0]["text"]
    assert result["resultType"] == "complete"


async def test_undeclared_client_capability_is_32021(tmp_path: Path) -> None:
    from bzrk.api.mcp.app import McpApp
    from tests.api.mcp.conformance_fixture import FIXTURE_TOOLS
    from tests.api.mcp.harness import with_principal

    ctx = make_context(tmp_path)
    headers = rpc_headers("tools/call", "test_missing_capability")
    body = rpc_body("tools/call", {"name": "test_missing_capability", "arguments": {}}, rid="c")
    async with client(with_principal(McpApp(ctx, FIXTURE_TOOLS))) as http:
        refused = await post(http, body, headers)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == -32021
        assert refused.json()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
        assert refused.json()["id"] == "c"
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"sampling": {}}
        accepted = await post(http, body, headers)
        assert accepted.status_code == 200 and accepted.json()["result"]["isError"] is False
    ctx.meta.close()
