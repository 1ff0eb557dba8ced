"""An alert service over a real metadata store, owned by a real service principal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bzrk.alerts.service import AlertService
from bzrk.auth import accounts, permissions
from bzrk.auth.internal import InternalKeys, Principal
from bzrk.meta.store import MetaStore
from bzrk.server.context import AppContext
from bzrk.server.settings import Settings
from tests.api.mcp.harness import ScriptedExecutor, count_script


def member(meta: MetaStore, name: str, *, role: str = "member") -> Principal:
    sp_id = accounts.create_service_principal(meta, name, role, "", None)
    return Principal("service_principal", sp_id, name, (role,))


@pytest.fixture
def ctx(tmp_path: Path) -> Any:
    meta = MetaStore.for_data_dir(tmp_path)
    meta.migrate()
    key = Ed25519PrivateKey.generate()
    context = AppContext(
        settings=Settings(data_dir=tmp_path),
        meta=meta,
        keys=InternalKeys(key, key.public_key()),
        executor=ScriptedExecutor(count_script([1, 5])),
    )
    yield context
    meta.close()


@pytest.fixture
def owner(ctx: AppContext) -> Principal:
    found = member(ctx.meta, "owner")
    permissions.add_grant(ctx.meta, found.key, permissions.VIEWER, "default", by="test")
    return found


@pytest.fixture
def service(ctx: AppContext) -> AlertService:
    return AlertService(ctx)
