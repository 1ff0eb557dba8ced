"""The ingest admin API: only gateway-signed admin tokens; tables and ingest tokens end to end."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette

from bzrk.auth.internal import InternalKeys, Principal
from bzrk.ingest.admin import AdminApi
from bzrk.ingest.http import otlp_routes
from bzrk.testing import client
from tests.ingest.test_otlp_http import logs_request

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def keys(tmp_path) -> InternalKeys:  # type: ignore[no-untyped-def]
    return InternalKeys.load_or_create(tmp_path)


@pytest.fixture
def app(pipeline, keys):  # type: ignore[no-untyped-def]
    return Starlette(routes=[*otlp_routes(pipeline), AdminApi(pipeline, keys).routes()])


def _auth(keys: InternalKeys, roles=("admin",), audience="ingest") -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {
        "Authorization": f"Bearer {keys.sign(Principal('user', 'alice', 'alice', tuple(roles)), audience)}"
    }


async def test_refuses_without_gateway_admin_token(app, keys, tmp_path) -> None:
    (tmp_path / "elsewhere").mkdir()
    other = InternalKeys.load_or_create(tmp_path / "elsewhere")  # not the gateway's key
    async with client(app) as http:
        for headers, status in (
            ({}, 401),
            ({"Authorization": "Bearer ing_abc"}, 401),
            (_auth(keys, audience="query"), 401),
            (_auth(other), 401),
            (_auth(keys, roles=("member",)), 403),
        ):
            response = await http.post("/admin/v1/tables", json={"name": "x"}, headers=headers)
            assert response.status_code == status, response.text
            assert response.json()["error"]["message"]
        # A member without grants lists nothing (listings hold only what the caller may see).
        listed = await http.get("/admin/v1/tables", headers=_auth(keys, roles=("member",)))
        assert listed.status_code == 200 and listed.json()["tables"] == []


async def test_tables_and_tokens_lifecycle(app, keys, catalog) -> None:
    admin = _auth(keys)
    async with client(app) as http:
        response = await http.post(
            "/admin/v1/tables", json={"name": "audit", "retention_days": 14}, headers=admin
        )
        assert response.status_code == 201, response.text
        assert response.json()["retention_days"] == 14
        response = await http.post("/admin/v1/tables", json={"name": "audit"}, headers=admin)
        assert response.status_code == 409
        response = await http.post("/admin/v1/tables", json={"name": "bad name"}, headers=admin)
        assert response.status_code == 400 and "invalid table name" in response.text
        tables = (await http.get("/admin/v1/tables", headers=admin)).json()["tables"]
        assert {t["name"] for t in tables} == {"default", "audit"}
        response = await http.patch(
            "/admin/v1/tables/default/audit", json={"retention_days": 3}, headers=admin
        )
        assert response.json()["retention_days"] == 3

        created = await http.post(
            "/admin/v1/ingest-tokens",
            json={"name": "ci", "database": "default", "table": "audit"},
            headers=admin,
        )
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        assert token.startswith("ing_") and created.json()["prefix"] == token[:8]
        listed = (await http.get("/admin/v1/ingest-tokens", headers=admin)).json()
        assert [t["name"] for t in listed["ingest_tokens"]] == ["ci"]
        assert "token" not in listed["ingest_tokens"][0]
        assert token not in str(listed)

        ingest = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-protobuf"}
        body = logs_request().SerializeToString()
        assert (await http.post("/v1/logs", content=body, headers=ingest)).status_code == 200
        audit = catalog.qualified_name("default", "audit")
        assert catalog.backend.query_arrow(f"SELECT count() AS n FROM {audit}").to_pylist() == [
            {"n": 1}
        ]

        token_id = created.json()["id"]
        assert (
            await http.delete(f"/admin/v1/ingest-tokens/{token_id}", headers=admin)
        ).status_code == 204
        assert (
            await http.delete(f"/admin/v1/ingest-tokens/{token_id}", headers=admin)
        ).status_code == 404
        assert (await http.post("/v1/logs", content=body, headers=ingest)).status_code == 401
        listed = (await http.get("/admin/v1/ingest-tokens", headers=admin)).json()
        assert listed["ingest_tokens"][0]["revoked_at"] is not None

        assert (
            await http.delete("/admin/v1/tables/default/audit", headers=admin)
        ).status_code == 204
        assert (
            await http.delete("/admin/v1/tables/default/default", headers=admin)
        ).status_code == 400
        databases = (await http.get("/admin/v1/databases", headers=admin)).json()["databases"]
        assert [d["name"] for d in databases] == ["default"]


async def test_shard_fields_are_listed_replaced_and_cleared(app, keys, catalog) -> None:
    from bzrk.storage.schema import DEFAULT_SHARD_FIELDS

    admin = _auth(keys)

    def shard_indexes() -> dict[str, str]:
        name = catalog.naming.database("default")
        rows = catalog.backend.query_arrow(
            "SELECT name, expr FROM system.data_skipping_indices "
            f"WHERE database = '{name}' AND table = 'default' AND startsWith(name, 'idx_shard_')"
        ).to_pylist()
        return {r["expr"]: r["name"] for r in rows}

    async with client(app) as http:
        tables = (await http.get("/admin/v1/tables", headers=admin)).json()["tables"]
        assert tables[0]["shard_fields"] == DEFAULT_SHARD_FIELDS
        assert any("severity_text" in expr for expr in shard_indexes())
        response = await http.patch(
            "/admin/v1/tables/default/default",
            json={"shard_fields": {"severity_text": 3, "attributes.tenant": 2}},
            headers=admin,
        )
        assert response.status_code == 200, response.text
        assert response.json()["shard_fields"] == {"severity_text": 3, "attributes.tenant": 2}
        exprs = shard_indexes()
        assert len(exprs) == 2 and any("tenant" in e for e in exprs), exprs
        # Rows written now are pruned by the new field's bloom filter; the data stays readable.
        body = logs_request().SerializeToString()
        from bzrk.auth.accounts import create_ingest_token

        token = create_ingest_token(catalog.meta, "t", "default", "default").value
        ingest = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-protobuf"}
        assert (await http.post("/v1/logs", content=body, headers=ingest)).status_code == 200
        cleared = await http.patch(
            "/admin/v1/tables/default/default", json={"shard_fields": {}}, headers=admin
        )
        assert cleared.json()["shard_fields"] == {} and shard_indexes() == {}
        listed = (await http.get("/admin/v1/tables", headers=admin)).json()["tables"]
        assert listed[0]["shard_fields"] == {}
        for bad in ({"shard_fields": {"nope": 1}}, {"shard_fields": {"severity_text": "x"}},
                    {"shard_fields": None}, {}):  # fmt: skip
            response = await http.patch("/admin/v1/tables/default/default", json=bad, headers=admin)
            assert response.status_code == 400, (bad, response.text)
    rows = catalog.backend.query_arrow(
        f"SELECT count() AS n FROM {catalog.qualified_name('default', 'default')}"
    ).to_pylist()
    assert rows == [{"n": 1}]


async def test_a_revoked_token_can_be_purged_but_a_live_one_cannot(app, keys, catalog) -> None:
    admin = _auth(keys)
    async with client(app) as http:
        created = await http.post("/admin/v1/ingest-tokens", json={"name": "old"}, headers=admin)
        token_id = created.json()["id"]
        live = await http.delete(f"/admin/v1/ingest-tokens/{token_id}?purge=true", headers=admin)
        assert live.status_code == 409 and "revoke it first" in live.text
        assert (
            await http.delete(f"/admin/v1/ingest-tokens/{token_id}", headers=admin)
        ).status_code == 204
        gone = await http.delete(f"/admin/v1/ingest-tokens/{token_id}?purge=true", headers=admin)
        assert gone.status_code == 204
        listed = (await http.get("/admin/v1/ingest-tokens", headers=admin)).json()["ingest_tokens"]
        assert token_id not in {t["id"] for t in listed}
        again = await http.delete(f"/admin/v1/ingest-tokens/{token_id}?purge=true", headers=admin)
        assert again.status_code == 404
