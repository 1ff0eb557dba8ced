"""The web UI end to end in headless Chromium against a real ``bzrk dev --demo``.

Drives ``ui_flow.mjs`` (playwright-core with Debian's chromium, never a downloaded browser):
sign in, a progressive query with at least two snapshots, a timechart, an error with its span
highlighted, a service principal created and revoked. Screenshots go to test-artifacts/ui/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "src" / "bzrk" / "ui" / "web"
STATIC_INDEX = REPO / "src" / "bzrk" / "ui" / "static" / "index.html"
ARTIFACTS = REPO / "test-artifacts" / "ui"
CHROMIUM = os.environ.get("BZRK_CHROMIUM", "/usr/bin/chromium")


def _skip_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set BZRK_CHROMIUM)"
    if shutil.which("node") is None:
        return "node is not installed (Node.js 20+ is needed to build and test the UI)"
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        return "UI dependencies are not installed: run `make ui`"
    if not STATIC_INDEX.is_file():
        return "the UI is not built: run `make ui`"
    return None


def test_ui_flow_in_chromium(dev_server) -> None:  # type: ignore[no-untyped-def]
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    creds = dev_server.credentials
    env = {
        **os.environ,
        "BZRK_GATEWAY": creds["gateway"],
        "BZRK_USER": creds["admin_user"],
        "BZRK_PASSWORD": creds["admin_password"],
        "BZRK_ARTIFACTS": str(ARTIFACTS),
        "BZRK_CHROMIUM": CHROMIUM,
        "BZRK_UI_WEB": str(WEB),
    }
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("ui_flow.mjs"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report from the browser flow: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    report = json.loads(lines[-1])
    (ARTIFACTS / "report.json").write_text(json.dumps(report, indent=2))
    assert report["ok"], report.get("error", report)
    assert done.returncode == 0
    assert report["table_query"]["snapshots"] >= 2
    assert report["chart_points"] > 0
    assert report["token_status_before_revoke"] == 200
    assert report["token_status_after_revoke"] == 401
    for step in (
        "01-login",
        "03-progressive-results",
        "04-timechart",
        "05-error-highlight",
        "07-service-principal-revoked",
    ):
        assert (ARTIFACTS / f"{step}.png").stat().st_size > 1000
