"""Settings → Access and Audit log in headless Chromium against a real ``bzrk dev --demo``:
a grant made on the page lets a service principal mint an ingest token on its next request, a
revoke from the table stops it, and both changes show in the audit log."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from tests.ui.flows import ARTIFACTS, CHROMIUM, WEB, skip_reason

pytestmark = pytest.mark.e2e


def test_grants_and_audit_log_in_chromium(dev_server) -> None:  # type: ignore[no-untyped-def]
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    creds = dev_server.credentials
    with httpx.Client(
        base_url=creds["gateway"], headers={"Authorization": f"Bearer {creds['token']}"}
    ) as admin:
        made = admin.post(
            "/api/v1/admin/service-principals", json={"name": f"ui-access-{uuid.uuid4().hex[:6]}"}
        )
        sp_id = made.json()["service_principal"]["id"]
        token = admin.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={}).json()
    env = {
        **os.environ,
        "BZRK_GATEWAY": creds["gateway"],
        "BZRK_USER": creds["admin_user"],
        "BZRK_PASSWORD": creds["admin_password"],
        "BZRK_ARTIFACTS": str(ARTIFACTS),
        "BZRK_CHROMIUM": CHROMIUM,
        "BZRK_UI_WEB": str(WEB),
        "BZRK_SP_ID": sp_id,
        "BZRK_SP_TOKEN": token["token"],
    }
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("settings_access.mjs"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    report = json.loads(lines[-1])
    assert report["ok"], report.get("error", report)
    assert any("viewer" in row and "database:default" in row for row in report["rows_before"])
    assert (report["mint_before"], report["mint_granted"], report["mint_revoked"]) == (
        403,
        201,
        403,
    )
    assert {"grant_added", "grant_removed"} <= set(report["audit_events"])
    for step in report["steps"]:
        assert (ARTIFACTS / f"{step}.png").stat().st_size > 1000
