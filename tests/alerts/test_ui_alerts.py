"""The alerting UI in headless Chromium against a real ``bzrk dev --demo`` (alerts_flow.mjs):
"Alert on this" from Explore, the Alerts page, an alert's history filling with runs, mute, delete.
Screenshots go to test-artifacts/ui/alerts-*.png."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.ui.flows import ARTIFACTS, CHROMIUM, WEB, skip_reason

pytestmark = pytest.mark.e2e


def test_alert_on_this_and_the_alerts_page(dev_server) -> None:  # type: ignore[no-untyped-def]
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    creds = dev_server.credentials
    name = f"ui-{uuid.uuid4().hex[:6]}"
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("alerts_flow.mjs"))],
        env={
            **os.environ,
            "BZRK_GATEWAY": creds["gateway"],
            "BZRK_USER": creds["admin_user"],
            "BZRK_PASSWORD": creds["admin_password"],
            "BZRK_ARTIFACTS": str(ARTIFACTS),
            "BZRK_CHROMIUM": CHROMIUM,
            "BZRK_UI_WEB": str(WEB),
            "BZRK_ALERT": name,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report from the browser flow: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    report = json.loads(lines[-1])
    assert report["ok"], report.get("error", report)
    # The explorer's range (the picker shows `now-24h`) as a Berserk `since` (`24h ago`).
    assert report["prefilled_since"] == f"{report['range'].removeprefix('now-')} ago"
    assert "expected '<ident> <op> <number>'" in report["bad_condition_message"]
    assert report["history_rows"] >= 1 and len(report["first_run_id"]) == 36
    assert report["muted_state"] == "firing · muted"
    assert report["listed_after_delete"] == 0
    assert not report["console_errors"], report["console_errors"]
