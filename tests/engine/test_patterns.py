"""Pattern statements through the whole engine."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

PATTERN = """
declare pattern country = (name:string)[state:string]
{
  ("USA").["New York"] = { print Capital = "Albany", Country = name };
  ("USA").["Washington"] = { print Capital = "Olympia", Country = name };
};
declare pattern one = (n:long) { (1) = { print v = n * 10 }; };
"""


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, PATTERN + kql).tables[0].rows


def test_pattern_with_path(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    assert rows(chdb_backend, 'country("USA").Washington') == [["Olympia", "USA"]]
    assert rows(chdb_backend, 'country("USA").["New York"]') == [["Albany", "USA"]]


def test_pattern_without_path_and_in_union(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    assert rows(chdb_backend, "one(1)") == [[10]]
    got = rows(chdb_backend, 'union one(1), (country("USA").Washington | project v = 0)')
    assert sorted(got) == [[0], [10]]


def test_pattern_without_matching_case(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError):
        rows(chdb_backend, 'country("Canada").Alberta')
