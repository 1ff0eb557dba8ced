"""Kusto's deprecated function names answer as the functions they stand for.

The engine still accepts them (Kusto.Language's catalogue lists each one, hidden, beside its
current name), and older queries, blog posts and agents write them: ``parsejson``,
``notempty``, ``extractall``. Each must give its current function's answer, with the arguments
in the deprecated function's own order (``replace(regex, rewrite, source)``).
"""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text
from tests.engine.stored_logs import Logs, create_logs

# (deprecated call, the current call it must equal)
PAIRS = [
    ("parsejson('{\"a\": [1, 2]}')", "parse_json('{\"a\": [1, 2]}')"),
    (
        "parseurl('https://u:p@h.example:8080/a/b?x=1#f')",
        "parse_url('https://u:p@h.example:8080/a/b?x=1#f')",
    ),
    ("parseurlquery('k1=v1&k2=v2')", "parse_urlquery('k1=v1&k2=v2')"),
    ("extractall(@'(\\d+)', 'a1b22c333')", "extract_all(@'(\\d+)', 'a1b22c333')"),
    (
        "extractall(@'(\\w)(\\d+)', dynamic([2]), 'a1b22')",
        "extract_all(@'(\\w)(\\d+)', dynamic([2]), 'a1b22')",
    ),
    ("replace(@'(\\d)', @'<\\1>', 'a1b2')", "replace_regex('a1b2', @'(\\d)', @'<\\1>')"),
    ("arraylength(dynamic([1, 2, 3]))", "array_length(dynamic([1, 2, 3]))"),
    ("array_strcat(dynamic([1, 'b', 2.5]), '-')", "strcat_array(dynamic([1, 'b', 2.5]), '-')"),
    (
        "datepart('hour', datetime(2024-02-03 04:05:06))",
        "datetime_part('hour', datetime(2024-02-03 04:05:06))",
    ),
    ("weekofyear(datetime(2024-12-30))", "week_of_year(datetime(2024-12-30))"),
    ("totime('1.02:03:04')", "totimespan('1.02:03:04')"),
    ("notnull(int(null))", "isnotnull(int(null))"),
    ("notempty('')", "isnotempty('')"),
    ("to_utf8('héllo')", "unicode_codepoints_from_string('héllo')"),
    ("make_string(104, 233, 108)", "unicode_codepoints_to_string(104, 233, 108)"),
]


def one_row(backend: Any, kql: str) -> list[Any]:
    table = execute_text(backend, kql).tables[0]
    assert len(table.rows) == 1
    return table.rows[0]


@pytest.mark.parametrize(("old", "new"), PAIRS, ids=[p[0].split("(")[0] for p in PAIRS])
def test_a_deprecated_name_answers_as_its_current_function(
    chdb_backend: Any, old: str, new: str
) -> None:
    old_row, new_row = one_row(chdb_backend, f"print {old}"), one_row(chdb_backend, f"print {new}")
    assert old_row == new_row
    assert old_row[0] not in (None, "")


def test_the_deprecated_replace_takes_the_regex_first(chdb_backend: Any) -> None:
    assert one_row(chdb_backend, "print replace(@'o+', '0', 'foo boo')") == ["f0 b0"]


def test_columnifexists_and_iscolumnexists_look_at_the_row(chdb_backend: Any) -> None:
    kql = (
        "datatable(a: long)[1] "
        "| project x = columnifexists('a', 0), y = columnifexists('b', 7), "
        "e = iscolumnexists('a'), n = iscolumnexists('b')"
    )
    assert one_row(chdb_backend, kql) == [1, 7, True, False]


def test_ingestion_time_is_when_a_stored_record_arrived(
    chdb_backend: Any, ch_database: str
) -> None:
    start = 1_700_000_000 * 10**9
    create_logs(chdb_backend, ch_database, start, [{}, {}])
    result = execute_text(
        chdb_backend,
        "logs | extend t = ingestion_time() | summarize n = count() by t, same = t == ingest_time",
        resolver=Logs(ch_database),
    )
    [[when, same, n]] = result.tables[0].rows
    assert (same, n) == (True, 2)
    assert when is not None


def test_ingestion_time_of_a_row_that_was_never_ingested_is_null(chdb_backend: Any) -> None:
    assert one_row(chdb_backend, "print isnull(ingestion_time())") == [True]
    kql = "datatable(a: long)[1] | extend t = ingestion_time() | project isnull(t)"
    assert one_row(chdb_backend, kql) == [True]
