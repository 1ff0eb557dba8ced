"""Queries run read-only in ClickHouse itself, not only because the compiler writes SELECTs.

The compiler is replaced by one that emits an attacker's SQL (what a compiler bug would let
through); the request goes through the real ``POST /query`` surface, the real query service
and embedded chDB. A write, a ``SETTINGS readonly = 0`` and a raised limit are all refused,
with bzrk's own message, and the table is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bzrk.api.http.app import create_app
from bzrk.auth.internal import InternalKeys, Principal
from bzrk.engine.compile.relation import CompiledTable
from bzrk.engine.service import QueryService
from bzrk.server.context import AppContext
from bzrk.server.settings import Settings
from bzrk.storage.catalog import StorageCatalog
from bzrk.testing import client

pytestmark = pytest.mark.anyio
ADMIN = Principal("user", "root", "root", ("admin",))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class CraftedTable(CompiledTable):
    """A compiled table whose plan renders to ``crafted`` whatever the run's window."""

    crafted: str = ""

    def render(self, bounds: Any = None, facts: Any = None) -> str:
        return self.crafted


class CraftedCompiler(QueryService):
    """The real service, except that every query compiles to ``self.sql``."""

    sql = ""

    def _compile(self, *args: Any, **kwargs: Any) -> Any:
        compiled = super()._compile(*args, **kwargs)
        if not self.sql:
            return compiled
        tables = [
            CraftedTable(t.name, t.plan, t.columns, crafted=self.sql) for t in compiled.tables
        ]
        return replace(compiled, tables=tables)


@pytest.fixture
def surface(tmp_path: Path, catalog: StorageCatalog) -> Iterator[tuple[Any, CraftedCompiler, str]]:
    service = CraftedCompiler(catalog.backend, catalog=catalog)
    key = Ed25519PrivateKey.generate()
    ctx = AppContext(
        settings=Settings(data_dir=tmp_path),
        meta=catalog.meta,
        keys=InternalKeys(key, key.public_key()),
        backend=catalog.backend,
        executor=service,
    )
    app = create_app(ctx)

    async def with_principal(scope: Any, receive: Any, send: Any) -> None:
        scope["bzrk.principal"] = ADMIN
        await app(scope, receive, send)

    resolved = catalog.resolve("default", "default")
    yield with_principal, service, f"`{resolved.ch_database}`.`{resolved.ch_table}`"


async def _query(app: Any, text: str = "print 1") -> Any:
    # Each crafted case gets its own query text: the service caches plans by text.
    async with client(app) as http:
        return await http.post("/query", json={"query": text, "database": "default"})


async def test_crafted_writes_and_settings_are_refused(surface: Any) -> None:
    app, service, table = surface
    service.sql = f"SELECT count() AS n FROM {table}"
    before = await _query(app, "print before = 1")
    assert before.status_code == 200, before.text
    assert before.json()["Tables"][0]["rows"] == [[0]]
    for case, crafted in enumerate(
        (
            f"INSERT INTO {table} (body) VALUES ('planted')",
            f"SELECT count() AS n FROM {table} SETTINGS readonly = 0",
            "SELECT 1 AS n SETTINGS max_memory_usage = 0",
            "SELECT 1 AS n SETTINGS max_execution_time = 0",
            f"ALTER TABLE {table} DELETE WHERE 1",
            f"DROP TABLE {table}",
        )
    ):
        service.sql = crafted
        refused = await _query(app, f"print case = {case}")
        assert refused.status_code >= 400, (crafted, refused.text)
        body = refused.json()
        assert "read-only" in body["message"], (crafted, body)
        assert "DB::Exception" not in refused.text and "Code: 164" not in refused.text
    service.sql = f"SELECT count() AS n FROM {table}"
    after = await _query(app, "print after = 1")
    assert after.json()["Tables"][0]["rows"] == [[0]]  # nothing was written or dropped


async def test_the_real_compiler_still_answers(surface: Any) -> None:
    app, service, _ = surface
    service.sql = ""
    answer = await _query(app)
    assert answer.status_code == 200 and answer.json()["Tables"][0]["rows"] == [[1]]
