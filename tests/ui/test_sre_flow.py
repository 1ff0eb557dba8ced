"""Issue #24's acceptance in headless Chromium against a real ``bzrk dev --demo`` (sre_flow.mjs).

A trace opened from a trace_id cell with its span count and nesting checked against the data,
the trace list filtered by a brushed heatmap region, the trace-find builder's KQL, the logs view
with live tail over records sent through OTLP ingest, the second of two blocks run with
Ctrl+Enter, a zoomed timechart's range in the URL, a shared URL reloaded to the same view, a
library query saved and reopened with its time range, and a two-panel dashboard. Screenshots of
every step go to test-artifacts/ui/.
"""

from __future__ import annotations

from tests.ui.flows import run_flow, screenshot_ok


def test_sre_flow_in_chromium(dev_server) -> None:  # type: ignore[no-untyped-def]
    report = run_flow("sre_flow.mjs", dev_server.credentials)
    waterfall = report["waterfall"]
    assert waterfall["rows_shown"] == waterfall["spans_in_data"] > 5
    assert waterfall["max_depth"] >= 3
    assert waterfall["logs_shown"] == waterfall["logs_in_data"]
    assert report["brush"]["traces_listed"] > 0
    assert "trace-find" in report["tracefind_kql"] and ">>" in report["tracefind_kql"]
    assert report["live_tail"]["newest_severity"] == "ERROR"
    assert report["block_run"]["cell"] == "second"
    assert 1 < report["zoom"]["hours"] < 12
    assert report["shared_url"]["same_points"] and report["shared_url"]["tab"] == "Chart"
    assert report["library"]["range"] == "now-6h"
    assert len(report["dashboard"]["panels"]) == 2
    assert any("http.route" in c for c in report["path_completions"])
    assert not report["console_errors"], report["console_errors"]
    for step in report["steps"]:
        assert screenshot_ok(step), step
