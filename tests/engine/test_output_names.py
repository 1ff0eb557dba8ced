"""One naming rule: the column names of unnamed summarize / make-series items come from the
binder (``kql/binder/naming.py``), and the plan's columns are the binder's schema.

Before, the compiler had its own prefix table: ``summarize covariance(x, y)`` answered a column
``covariance_x_y`` (as ADX does) while the binder named it ``covariance_x``, so a later
``project covariance_x_y`` was refused as an unknown name.
"""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.compile.query import TableResolver
from bzrk.engine.oneshot import execute_text
from bzrk.engine.planning import bound_query, globals_for

DATA = "datatable(x:real, y:real, s:string) [1.0, 14.0, 'a', 2.0, 10.0, 'b', 3.0, 17.0, 'a']"


def columns(backend: Any, kql: str) -> tuple[list[str], list[list[Any]]]:
    table = execute_text(backend, kql).tables[0]
    return [c.name for c in table.columns], table.rows


def binder_columns(kql: str) -> list[str]:
    bound = bound_query(kql, {}, globals_for(TableResolver(), {}, "default"))
    return [c.name for c in bound.results[-1][1].columns]


@pytest.mark.parametrize(
    ("aggregates", "names"),
    [
        ("covariance(x, y)", ["covariance_x_y"]),
        ("covariancep(x, y)", ["covariancep_x_y"]),
        ("take_any(s)", ["s"]),
        ("take_anyif(s, x > 1)", ["s"]),
        ("make_list(s)", ["list_s"]),
        ("make_set(s)", ["set_s"]),
        ("percentile(x, 50)", ["percentile_x_50"]),
        ("count(), sum(x)", ["count_", "sum_x"]),
    ],
)
def test_summarize_names_are_the_binders(chdb_backend, aggregates: str, names: list[str]) -> None:  # type: ignore[no-untyped-def]
    kql = f"{DATA} | summarize {aggregates}"
    got, _ = columns(chdb_backend, kql)
    assert got == names
    assert binder_columns(kql) == names


def test_a_later_operator_reads_the_name_the_plan_gave(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got, rows = columns(
        chdb_backend, f"{DATA} | summarize covariance(x, y) | project covariance_x_y"
    )
    assert got == ["covariance_x_y"] and rows == [[pytest.approx(1.5)]]


def test_make_series_names_are_the_binders(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = (
        "datatable(t:long, v:real, s:string) [0, 1.0, 'a', 1, 2.0, 'a']"
        " | make-series avg(v), take_any(v) default=0 on t from 0 to 2 step 1 by s"
    )
    got, _ = columns(chdb_backend, kql)
    assert got == binder_columns(kql) == ["s", "avg_v", "v", "t"]


def test_a_derived_name_repeated_in_project_gets_a_suffix(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # Kusto.Language names these a, a1 (a name the query spells, `project a, a`, is KS171)

    result = execute_text(
        chdb_backend, "print a = 1 | project tostring(a), tostring(a), strlen('x'), strlen('yy')"
    )
    assert [c.name for c in result.tables[0].columns] == ["a", "a1", "strlen_", "strlen_1"]
    assert result.tables[0].rows == [["1", "1", 1, 2]]
