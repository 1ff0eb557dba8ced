"""The bench times hand-written SQL and KQL alternately, with more runs for fast queries."""

from __future__ import annotations

from bench.__main__ import FAST_RUNS, _time_pair


def test_runs_alternate_and_fast_queries_get_more_runs() -> None:
    calls: list[str] = []
    sql_figures, sql_result, kql_figures, kql_result = _time_pair(
        lambda: calls.append("sql") or "s", lambda: calls.append("kql") or "k", runs=5
    )
    assert (sql_result, kql_result) == ("s", "k")  # the warm-up's results
    assert calls[:4] == ["sql", "kql", "sql", "kql"]
    assert sql_figures["runs"] == kql_figures["runs"] == FAST_RUNS
    assert len(calls) == 2 + 2 * FAST_RUNS


def test_a_run_longer_than_the_budget_is_the_measurement() -> None:
    calls: list[str] = []
    sql_figures, _, kql_figures, _ = _time_pair(
        lambda: calls.append("sql"), lambda: calls.append("kql"), runs=5, budget_s=0.0
    )
    assert calls == ["sql", "kql"]
    assert sql_figures["runs"] == kql_figures["runs"] == 1
