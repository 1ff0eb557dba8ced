import pytest

from bzrk.testing import client

pytestmark = pytest.mark.anyio


async def test_sp_token_forwards_to_query(env) -> None:
    async with client(env.app) as c:
        r = await c.post(
            "/v2/rest/query",
            json={"db": "default", "csl": "x"},
            headers={"Authorization": f"Bearer {env.creds.token}"},
        )
    assert r.status_code == 200, r.text
    assert r.json()["principal"] == {
        "subject": "dev",
        "roles": ["admin"],
        "kind": "service_principal",
    }
