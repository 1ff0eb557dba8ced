"""OTel ids are stored as bytes (storage/schema.py HEX_IDS) and queried as the hex text written.

A KQL lookup by id compiles to the expression the ids' bloom filters are over, so it still
skips granules; every operator sees the same text as before, for canonical and free-text ids.
"""

from __future__ import annotations

import re

import pytest

from bzrk.engine.backends.base import QuerySettings
from bzrk.engine.compile.query import QueryCompiler
from bzrk.engine.oneshot import execute_text
from bzrk.kql.parser import parse
from tests.engine.stored_logs import Logs, create_logs

NS = 1_704_067_200_000_000_000  # 2024-01-01T00:00:00Z
ROWS = 100_000  # 13 granules of 8,192 rows


def _trace(i: int) -> str:
    return f"{i * 7919:032x}"


@pytest.fixture(scope="module")
def ids(chdb_backend, tmp_path_factory) -> str:  # type: ignore[no-untyped-def]
    database = f"ids_{tmp_path_factory.mktemp('ids').name.replace('-', '_')}"
    chdb_backend.execute(f"CREATE DATABASE `{database}`")
    rows = [{"trace_id": _trace(i), "span_id": f"{i:016x}"} for i in range(ROWS)]
    rows[5]["trace_id"] = "Not-Hex"  # free-text ingest writes anything: kept as text
    rows[6] = {}  # a record without ids
    create_logs(chdb_backend, database, NS, rows)
    chdb_backend.execute(f"OPTIMIZE TABLE `{database}`.`logs` FINAL")
    yield database
    chdb_backend.execute(f"DROP DATABASE IF EXISTS `{database}` SYNC")


def _granules(backend, sql: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    plan = (
        backend.query_arrow(
            f"EXPLAIN indexes = 1 {sql}",
            settings=QuerySettings(extra={"use_query_condition_cache": 0}),
        )
        .column(0)
        .to_pylist()
    )
    figures = re.findall(r"Granules: (\d+)/(\d+)", "\n".join(plan))
    return int(figures[-1][0]), int(figures[0][1])


LOOKUPS = {
    f"logs | where trace_id == '{_trace(77_777)}' | count": 1,
    f"logs | where trace_id in ('{_trace(12)}', '{_trace(99_000)}') | count": 2,
    f"logs | where span_id == '{77_777:016x}' | count": 1,
    f"logs | where body != '' | where trace_id == '{_trace(3)}' | project span_id | count": 1,
}


@pytest.mark.parametrize("text", list(LOOKUPS))
def test_a_lookup_by_id_skips_granules_through_the_bloom_filter(chdb_backend, ids, text) -> None:  # type: ignore[no-untyped-def]
    sql = QueryCompiler(Logs(ids)).compile(parse(text)).tables[0].render()
    read, total = _granules(chdb_backend, sql)
    assert total >= 12 and read <= 2, (read, total, sql)
    [[count]] = execute_text(chdb_backend, text, resolver=Logs(ids)).tables[0].rows
    assert count == LOOKUPS[text]


def test_ids_read_back_as_written(chdb_backend, ids) -> None:  # type: ignore[no-untyped-def]
    text = "logs | where timestamp < datetime(2024-01-01 00:00:08) | project trace_id, span_id"
    rows = execute_text(chdb_backend, text, resolver=Logs(ids)).tables[0].rows
    expected = [[_trace(i), f"{i:016x}"] for i in range(8)]
    expected[5][0] = "Not-Hex"
    expected[6] = [None, None]
    assert sorted(rows, key=repr) == sorted(expected, key=repr)


def test_dcount_of_an_id_counts_its_bytes_and_its_text_apart(chdb_backend, ids) -> None:  # type: ignore[no-untyped-def]
    """A canonical id is never stored as text, so the id's distinct values are those of its
    bytes plus those of its text: ``dcount`` adds the two counts instead of formatting every
    row's bytes as hex, and answers as the count over the hex text does."""
    text = "logs | summarize d = dcount(trace_id), e = dcountif(trace_id, body != 'line 1')"
    sql = QueryCompiler(Logs(ids)).compile(parse(text)).tables[0].render()
    assert (
        "uniqCombined(14)(`trace_id_bytes`), 0) + ifNull(uniqCombined(14)(`trace_id_text`)" in sql
    )
    assert "hex(" not in sql
    [[split, split_if]] = execute_text(chdb_backend, text, resolver=Logs(ids)).tables[0].rows
    whole = (
        "logs | extend t = strcat(trace_id, '') | where isnotnull(trace_id)"
        " | summarize d = dcount(t), e = dcountif(t, body != 'line 1')"
    )
    [[d, e]] = execute_text(chdb_backend, whole, resolver=Logs(ids)).tables[0].rows
    assert abs(split - d) <= 0.02 * d and abs(split_if - e) <= 0.02 * e
    assert abs(split - (ROWS - 1)) <= 0.02 * ROWS


def test_a_null_test_of_an_id_reads_its_parts_null_maps(chdb_backend, ids) -> None:  # type: ignore[no-untyped-def]
    """``isnull(parent_span_id)`` (root spans) and ``isnotnull(trace_id)`` test the stored
    parts' nulls instead of formatting every id as hex, with the same answers."""
    for text, expected in (
        ("logs | where isnull(trace_id) | count", 1),
        ("logs | where isnotnull(trace_id) | count", ROWS - 1),
        ("logs | where isnull(parent_span_id) | count", ROWS),
        ("logs | where isnotempty(span_id) | count", ROWS - 1),
        ("logs | where not(isnull(trace_id)) and isnull(span_id) | count", 0),
    ):
        sql = QueryCompiler(Logs(ids)).compile(parse(text)).tables[0].render()
        assert "hex(" not in sql.split("WHERE", 1)[1] or "isnotempty" in text, sql
        [[count]] = execute_text(chdb_backend, text, resolver=Logs(ids)).tables[0].rows
        assert count == expected, text


def test_ids_count_group_and_join_as_text(chdb_backend, ids) -> None:  # type: ignore[no-untyped-def]
    [[distinct, hexes]] = (
        execute_text(
            chdb_backend,
            "logs | summarize d = dcount(trace_id), h = countif(trace_id matches regex '^[0-9a-f]{32}$')",
            resolver=Logs(ids),
        )
        .tables[0]
        .rows
    )
    assert hexes == ROWS - 2 and abs(distinct - (ROWS - 1)) <= 0.02 * ROWS
    [[joined]] = (
        execute_text(
            chdb_backend,
            "logs | where timestamp < datetime(2024-01-01 00:00:10) | project trace_id"
            " | join kind=inner (logs | project trace_id, span_id) on trace_id | count",
            resolver=Logs(ids),
        )
        .tables[0]
        .rows
    )
    assert joined == 9  # the 10 first records but the one without a trace id
