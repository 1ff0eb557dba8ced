"""The web UI end to end in headless Chromium against a real ``bzrk dev --demo``.

Drives ``ui_flow.mjs`` (playwright-core with Debian's chromium, never a downloaded browser):
sign in, a progressive query with at least two snapshots, a timechart, an error with its span
highlighted, a service principal created and revoked. Screenshots go to test-artifacts/ui/.
"""

from __future__ import annotations

from tests.ui.flows import run_flow, screenshot_ok


def test_ui_flow_in_chromium(dev_server) -> None:  # type: ignore[no-untyped-def]
    report = run_flow("ui_flow.mjs", dev_server.credentials)
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
        assert screenshot_ok(step), step
