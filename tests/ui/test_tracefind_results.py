"""The trace-find builder's result in the browser, checked against the spans themselves.

``{ service == "checkout" } >> { status == "ERROR" }`` built in the Tracing tab must list exactly
the traces in which a checkout span has a descendant span with status ERROR, computed here from
the raw spans. The operator is issue #20's: while the engine refuses it (found out by running
the query, not by a flag), this test skips and says so; it runs by itself once trace-find does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import httpx
import pytest

from tests.ui.flows import run_flow

QUERY = (
    'default\n| trace-find { tostring(resource.service.name) == "checkout" } >> '
    '{ status_code == "ERROR" }'
)


def _post(creds: dict[str, Any], kql: str) -> httpx.Response:
    return httpx.post(
        f"{creds['gateway']}/query",
        json={"query": kql, "database": "default", "since": "24h ago"},
        headers={"Authorization": f"Bearer {creds['token']}"},
        timeout=300,
    )


def _rows(creds: dict[str, Any], kql: str) -> list[dict[str, Any]]:
    answer = _post(creds, kql)
    assert answer.status_code == 200, answer.text
    table = answer.json()["Tables"][0]
    names = [c["column_name"] for c in table["columns"]]
    return [dict(zip(names, row, strict=True)) for row in table["rows"]]


def _expected(creds: dict[str, Any]) -> set[str]:
    # Only traces with both a checkout span and an error span can match: fetch theirs whole.
    candidates = _rows(
        creds,
        "default | where isnotnull(duration)"
        ' | summarize c = countif(tostring(resource.service.name) == "checkout"),'
        ' e = countif(status_code == "ERROR") by trace_id | where c > 0 and e > 0 | take 100000',
    )
    ids = ", ".join(f'"{r["trace_id"]}"' for r in candidates) or '""'
    rows = _rows(
        creds,
        f"default | where isnotnull(duration) and trace_id in ({ids})"
        " | project trace_id, span_id, parent_span_id,"
        " service = tostring(resource.service.name), status_code | take 1000000",
    )
    spans: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in rows:
        spans[span["trace_id"]].append(span)
    found = set()
    for trace_id, members in spans.items():
        parent = {m["span_id"]: m["parent_span_id"] for m in members}
        checkout = {m["span_id"] for m in members if m["service"] == "checkout"}
        for m in members:
            if m["status_code"] != "ERROR":
                continue
            up, seen = parent.get(m["span_id"]), set()
            while up and up not in seen:
                if up in checkout:
                    found.add(trace_id)
                    break
                seen.add(up)
                up = parent.get(up)
    return found


def test_tracing_tab_lists_and_finds_traces_as_the_spans_say(dev_server) -> None:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    probe = _post(creds, QUERY)
    if probe.status_code != 200:
        body = probe.json()
        message = body.get("message") or body.get("error", {}).get("message", "")
        if "not supported" in message or body.get("code") == "UnsupportedConstruct":
            pytest.skip(f"the engine refuses trace-find ({body.get('code')}: {message}); issue #20")
        pytest.fail(f"trace-find answered {probe.status_code}: {body}")
    expected = _expected(creds)
    report = run_flow("tracefind_flow.mjs", creds)
    assert report["kql"] == QUERY
    assert report["rows"] == len(expected) > 0
    assert set(report["trace_ids"]) <= expected
    # The list the tab opens with names each trace's earliest span: its service and name (the
    # Service column was empty when `arg_min(…, service = …)` lost the name `service`).
    listed = {row["trace"]: (row["service"], row["root"]) for row in report["listed"]}
    ids = ", ".join(f'"{t}"' for t in listed)
    first = _rows(
        creds,
        f"default | where isnotnull(duration) and trace_id in ({ids})"
        " | summarize arg_min(start_time, span_name, s = tostring(resource.service.name))"
        " by trace_id",
    )
    assert len(listed) >= 10
    assert listed == {r["trace_id"]: (r["s"], r["span_name"]) for r in first}
