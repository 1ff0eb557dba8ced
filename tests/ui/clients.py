"""Helpers for the UI's API tests against a dev server."""

from __future__ import annotations

import httpx


def member_token(session: httpx.Client, name: str) -> str:
    """A new member service principal's token (may read, may not change others' things)."""
    sp = session.post("/api/v1/admin/service-principals", json={"name": name, "role": "member"})
    sp_id = sp.json()["service_principal"]["id"]
    return session.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={}).json()["token"]
