"""`find` and `top-hitters` through the whole engine (parse, bind, compile, chDB), with the
answers the ADX pages show."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.compile.query import TableSource
from bzrk.engine.oneshot import QueryError, execute_text
from tests.engine.stored_logs import Logs, create_logs

NS = 1_704_067_200_000_000_000  # 2024-01-01T00:00:00Z
S1 = "acbd207d-51aa-4df7-bfa7-be70eb68f04e"

# The two tables of the ADX find page ("Examples of find output results").
EVENTS = f"""
let EventsTable1 = datatable(Session_Id:string, Level:string, EventText:string, Version:string)[
  '{S1}', 'Information', 'Some Text1', 'v1.0.0',
  '{S1}', 'Error', 'Some Text2', 'v1.0.0',
  '28b8e46e-3c31-43cf-83cb-48921c3986fc', 'Error', 'Some Text3', 'v1.0.1',
  '8f057b11-3281-45c3-a856-05ebb18a3c59', 'Information', 'Some Text4', 'v1.1.0'];
let EventsTable2 = datatable(Session_Id:string, Level:string, EventText:string, EventName:string)[
  'f7d5f95f-f580-4ea6-830b-5776c8d64fdd', 'Information', 'Some Other Text1', 'Event1',
  '{S1}', 'Information', 'Some Other Text2', 'Event2',
  '{S1}', 'Error', 'Some Other Text3', 'Event3',
  '15eaeab5-8576-4b58-8fc6-478f75d8fee4', 'Error', 'Some Other Text4', 'Event4'];
"""

DATA = """
let T = datatable(a:string, n:long, x:real)
  ['p', 1, 0.5, 'q', 2, 1.5, 'p', 3, 4.0, 'r', 10, 7.0, 'q', 1, 9.5, 'p', 2, 1.0];
"""


def run(backend: Any, kql: str, **kw: Any) -> tuple[list[tuple[str, str]], list[list[Any]]]:
    result = execute_text(backend, kql, **kw).tables[0]
    return [(c.name, c.type) for c in result.columns], result.rows


# --- top-hitters ---------------------------------------------------------------------------


def test_top_hitters_counts_values_most_frequent_first(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(chdb_backend, DATA + "T | top-hitters 2 of a")
    assert columns == [("a", "string"), ("approximate_count_a", "long")]
    assert rows == [["p", 3], ["q", 2]]


def test_top_hitters_by_sums_the_expression(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(chdb_backend, DATA + "T | top-hitters 5 of a by n")
    assert columns == [("a", "string"), ("approximate_sum_n", "long")]
    assert rows == [["r", 10], ["p", 6], ["q", 3]]
    columns, rows = run(chdb_backend, DATA + "T | top-hitters 1 of a by x")
    assert columns == [("a", "string"), ("approximate_sum_x", "real")]
    assert rows == [["q", 11.0]]


def test_top_hitters_ties_order_by_value_and_downstream_sees_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # n: 1 twice, 2 twice, 3 and 10 once; equal counts are ordered by the value.
    _, rows = run(
        chdb_backend,
        DATA + "T | top-hitters 3 of n | extend twice = approximate_count_n * 2",
    )
    assert rows == [[1, 2, 4], [2, 2, 4], [3, 1, 2]]


def test_top_hitters_of_a_non_number_sum_is_a_type_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as raised:
        run(chdb_backend, DATA + "T | top-hitters 2 of a by a")
    assert raised.value.code == "TypeMismatch"


# --- find ----------------------------------------------------------------------------------


def test_find_project_smart_packs_the_uncommon_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(chdb_backend, EVENTS + f"find Session_Id == '{S1}'")
    assert columns == [
        ("source_", "string"),
        ("Session_Id", "string"),
        ("Level", "string"),
        ("EventText", "string"),
        ("pack_", "dynamic"),
    ]
    assert sorted(rows, key=lambda r: r[3]) == [
        ["EventsTable2", S1, "Information", "Some Other Text2", {"EventName": "Event2"}],
        ["EventsTable2", S1, "Error", "Some Other Text3", {"EventName": "Event3"}],
        ["EventsTable1", S1, "Information", "Some Text1", {"Version": "v1.0.0"}],
        ["EventsTable1", S1, "Error", "Some Text2", {"Version": "v1.0.0"}],
    ]


def test_find_project_with_pack_all(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(
        chdb_backend,
        EVENTS + "find in (EventsTable1, EventsTable2) "
        f"where Session_Id == '{S1}' and Level == 'Error' "
        "project EventText, Version, EventName, pack_all()",
    )
    assert [n for n, _ in columns] == ["source_", "EventText", "Version", "EventName", "pack_"]
    packed = {"Session_Id": S1, "Level": "Error"}
    assert sorted(rows) == [
        ["EventsTable1", "Some Text2", "v1.0.0", "", packed],
        ["EventsTable2", "Some Other Text3", "", "Event3", packed],
    ]


def test_find_filters_each_table_by_the_columns_it_has(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = run(
        chdb_backend,
        EVENTS + "find where Version == 'v1.0.0' or EventName == 'Event1' "
        "project Session_Id, EventText, Version, EventName",
    )
    assert sorted(rows) == [
        ["EventsTable1", S1, "Some Text1", "v1.0.0", ""],
        ["EventsTable1", S1, "Some Text2", "v1.0.0", ""],
        ["EventsTable2", "f7d5f95f-f580-4ea6-830b-5776c8d64fdd", "Some Other Text1", "", "Event1"],
    ]


def test_find_withsource_terms_and_typed_projection(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(
        chdb_backend,
        EVENTS + 'find withsource=Src in (EventsTable1, EventsTable2) where * has "Text3" '
        "project Level, Version:string, EventName",
    )
    assert columns == [
        ("Src", "string"),
        ("Level", "string"),
        ("Version", "string"),
        ("EventName", "string"),
    ]
    assert sorted(rows) == [
        ["EventsTable1", "Error", "v1.0.1", ""],
        ["EventsTable2", "Error", "", "Event3"],
    ]


def test_find_project_pack_all_only(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = run(
        chdb_backend, EVENTS + "find in (EventsTable1) where Level == 'Error' project pack_all()"
    )
    assert [r[1]["EventText"] for r in sorted(rows, key=lambda r: r[1]["EventText"])] == [
        "Some Text2",
        "Some Text3",
    ]
    assert all(set(r[1]) == {"Session_Id", "Level", "EventText", "Version"} for r in rows)


def test_find_in_a_wildcard_of_tables(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = run(
        chdb_backend,
        EVENTS + "let Other = datatable(Level:string)['Error'];"
        "find in (Events*) where Level == 'Error' | summarize n = count() by source_",
    )
    assert sorted(rows) == [["EventsTable1", 2], ["EventsTable2", 2]]


def test_find_unknown_column_is_a_located_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as raised:
        run(chdb_backend, EVENTS + "find in (EventsTable1, EventsTable2) where Nope == 1")
    assert raised.value.code == "UnknownName"


class DefaultTable(Logs):
    """bzrk's stored OTel table under its KQL name, ``default``, and the only table."""

    def resolve(self, name: str) -> TableSource | None:
        return self.source if name == "default" else None

    def table_names(self) -> tuple[str, ...]:
        return ("default",)


@pytest.fixture
def stored(chdb_backend, ch_database) -> DefaultTable:  # type: ignore[no-untyped-def]
    bags = [
        {"resource": {"service.name": svc}, "attributes": {"code": code}}
        for svc, code in [("checkout", "503"), ("cart", "200"), ("checkout", "200")]
    ]
    create_logs(chdb_backend, ch_database, NS, bags)
    return DefaultTable(ch_database)


def test_find_over_the_stored_table_names_it_default(chdb_backend, stored) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(
        chdb_backend, 'find where body has "1" project body, resource', resolver=stored
    )
    assert columns == [("source_", "string"), ("body", "string"), ("resource", "dynamic")]
    assert rows == [["default", "line 1", {"service": {"name": "cart"}}]]
    _, rows = run(
        chdb_backend,
        'find "checkout" | summarize n = count() by source_',
        resolver=stored,
    )
    assert rows == [["default", 2]]
    _, rows = run(
        chdb_backend,
        'find in (def*) where attributes.code == "200" project body | order by body asc',
        resolver=stored,
    )
    assert rows == [["default", "line 1"], ["default", "line 2"]]


def test_top_hitters_over_stored_rows(chdb_backend, stored) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(
        chdb_backend,
        "default | extend service = tostring(resource.service.name) | top-hitters 2 of service",
        resolver=stored,
    )
    assert columns == [("service", "string"), ("approximate_count_service", "long")]
    assert rows == [["checkout", 2], ["cart", 1]]


def test_find_packs_a_tables_null_and_empty_values(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # the reference's `find in (C*) where * has "Kusto"` shows "participants":"" and
    # "starttime":null in pack_
    kql = (
        "let ConferenceSessions = view() { datatable(conference: string, participants: string, "
        'starttime: datetime, duration: long)["Ignite 2018 Kusto", "", datetime(null), long(null)] }; '
        'let Customers = view() { datatable(CityName: string, CompanyName: string)["Kusto", ""] }; '
        'find in (C*) where * has "Kusto" | order by source_ asc'
    )
    result = execute_text(chdb_backend, kql).tables[0]
    assert result.rows == [
        [
            "ConferenceSessions",
            {
                "conference": "Ignite 2018 Kusto",
                "participants": "",
                "starttime": None,
                "duration": None,
            },
        ],
        ["Customers", {"CityName": "Kusto", "CompanyName": ""}],
    ]


def test_find_over_a_stored_otel_table_leaves_absent_fields_out_of_pack(
    chdb_backend, ch_database
) -> None:  # type: ignore[no-untyped-def]
    create_logs(chdb_backend, ch_database, 1_700_000_000 * 10**9, [{"attributes": {"k": "v"}}])
    result = execute_text(
        chdb_backend,
        'find in (logs) where body has "line" project body, pack_all()',
        resolver=Logs(ch_database),
    ).tables[0]
    [[source, body, pack]] = [r for r in result.rows]
    assert (source, body) == ("logs", "line 0")
    assert "metric_name" not in pack and "trace_id" not in pack  # absent fields: no null keys
    assert pack["attributes"] == {"k": "v"} and pack["timestamp"]
