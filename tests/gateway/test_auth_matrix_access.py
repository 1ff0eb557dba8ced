"""The auth matrix, authorization half: who may see which database, through a real ``bzrk dev``
with real clients (httpx, grpcio, azure-kusto-data, the ``mcp`` client).

A member without a grant is refused (403 ``AccessDenied``, gRPC ``PERMISSION_DENIED``, an MCP
tool error) on every query surface and sees the database in no listing; a grant works on the
next request and a revoke within one; a user and a service principal with the same name are
two owners of runs and saved queries.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import grpc
import httpx
import httpx2
import pytest
from azure.kusto.data import KustoClient, KustoConnectionStringBuilder
from azure.kusto.data.exceptions import KustoServiceError
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bzrk.testing import DevServer
from tests.api.grpc.helpers import request, stub, table_rows
from tests.gateway.flows import login
from tests.ingest.test_otlp_http import logs_request

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

VAULT = "vault"


@dataclass
class World:
    """A dev server with database ``vault`` (one ingested log) and principals to test with."""

    creds: dict[str, Any]
    member_token: str  # service principal "mallory-ci", member: viewer on default only
    member_user: str  # user "mallory", member
    member_password: str

    @property
    def gateway(self) -> str:
        return self.creds["gateway"]

    def admin(self) -> httpx.Client:
        return http(self.gateway, self.creds["token"])


def http(base: str, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=60)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def world(plain_dev_server: DevServer) -> World:
    creds = plain_dev_server.credentials
    with http(creds["gateway"], creds["token"]) as admin:
        assert admin.post("/api/v1/admin/databases", json={"name": VAULT}).status_code == 201
        made = admin.post("/api/v1/admin/tables", json={"database": VAULT, "name": "logs"})
        assert made.status_code == 201, made.text
        ingest = admin.post(
            "/api/v1/admin/ingest-tokens",
            json={"name": "vault", "database": VAULT, "table": "logs"},
        ).json()["token"]
        sent = httpx.post(
            creds["otlp_http"] + "/v1/logs",
            content=logs_request().SerializeToString(),
            headers={
                "Authorization": f"Bearer {ingest}",
                "Content-Type": "application/x-protobuf",
            },
            timeout=30,
        )
        assert sent.status_code == 200, sent.text
        sp = admin.post("/api/v1/admin/service-principals", json={"name": "mallory-ci"})
        sp_id = sp.json()["service_principal"]["id"]
        token = admin.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={})
        user = admin.post(
            "/api/v1/admin/users", json={"username": "mallory", "password": "pw-mallory-1"}
        )
        assert user.status_code == 201, user.text
    return World(creds, token.json()["token"], "mallory", "pw-mallory-1")


def vault_count(world: World) -> Any:
    with world.admin() as admin:
        r = admin.post(
            "/query", json={"query": "logs | count", "database": VAULT, "since": "30d ago"}
        )
    assert r.status_code == 200, r.text
    return r.json()["Tables"][0]["rows"]


def assert_access_denied(r: httpx.Response, database: str = VAULT) -> None:
    assert r.status_code == 403, (r.status_code, r.text)
    body = r.json()
    code = body.get("code") or body.get("error", {}).get("code")
    assert code == "AccessDenied", body
    assert f"'{database}'" in r.text
    assert "Traceback" not in r.text and "DB::Exception" not in r.text


def kusto(world: World, token: str) -> KustoClient:
    return KustoClient(
        KustoConnectionStringBuilder.with_aad_application_token_authentication(world.gateway, token)
    )


def mcp_client(world: World, token: str) -> Client:
    client = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60)
    )
    return Client(
        streamable_http_client(world.gateway + "/mcp", http_client=client),
        mode="2026-07-28",
        cache=None,
    )


def grpc_status(world: World, token: str, database: str) -> tuple[grpc.StatusCode, str, Any]:
    channel, call = stub(urlsplit(world.gateway).netloc, prefix="/api/grpc")
    with channel:
        try:
            frames = list(
                call(
                    request("print v = 1", database=database),
                    metadata=[("authorization", f"Bearer {token}")],
                    timeout=60,
                )
            )
        except grpc.RpcError as exc:
            return exc.code(), exc.details() or "", None
    return grpc.StatusCode.OK, "", table_rows(frames)


# -- refused on every query surface ----------------------------------------------------------


def test_member_without_grant_is_refused_over_http_and_adx(world: World) -> None:
    assert vault_count(world) == [[1]]  # the data is there (for those who may see it)
    with http(world.gateway, world.member_token) as member:
        for database, expect in (("default", 200), (VAULT, 403)):
            query = member.post("/query", json={"query": "print 1", "database": database})
            v2 = member.post("/v2/rest/query", json={"db": database, "csl": "print 1"})
            v1 = member.post("/v1/rest/query", json={"db": database, "csl": "print 1"})
            for r in (query, v2, v1):
                if expect == 200:
                    assert r.status_code == 200, r.text
                else:
                    assert_access_denied(r)
        for csl, db in (
            (f".show database {VAULT} schema as json", ""),
            (".show tables", VAULT),
            (".show table logs cslschema", VAULT),
            (f".show databases ({VAULT}) schema", ""),
        ):
            assert_access_denied(member.post("/v1/rest/mgmt", json={"db": db, "csl": csl}))
        # Schema discovery for the UI, and an unknown database: the same refusal.
        assert_access_denied(member.get(f"/api/v1/databases/{VAULT}/tables"))
        assert_access_denied(member.get(f"/api/v1/databases/{VAULT}/tables/logs/fields"))
        assert_access_denied(
            member.post("/query", json={"query": "print 1", "database": "nope"}), "nope"
        )


def test_member_without_grant_is_refused_by_the_kusto_sdk(world: World) -> None:
    with kusto(world, world.member_token) as member:
        assert member.execute_query("default", "print v = 2").primary_results[0][0]["v"] == 2
        for run in (
            lambda: member.execute_query(VAULT, "logs | count"),
            lambda: member.execute_mgmt(VAULT, ".show tables"),
        ):
            with pytest.raises(KustoServiceError) as refused:
                run()
            assert refused.value.http_response is not None
            assert refused.value.http_response.status_code == 403
            assert "AccessDenied" in refused.value.http_response.text


def test_the_kusto_sdk_is_told_who_and_where_it_runs(world: World) -> None:
    """current_principal() is the caller the gateway vouched for, current_database() the
    database of the request, whoever asked the same text before (plans are cached)."""
    text = "print d = current_database(), p = current_principal()"
    with kusto(world, world.member_token) as member:
        as_member = member.execute_query("default", text).primary_results[0][0]
    with kusto(world, world.creds["token"]) as admin:
        as_admin = admin.execute_query(VAULT, text).primary_results[0][0]
    with world.admin() as admin_http:
        listed = admin_http.get("/api/v1/admin/service-principals").json()
    mallory = next(sp for sp in listed["service_principals"] if sp["name"] == "mallory-ci")
    assert (as_member["d"], as_member["p"]) == ("default", f"sp:{mallory['id']}")
    assert as_admin["d"] == VAULT and as_admin["p"] not in ("", as_member["p"])


def test_member_without_grant_is_refused_over_grpc(world: World) -> None:
    assert grpc_status(world, world.member_token, "default")[2] == [[1]]
    code, details, _ = grpc_status(world, world.member_token, VAULT)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert details.startswith("AccessDenied:") and f"'{VAULT}'" in details


async def test_member_without_grant_is_refused_by_mcp_tools(world: World) -> None:
    async with mcp_client(world, world.member_token) as mcp:
        ok = await mcp.call_tool("query", {"query": "print v = 3", "database": "default"})
        assert not ok.is_error and ok.structured_content["rows"] == [[3]]
        for tool, args in (
            ("query", {"query": "logs | count", "database": VAULT, "since": "30d ago"}),
            ("list_tables", {"database": VAULT}),
            ("discover_fields", {"database": VAULT, "table": "logs"}),
        ):
            refused = await mcp.call_tool(tool, args)
            assert refused.is_error, tool
            assert refused.content[0].text.startswith("AccessDenied: "), refused.content


async def test_member_without_grant_is_refused_in_the_ui(world: World) -> None:
    """The UI's calls (session cookie + CSRF) go through the same check."""
    async with httpx.AsyncClient(base_url=world.gateway, timeout=60) as c:
        session = await login(c, world.member_user, world.member_password)
        h = {**session.headers, "X-CSRF-Token": session.csrf}
        ok = await c.post("/query", json={"query": "print 1", "database": "default"}, headers=h)
        assert ok.status_code == 200, ok.text
        r = await c.post("/query", json={"query": "print 1", "database": VAULT}, headers=h)
        assert_access_denied(r)
        streamed = await c.post(
            "/query", json={"query": "print 1", "database": VAULT, "stream": True}, headers=h
        )
        assert_access_denied(streamed)
        assert_access_denied(await c.get(f"/api/v1/databases/{VAULT}/tables", headers=h))
        saved = await c.post(
            "/api/v1/library/queries",
            json={"name": unique("peek"), "query": "logs", "database": VAULT},
            headers=h,
        )
        assert_access_denied(saved)


def test_member_cannot_mint_ingest_tokens_or_make_tables_without_editor(world: World) -> None:
    with http(world.gateway, world.member_token) as member:
        for body in ({"database": VAULT}, {"database": "default"}):
            r = member.post(
                "/api/v1/admin/ingest-tokens", json={"name": "x", "table": "default", **body}
            )
            assert r.status_code == 403, r.text
        assert (
            member.post("/api/v1/admin/tables", json={"database": VAULT, "name": "t"}).status_code
            == 403
        )
        assert member.post("/api/v1/admin/databases", json={"name": "mine"}).status_code == 403


# -- invisible in every listing --------------------------------------------------------------


async def test_an_ungranted_database_is_in_no_listing(world: World) -> None:
    with world.admin() as admin:
        saved = admin.post(
            "/api/v1/library/queries",
            json={"name": unique("vault-q"), "query": "logs | take 5", "database": VAULT},
        )
        assert saved.status_code == 201, saved.text
        assert VAULT in [d["name"] for d in admin.get("/api/v1/databases").json()["databases"]]
    with http(world.gateway, world.member_token) as member:
        listings = {
            "/api/v1/databases": member.get("/api/v1/databases").json()["databases"],
            "/api/v1/admin/databases": member.get("/api/v1/admin/databases").json()["databases"],
        }
        for name, found in listings.items():
            assert [d["name"] for d in found] == ["default"], name
        tables = member.get("/api/v1/admin/tables").json()["tables"]
        assert {t["database"] for t in tables} == {"default"}
        assert member.get("/api/v1/admin/ingest-tokens").json()["ingest_tokens"] == []
        mgmt = member.post("/v1/rest/mgmt", json={"db": "", "csl": ".show databases"})
        assert [row[0] for row in mgmt.json()["Tables"][0]["Rows"]] == ["default"]
        schema = member.post("/v1/rest/mgmt", json={"db": "", "csl": ".show schema as json"})
        assert VAULT not in schema.text
        library = member.get("/api/v1/library/queries").json()["queries"]
        assert all(q["database"] != VAULT for q in library)
        assert (
            member.get(f"/api/v1/library/queries/{saved.json()['query']['id']}").status_code == 404
        )
    async with mcp_client(world, world.member_token) as mcp:
        listed = await mcp.call_tool("list_databases", {})
        assert [d["name"] for d in listed.structured_content["databases"]] == ["default"]


# -- grants take effect on the next request, revokes within one ----------------------------


async def test_grant_and_revoke_take_effect_without_restart(world: World) -> None:
    sp_name = unique("analyst")
    with world.admin() as admin:
        sp = admin.post("/api/v1/admin/service-principals", json={"name": sp_name}).json()
        sp_id = sp["service_principal"]["id"]
        token = admin.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={}).json()[
            "token"
        ]
        principal = f"sp:{sp_name}"
        with http(world.gateway, token) as analyst:
            body = {"db": VAULT, "csl": "logs | where timestamp > ago(30d) | count"}
            assert_access_denied(analyst.post("/v2/rest/query", json=body))
            granted = admin.post(
                "/api/v1/admin/grants",
                json={"principal": principal, "relation": "viewer", "database": VAULT},
            )
            assert granted.status_code == 201, granted.text
            assert granted.json()["grant"]["principal"] == f"sp:{sp_id}"
            # The very next request: allowed, and the database is listed.
            allowed = analyst.post("/v2/rest/query", json=body)
            assert allowed.status_code == 200, allowed.text
            assert grpc_status(world, token, VAULT)[2] == [[1]]
            names = [d["name"] for d in analyst.get("/api/v1/databases").json()["databases"]]
            assert names == ["default", VAULT]
            # Viewer is not editor: no ingest tokens until that grant too.
            mint = {"name": "a", "database": VAULT, "table": "logs"}
            assert analyst.post("/api/v1/admin/ingest-tokens", json=mint).status_code == 403
            admin.post(
                "/api/v1/admin/grants",
                json={"principal": principal, "relation": "editor", "database": VAULT},
            )
            assert analyst.post("/api/v1/admin/ingest-tokens", json=mint).status_code == 201
            revoked = admin.delete(
                "/api/v1/admin/grants",
                params={"principal": principal, "relation": "viewer", "database": VAULT},
            )
            assert revoked.status_code == 204
            # Editor still includes viewer; revoke that too and the next request is refused.
            assert analyst.post("/v2/rest/query", json=body).status_code == 200
            admin.delete(
                "/api/v1/admin/grants",
                params={"principal": principal, "relation": "editor", "database": VAULT},
            )
            assert_access_denied(analyst.post("/v2/rest/query", json=body))
            assert grpc_status(world, token, VAULT)[0] == grpc.StatusCode.PERMISSION_DENIED
            async with mcp_client(world, token) as mcp:
                listed = await mcp.call_tool("list_databases", {})
                assert [d["name"] for d in listed.structured_content["databases"]] == ["default"]


def test_a_database_admin_manages_only_that_database(world: World) -> None:
    name = unique("owner")
    with world.admin() as admin:
        sp_id = admin.post("/api/v1/admin/service-principals", json={"name": name}).json()[
            "service_principal"
        ]["id"]
        token = admin.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={}).json()[
            "token"
        ]
        admin.post(
            "/api/v1/admin/grants",
            json={"principal": f"sp:{sp_id}", "relation": "admin", "database": VAULT},
        )
    with http(world.gateway, token) as owner:
        give = {"principal": "user:mallory", "relation": "viewer"}
        assert (
            owner.post("/api/v1/admin/grants", json={**give, "database": VAULT}).status_code == 201
        )
        refused = owner.post("/api/v1/admin/grants", json={**give, "database": "default"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "AccessDenied"
        cluster = owner.post(
            "/api/v1/admin/grants", json={**give, "relation": "admin", "database": "cluster"}
        )
        assert cluster.status_code == 403
        listed = owner.get("/api/v1/admin/grants").json()["grants"]
        assert {g["database"] for g in listed} <= {VAULT, "default"}
        assert (
            owner.delete("/api/v1/admin/grants", params={**give, "database": VAULT}).status_code
            == 204
        )


# -- same-name user and service principal are two owners -------------------------------------


async def test_a_user_named_like_the_dev_principal_cannot_read_its_runs(world: World) -> None:
    """The audit's case: member user "dev" read the bootstrap admin principal "dev"'s runs."""
    with world.admin() as admin:
        made = admin.post(
            "/api/v1/admin/users", json={"username": "dev", "password": "pw-dev-12345"}
        )
        assert made.status_code == 201, made.text
        ran = admin.post("/query", json={"query": "print secret = 42", "database": "default"})
        run_id = ran.json()["run_id"]
        assert run_id and admin.get(f"/api/v1/runs/{run_id}").status_code == 200
    async with httpx.AsyncClient(base_url=world.gateway, timeout=60) as c:
        session = await login(c, "dev", "pw-dev-12345")
        own = await c.post(
            "/query",
            json={"query": "print mine = 1", "database": "default"},
            headers={**session.headers, "X-CSRF-Token": session.csrf},
        )
        mine = own.json()["run_id"]
        runs = (await c.get("/api/v1/runs", headers=session.headers)).json()["runs"]
        assert [r["id"] for r in runs] == [mine]
        assert (await c.get(f"/api/v1/runs/{run_id}", headers=session.headers)).status_code == 404
        me = (await c.get("/api/v1/me", headers=session.headers)).json()
        assert me["name"] == "dev" and me["kind"] == "user" and me["key"].startswith("user:")


async def test_same_name_user_and_principal_own_their_own_library_items_and_runs(
    world: World,
) -> None:
    name = unique("twin")
    with world.admin() as admin:
        admin.post("/api/v1/admin/users", json={"username": name, "password": "pw-twin-12345"})
        sp_id = admin.post("/api/v1/admin/service-principals", json={"name": name}).json()[
            "service_principal"
        ]["id"]
        sp_token = admin.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={}).json()[
            "token"
        ]
    async with httpx.AsyncClient(base_url=world.gateway, timeout=60) as c:
        session = await login(c, name, "pw-twin-12345")
        h = {**session.headers, "X-CSRF-Token": session.csrf}
        saved = await c.post(
            "/api/v1/library/queries",
            json={"name": unique("errors"), "query": "default | where severity_text == 'ERROR'"},
            headers=h,
        )
        assert saved.status_code == 201, saved.text
        item = saved.json()["query"]
        assert item["owner"].startswith("user:") and item["owner_name"] == name
        ran = await c.post(
            "/query", json={"query": "print u = 1", "database": "default"}, headers=h
        )
        user_run = ran.json()["run_id"]
    with http(world.gateway, sp_token) as twin:
        # The principal of the same name may read the team's library, not change the user's item.
        assert twin.get(f"/api/v1/library/queries/{item['id']}").status_code == 200
        edit = twin.patch(f"/api/v1/library/queries/{item['id']}", json={"query": "print 'pwned'"})
        assert edit.status_code == 403
        assert twin.delete(f"/api/v1/library/queries/{item['id']}").status_code == 403
        assert twin.get(f"/api/v1/runs/{user_run}").status_code == 404
        assert user_run not in [r["id"] for r in twin.get("/api/v1/runs").json()["runs"]]
    async with mcp_client(world, sp_token) as mcp:
        theirs = await mcp.call_tool("get_run", {"run_id": user_run})
        assert theirs.is_error and "NotFound" in theirs.content[0].text
        own = await mcp.call_tool("query", {"query": "print p = 1", "database": "default"})
        sp_run = own.structured_content["run_id"]
        mine = await mcp.call_tool("get_run", {"run_id": sp_run})
        assert not mine.is_error and mine.structured_content["principal"] == f"sp:{sp_id}"


async def test_refusals_on_every_surface_reach_the_audit_log(world: World) -> None:
    with http(world.gateway, world.member_token) as member:
        member.post("/query", json={"query": "print 1", "database": VAULT})
        member.post("/v2/rest/query", json={"db": VAULT, "csl": "print 1"})
    grpc_status(world, world.member_token, VAULT)
    async with mcp_client(world, world.member_token) as mcp:
        await mcp.call_tool("list_tables", {"database": VAULT})
    with world.admin() as admin:
        events = admin.get(
            "/api/v1/admin/audit", params={"event": "request_refused", "limit": "200"}
        ).json()["events"]
    mine = [e for e in events if e["actor_name"] == "mallory-ci"]
    denied = [
        e
        for e in mine
        if e["reason"] == "AccessDenied:no_grant" and e["target"] == f"database:{VAULT}"
    ]
    assert {e["surface"] for e in denied} >= {"http", "adx", "grpc", "mcp"}
    assert all(e["actor"].startswith("sp:") for e in denied)
