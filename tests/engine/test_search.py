"""The search operator through the whole engine."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

VIEWS = """
let Logs = view () { datatable(msg:string, code:long) ["disk error on sda", 500, "all good", 200, "Error: timeout", 504] };
let Hosts = view () { datatable(name:string) ["errorbox", "web1"] };
"""


def table(backend: Any, kql: str) -> tuple[list[str], list[list[Any]]]:
    result = execute_text(backend, VIEWS + kql).tables[0]
    return [c.name for c in result.columns], result.rows


def test_search_term_across_views(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = table(chdb_backend, 'search "error" | order by code asc')
    assert columns == ["$table", "msg", "code", "name"]
    # `has` matches whole terms: "errorbox" is not the term "error".
    assert [(r[0], r[1]) for r in rows] == [
        ("Logs", "disk error on sda"),
        ("Logs", "Error: timeout"),
    ]


def test_search_prefix_and_column_predicate(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(chdb_backend, 'search in (Hosts) "error*"')
    assert rows == [["Hosts", "errorbox"]]
    _, rows = table(chdb_backend, "search code > 500")
    assert rows == [["Logs", "Error: timeout", 504]]


def test_piped_search_and_case_sensitivity(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(chdb_backend, 'Logs | search kind=case_sensitive "Error"')
    assert rows == [["Error: timeout", 504]]
    _, rows = table(chdb_backend, 'Logs | search msg:"timeout" or code == 200 | order by code asc')
    assert [r[1] for r in rows] == [200, 504]


def test_search_with_no_matching_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as err:
        table(chdb_backend, "Logs | search nosuch == 1")
    assert err.value.code == "UnknownName"
