"""Fixtures of the UI's API tests: the dev server's credentials and an admin browser session."""

from __future__ import annotations

from typing import Any

import httpx
import pytest


@pytest.fixture(scope="module")
def creds(dev_server) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return dev_server.credentials


@pytest.fixture
def session(creds: dict[str, Any]):  # type: ignore[no-untyped-def]
    """A browser-like client signed in with the admin account, CSRF header set."""
    with httpx.Client(base_url=creds["gateway"], timeout=60) as c:
        answer = c.post(
            "/auth/login",
            json={"username": creds["admin_user"], "password": creds["admin_password"]},
        )
        assert answer.status_code == 200, answer.text
        c.headers["X-CSRF-Token"] = answer.json()["csrf_token"]
        yield c
