"""The UI's dashboards, read for MCP (``list_dashboards``, ``get_dashboard``).

The web UI owns dashboards (meta revision 0004); ``bzrk.gateway.dashboard_routes.Dashboards``
is their one store, and it decides, like the library, which saved queries a caller sees. This
module only shapes its answers for agents: a dashboard is found by id or by name, and each
panel carries its saved query's text, database and window, or ``null`` when the query was
deleted or its database is not one the caller may query.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from bzrk.alerts.errors import not_found
from bzrk.auth.internal import Principal
from bzrk.gateway.dashboard_routes import DashboardError, Dashboards
from bzrk.meta import schema
from bzrk.meta.store import MetaStore


def list_dashboards(meta: MetaStore) -> list[dict[str, Any]]:
    return [
        {
            "id": d["id"],
            "name": d["name"],
            "description": d["description"],
            "since": d["since"],
            "until": d["until"],
            "panels": len(d["panels"]),
            "owner": d["owner"],
            "updated_at": d["updated_at"],
        }
        for d in Dashboards(meta).list()
    ]


def _resolve(meta: MetaStore, ident: str) -> str:
    """The id of the dashboard named or numbered ``ident``."""
    table = schema.dashboards
    with meta.engine.connect() as conn:
        found = conn.execute(
            sa.select(table.c.id)
            .where(sa.or_(table.c.id == ident, table.c.name == ident))
            .order_by((table.c.id == ident).desc(), table.c.created_at)
        ).first()
    if found is None:
        raise not_found("dashboard", ident)
    return str(found.id)


def get_dashboard(meta: MetaStore, principal: Principal, ident: str) -> dict[str, Any]:
    try:
        board = Dashboards(meta).get(_resolve(meta, ident), principal)
    except DashboardError as exc:  # deleted between the lookup and the read
        raise not_found("dashboard", ident) from exc
    panels = []
    for panel in board["panels"]:
        query = panel.get("query")
        panels.append(
            {
                "query_id": panel["query_id"],
                "title": panel.get("title") or (query["name"] if query else ""),
                "width": panel.get("width", 1),
                "query": query["query"] if query else None,
                "database": query["database"] if query else None,
                "since": query["since"] if query else None,
                "until": query["until"] if query else None,
            }
        )
    return {
        "id": board["id"],
        "name": board["name"],
        "description": board["description"],
        "since": board["since"],
        "until": board["until"],
        "panels": panels,
        "owner": board["owner"],
        "updated_at": board["updated_at"],
    }
