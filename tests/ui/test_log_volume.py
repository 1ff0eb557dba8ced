"""The logs view's volume query (``ui/web/src/logvolume.ts``), run under Node, then run by the
engine: it counts every record the user's query matches by time bin and severity, whatever row
limit, order or shape the query's last stages give its result."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text
from tests.ui.test_tracefind_kql import WEB, _call

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (WEB / "node_modules" / "typescript").is_dir(),
    reason="needs Node.js and the UI's node_modules (make ui)",
)

LOGS = """datatable(timestamp: datetime, severity_text: string, body: string, service: string) [
    datetime(2026-01-01 10:00:01), "INFO", "a | b", "cart",
    datetime(2026-01-01 10:00:02), "ERROR", "c; d", "cart",
    datetime(2026-01-01 10:05:03), "WARN", "e", "cart",
    datetime(2026-01-01 10:06:04), "ERROR", "f", "pay",
]"""


def volume(query: str, step: str = "5m") -> str | None:
    [answer] = _call("logvolume", "volumeQuery", [[query, step]])
    assert "ok" in answer, answer
    result: str | None = answer["ok"]
    return result


def counts(chdb_backend: Any, query: str) -> dict[tuple[int, str], int]:
    text = volume(query)
    assert text is not None
    rows = execute_text(chdb_backend, text).tables[0].rows
    return {(t, s): n for t, s, n in rows}  # summarize puts its by-columns first


def test_a_row_limit_and_projection_at_the_end_do_not_limit_the_count(chdb_backend: Any) -> None:
    query = f'{LOGS}\n| where service == "cart"\n| project timestamp, body\n| take 1'
    got = counts(chdb_backend, query)
    assert sum(got.values()) == 3
    assert sorted(s for _, s in got) == ["ERROR", "INFO", "WARN"]
    # Two bins of 5 minutes: 10:00 holds two records, 10:05 one.
    assert sorted(got.values()) == [1, 1, 1] and len({t for t, _ in got}) == 2


def test_order_top_and_render_are_dropped_but_filters_kept(chdb_backend: Any) -> None:
    query = (
        f'{LOGS} | where severity_text == "ERROR" | order by timestamp desc | top 1 by timestamp'
    )
    assert sum(counts(chdb_backend, query).values()) == 2
    text = volume(query)
    assert text is not None and "order by" not in text and "top 1" not in text


def test_pipes_and_semicolons_in_strings_and_lets_are_not_stages(chdb_backend: Any) -> None:
    query = f'let svc = "cart";\n{LOGS}\n| where body has "|" or service == svc // a | comment\n| take 5'
    text = volume(query)
    assert text is not None and text.startswith('let svc = "cart";')
    assert sum(counts(chdb_backend, query).values()) == 3


def test_a_query_without_severity_counts_under_an_empty_severity(chdb_backend: Any) -> None:
    query = f"{LOGS} | project timestamp, body | where body != 'e'"
    # The last stage is a filter, so nothing is dropped; severity_text is projected away before.
    got = counts(chdb_backend, query)
    assert sum(got.values()) == 3 and {s for _, s in got} == {""}


def test_nothing_left_to_count_gives_no_query() -> None:
    assert volume("") is None
    assert volume("   \n") is None
