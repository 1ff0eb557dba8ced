"""The MCP dashboard readers over the UI's ``dashboards`` table (meta revision 0004)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from bzrk.alerts import dashboards
from bzrk.alerts.errors import AlertError
from bzrk.auth import permissions
from bzrk.meta import schema
from bzrk.meta.store import utcnow
from tests.alerts.conftest import member


def test_no_dashboards_means_an_empty_list_and_not_found(ctx: Any, owner: Any) -> None:
    assert dashboards.list_dashboards(ctx.meta) == []
    with pytest.raises(AlertError) as missing:
        dashboards.get_dashboard(ctx.meta, owner, "any")
    assert missing.value.code == "NotFound"


def test_panels_resolve_to_the_queries_the_caller_may_see(ctx: Any, owner: Any) -> None:
    meta = ctx.meta
    ctx.meta.create_database("secret")
    now = utcnow()
    table = schema.dashboards
    with meta.begin() as conn:
        for ident, database in (("q1", "default"), ("q2", "secret")):
            conn.execute(
                sa.insert(schema.saved_queries).values(
                    id=ident, folder="", name=f"query {ident}", query=f"default | take {ident[-1]}",
                    description="", database=database, owner=owner.key, created_at=now,
                    updated_at=now,
                )
            )  # fmt: skip
        panels = [{"query_id": "q1", "title": "", "width": 2}, {"query_id": "q2", "title": "hidden", "width": 1}]  # fmt: skip
        conn.execute(
            sa.insert(table).values(
                id="d1", name="oncall", description="", panels=json.dumps(panels), since="1h ago",
                until=None, owner=owner.key, created_at=now, updated_at=now,
            )
        )  # fmt: skip
    assert [(d["name"], d["panels"]) for d in dashboards.list_dashboards(meta)] == [("oncall", 2)]
    board = dashboards.get_dashboard(meta, owner, "oncall")
    first, second = board["panels"]
    assert (first["title"], first["query"], first["database"], first["width"]) == (
        "query q1", "default | take 1", "default", 2,
    )  # fmt: skip
    assert second["query"] is None and second["database"] is None  # no grant on "secret"
    admin = member(meta, "root", role="admin")
    assert dashboards.get_dashboard(meta, admin, "d1")["panels"][1]["query"] == "default | take 2"
    assert permissions.authorize(meta, owner, permissions.Action.QUERY, "secret").allowed is False
