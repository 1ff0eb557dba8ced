"""``otel-log-stats``: a log sample's schema (fieldstats) and its ranked top values."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

LOGS = """datatable(body:string, severity_text:string, severity_number:int, scope_name:string,
                     resource:dynamic, attributes:dynamic)[
  "user 42 logged in", "INFO", 9, "auth", dynamic({"service": {"name": "api"}}), dynamic({"a": 1}),
  "user 7 logged in", "INFO", 9, "auth", dynamic({"service": {"name": "api"}}), dynamic({"a": 2}),
  "disk full", "ERROR", 17, "", dynamic({"service": {"name": "db"}}), dynamic({"b": "x"})
]"""


def tables(backend: Any, kql: str) -> dict[str, Any]:
    return {t.name: t for t in execute_text(backend, kql).tables}


def test_two_tables_schema_then_top_values(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = tables(chdb_backend, LOGS + " | otel-log-stats attributes, resource")
    assert list(got) == ["PrimaryResult", "TopValues"]
    schema = {r[0]: r[1:4] for r in got["PrimaryResult"].rows}
    assert schema == {
        "resource.service.name": ["string", 2, 1.0],
        "attributes.a": ["long", 2, 2 / 3],
        "attributes.b": ["string", 1, 1 / 3],
    }
    top = got["TopValues"]
    assert [c.name for c in top.columns] == ["Category", "Value", "Count", "Frequency", "Rank"]
    assert top.rows == [
        ["pattern", "user <N> logged in", 2, 2 / 3, 1],
        ["pattern", "disk full", 1, 1 / 3, 2],
        # The empty scope of the third record is not a value.
        ["scope", "auth", 2, 2 / 3, 1],
        ["service", "api", 2, 2 / 3, 1],
        ["service", "db", 1, 1 / 3, 2],
        ["severity", "INFO", 2, 2 / 3, 1],
        ["severity", "ERROR", 1, 1 / 3, 2],
    ]


def test_severity_column_and_sample_limit(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = tables(chdb_backend, LOGS + " | otel-log-stats severity=severity_number")
    severity = [r[1:3] for r in got["TopValues"].rows if r[0] == "severity"]
    assert severity == [["9", 2], ["17", 1]]
    # No column named: every column of the input, as fieldstats lists them.
    assert "body" in {r[0] for r in got["PrimaryResult"].rows}
    one = tables(chdb_backend, LOGS + " | otel-log-stats resource with limit=1")
    counts = {r[0]: r[2] for r in one["TopValues"].rows}
    assert set(counts.values()) == {1}


def test_categories_without_columns_are_left_out(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = tables(chdb_backend, 'datatable(body:string)["a b", "a b"] | otel-log-stats')
    assert got["TopValues"].rows == [["pattern", "a b", 2, 1.0, 1]]


@pytest.mark.parametrize(
    ("tail", "code"),
    [
        ("otel-log-stats colour=body", "InvalidArgument"),
        ("otel-log-stats limit=0", "InvalidArgument"),
        ("otel-log-stats severity=x", "UnknownName"),
    ],
)
def test_bad_parameters_are_refused(chdb_backend, tail, code) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as raised:
        tables(chdb_backend, "datatable(body:string)['a'] | " + tail)
    assert raised.value.code == code
