"""End to end through a real ``bzrk dev`` (with demo data): real clients, real query service.

A service-principal token on gRPC (grpcio), ADX REST (azure-kusto-data) and MCP (the ``mcp``
client); the ``mcp`` client's OAuth flow; a scripted device-flow login; and what the gateway
refuses on the same server.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import grpc
import httpx
import httpx2
import pytest
from azure.kusto.data import KustoClient, KustoConnectionStringBuilder
from azure.kusto.data.exceptions import KustoServiceError
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from tests.api.grpc.helpers import payloads, request, stub, table_rows
from tests.gateway.flows import REDIRECT_URI, device_login, hidden_fields, login, redirect_params
from tests.gateway.test_flows import MemoryStorage

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(scope="module")
def dev(dev_server) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return dev_server.credentials


def grpc_target(gateway: str) -> str:
    return urlsplit(gateway).netloc


def test_service_principal_token_on_grpc(dev: dict[str, Any]) -> None:
    channel, call = stub(grpc_target(dev["gateway"]), prefix="/api/grpc")
    with channel:
        frames = list(
            call(
                request("print v = 41 + 1"),
                metadata=[("authorization", f"Bearer {dev['token']}")],
                timeout=60,
            )
        )
        assert table_rows(frames) == [[42]], payloads(frames)
        with pytest.raises(grpc.RpcError) as anonymous:
            list(call(request("print v = 1"), timeout=30))
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as cookie:
            list(
                call(
                    request("print v = 1"),
                    metadata=[("cookie", "bzrk_session=bzrk_ss_x")],
                    timeout=30,
                )
            )
        assert cookie.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_service_principal_tokens_with_the_kusto_sdk(dev: dict[str, Any]) -> None:
    """``.show databases`` lists what the caller may query (ADX's semantics): a new member
    sees ``default``; a database without a grant is refused with 403."""

    def kusto(token: str) -> KustoClient:
        return KustoClient(
            KustoConnectionStringBuilder.with_aad_application_token_authentication(
                dev["gateway"], token
            )
        )

    with kusto(dev["token"]) as admin:
        result = admin.execute_mgmt("default", ".show databases")
        assert "default" in [row[0] for row in result.primary_results[0]]
    h = {"Authorization": f"Bearer {dev['token']}"}
    with httpx.Client(base_url=dev["gateway"], headers=h, timeout=30) as c:
        sp = c.post("/api/v1/admin/service-principals", json={"name": "e2e-member"}).json()
        sp_id = sp["service_principal"]["id"]
        member_token = c.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={}).json()
    with kusto(member_token["token"]) as member:
        listed = member.execute_mgmt("default", ".show databases").primary_results[0]
        assert [row[0] for row in listed] == ["default"]
        with pytest.raises(KustoServiceError) as refused:
            member.execute_query("no-grant-here", "print 1")
    assert refused.value.http_response is not None
    assert refused.value.http_response.status_code == 403


async def test_service_principal_token_with_the_mcp_client(dev: dict[str, Any]) -> None:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {dev['token']}"}, timeout=httpx2.Timeout(30, read=60)
    )
    async with (
        http,
        Client(
            streamable_http_client(dev["gateway"] + "/mcp", http_client=http),
            mode="2026-07-28",
            cache=None,
        ) as mcp,
    ):
        tools = {tool.name for tool in (await mcp.list_tools()).tools}
        assert {"query", "list_databases"} <= tools
        result = await mcp.call_tool("list_databases", {})
        assert "default" in [d["name"] for d in result.structured_content["databases"]]
        ran = await mcp.call_tool("query", {"query": "print v = 7", "database": "default"})
        assert not ran.is_error, ran.content
        assert ran.structured_content["rows"] == [[7]], ran.structured_content


async def test_mcp_oauth_flow_against_the_dev_server(dev: dict[str, Any]) -> None:
    base = dev["gateway"]
    async with httpx.AsyncClient(base_url=base, timeout=30) as browser:
        session = await login(browser, dev["admin_user"], dev["admin_password"])
        callback: dict[str, str] = {}

        async def redirect_handler(url: str) -> None:
            page = await browser.get(url, headers=session.headers)
            done = await browser.post(
                "/oauth/authorize",
                data={**hidden_fields(page.text), "decision": "approve"},
                headers=session.headers,
            )
            callback.update(redirect_params(done))

        async def callback_handler() -> AuthorizationCodeResult:
            return AuthorizationCodeResult(
                code=callback["code"], state=callback.get("state"), iss=callback.get("iss")
            )

        provider = OAuthClientProvider(
            server_url=f"{base}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="e2e host",
                redirect_uris=[REDIRECT_URI],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=MemoryStorage(),
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        http = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30, read=60))
        async with (
            http,
            Client(
                streamable_http_client(f"{base}/mcp", http_client=http),
                mode="2026-07-28",
                cache=None,
            ) as mcp,
        ):
            assert mcp.protocol_version == "2026-07-28"
            tools = {tool.name for tool in (await mcp.list_tools()).tools}
        assert "query" in tools and callback["iss"] == base
        # That OAuth token is for /mcp only.
        token = (await provider.context.storage.get_tokens()).access_token  # type: ignore[union-attr]
        r = await browser.post(
            "/v2/rest/query",
            json={"db": "default", "csl": "print 1"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 401


async def test_device_flow_login_against_the_dev_server(dev: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=dev["gateway"], timeout=30) as c:
        session = await login(c, dev["admin_user"], dev["admin_password"])
        tokens = await device_login(c, session)
        h = {"Authorization": f"Bearer {tokens['access_token']}"}
        r = await c.post(
            "/v1/rest/mgmt", json={"db": "default", "csl": ".show databases"}, headers=h
        )
        assert r.status_code == 200, r.text
        assert "default" in [row[0] for row in r.json()["Tables"][0]["Rows"]]
        q = await c.post("/v2/rest/query", json={"db": "default", "csl": "print v = 1"}, headers=h)
        assert q.status_code == 200, q.text
        primary = [f for f in q.json() if f.get("TableKind") == "PrimaryResult"]
        assert primary[0]["Rows"] == [[1]]
        # Straight to the query port the same token is worthless.
        direct = await c.post(
            dev["query"] + "/v2/rest/query", json={"db": "default", "csl": "print 1"}, headers=h
        )
        assert direct.status_code == 401


def test_ingest_admin_through_the_gateway(dev: dict[str, Any]) -> None:
    """Tables and ingest tokens live in the ingest service; the gateway forwards (admins only)."""
    h = {"Authorization": f"Bearer {dev['token']}"}
    with httpx.Client(base_url=dev["gateway"], headers=h, timeout=30) as c:
        made = c.post("/api/v1/admin/tables", json={"database": "default", "name": "gw_e2e"})
        assert made.status_code in (200, 201), made.text
        names = [t["name"] for t in c.get("/api/v1/admin/tables?database=default").json()["tables"]]
        assert "gw_e2e" in names
        token = c.post("/api/v1/admin/ingest-tokens", json={"name": "gw", "table": "gw_e2e"})
        assert token.status_code in (200, 201) and "ing_" in token.text
        assert c.get("/api/v1/admin/databases").status_code == 200
        assert c.get("/api/v1/admin/tablesX").status_code == 404
    with httpx.Client(base_url=dev["gateway"], timeout=30) as anonymous:
        assert anonymous.get("/api/v1/admin/tables").status_code == 401
