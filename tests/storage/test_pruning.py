"""The table layout prunes: EXPLAIN figures on generated data, and answers that do not depend on indexes.

500k log rows over 6 days from 50 services go into one table with the real DDL. A rare-term
``has`` search (the engine's ``hasToken(lower(body), …)`` form, served by the text index) and
a one-service one-hour window must each skip at least 95 % of granules. The granule figures
are printed (run with ``-s`` to see them) for the report.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from bzrk.engine.backends.base import QuerySettings
from bzrk.storage.schema import COMPUTED, TableLayout, render_create_table

ROWS = 500_000
RARE_ROWS = (7, 250_007)  # the only bodies holding the token "Deadlock"
DAY0 = "2026-01-01 00:00:00"


@pytest.fixture(scope="module")
def table(chdb_backend) -> Iterator[str]:  # type: ignore[no-untyped-def]
    database = f"prune_{uuid.uuid4().hex[:10]}"
    qualified = f"`{database}`.`t`"
    chdb_backend.execute(f"CREATE DATABASE `{database}`")
    chdb_backend.execute(render_create_table(qualified, TableLayout()))
    rare = " OR ".join(f"number = {n}" for n in RARE_ROWS)
    chdb_backend.execute(
        f"""INSERT INTO {qualified}
        (timestamp, ingest_time, body, severity_text, trace_id_bytes, span_id_bytes, resource,
         attributes)
        SELECT toDateTime64('{DAY0}', 7, 'UTC') + toIntervalMillisecond(number * 1036) AS ts, ts,
          if({rare}, concat('Deadlock detected in tx ', toString(number)),
             concat('request handled ok id ', toString(number), ' user ', toString(number % 977))),
          ['INFO', 'WARN', 'ERROR'][number % 3 + 1],
          MD5(toString(number)),
          substring(MD5(toString(number)), 1, 8),
          CAST(concat('{{"service.name":"svc', toString(number % 50), '","host.name":"h',
                      toString(number % 7), '"}}'), 'JSON'),
          CAST(concat('{{"http.route":"/r', toString(number % 40), '"}}'), 'JSON')
        FROM numbers({ROWS})"""
    )
    # One part per day, as background merges leave a table after a while.
    chdb_backend.execute(f"OPTIMIZE TABLE {qualified} FINAL")
    yield qualified
    chdb_backend.execute(f"DROP DATABASE IF EXISTS `{database}` SYNC")


NO_CACHE: dict[str, str | int | float] = {"use_query_condition_cache": 0}


def _granules(backend, sql: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(granules read, granules in the table) from the last index step of EXPLAIN indexes=1."""
    plan = (
        backend.query_arrow(f"EXPLAIN indexes = 1 {sql}", settings=QuerySettings(extra=NO_CACHE))
        .column(0)
        .to_pylist()
    )
    figures = re.findall(r"Granules: (\d+)/(\d+)", "\n".join(plan))
    assert figures, plan
    total = int(figures[0][1])
    return int(figures[-1][0]), total


WINDOW = (
    "resource.`service.name` = 'svc13'"
    " AND timestamp >= toDateTime64('2026-01-03 10:00:00', 7, 'UTC')"
    " AND timestamp < toDateTime64('2026-01-03 11:00:00', 7, 'UTC')"
)
PRUNING_CASES = {
    "rare term": "hasToken(lower(body), 'deadlock')",
    "one service, one hour": WINDOW,
    # As a query reads the id (its stored bytes as hex), which the bloom filter is over.
    "trace id": f"{COMPUTED['trace_id']} = lower(hex(MD5('123457')))",
}


def test_index_sizes_are_reported(chdb_backend, table: str) -> None:
    database = table.split(".")[0].strip("`")
    indexes = chdb_backend.query_arrow(
        "SELECT name, data_compressed_bytes AS bytes FROM system.data_skipping_indices"
        f" WHERE database = '{database}' ORDER BY name"
    ).to_pylist()
    [parts] = chdb_backend.query_arrow(
        "SELECT sum(rows) AS rows, sum(bytes_on_disk) AS bytes FROM system.parts"
        f" WHERE database = '{database}' AND active"
    ).to_pylist()
    print("\nskip indexes (compressed bytes):", {i["name"]: i["bytes"] for i in indexes})
    print(f"table: {parts['bytes']} bytes on disk, {parts['bytes'] / parts['rows']:.1f} per row")
    sizes = {i["name"]: i["bytes"] for i in indexes}
    assert sizes["idx_body_text"] > 0 and sizes["idx_trace"] > 0


@pytest.mark.parametrize("name", list(PRUNING_CASES))
def test_granule_skipping(chdb_backend, table: str, name: str) -> None:
    sql = f"SELECT body, timestamp FROM {table} WHERE {PRUNING_CASES[name]}"
    read, total = _granules(chdb_backend, sql)
    skipped = 1 - read / total
    print(f"\n{name}: read {read}/{total} granules, skipped {skipped:.1%}")
    assert skipped >= 0.95, (name, read, total)


_HOUR_START = (2 * 86_400 + 10 * 3600) * 1000  # ms after DAY0
_HOUR_END = _HOUR_START + 3_600_000
# Each predicate with its true answer on the generated data.
SEMANTICS = [
    ("hasToken(lower(body), 'deadlock')", 2),
    ("hasToken(body, 'deadlock')", 0),  # case-sensitive: the rows say "Deadlock"
    ("hasToken(body, 'Deadlock')", 2),
    ("hasTokenCaseInsensitive(body, 'DEADLOCK')", 2),
    ("hasAnyTokens(lower(body), ['deadlock', 'nothing'])", 2),
    ("hasAllTokens(lower(body), ['deadlock', 'detected'])", 2),
    ("body ILIKE '%DEADLOCK%'", 2),
    ("hasToken(lower(body), 'request') AND hasToken(lower(body), '976')", ROWS // 977),
    (f"{COMPUTED['trace_id']} = lower(hex(MD5('123457')))", 1),
    (
        WINDOW,
        sum(
            1
            for n in range(_HOUR_START // 1036, _HOUR_END // 1036 + 2)
            if _HOUR_START <= n * 1036 < _HOUR_END and n % 50 == 13
        ),
    ),
    ("severity_text = 'ERROR'", ROWS // 3),
]


@pytest.mark.parametrize(("predicate", "expected"), SEMANTICS, ids=[s[0] for s in SEMANTICS])
def test_answers_do_not_depend_on_indexes(chdb_backend, table, predicate, expected) -> None:
    answers = set()
    for use_skip_indexes in (0, 1):
        for direct_read in (0, 1):
            settings = QuerySettings(
                extra={
                    **NO_CACHE,
                    "use_skip_indexes": use_skip_indexes,
                    "query_plan_direct_read_from_text_index": direct_read,
                }
            )
            for select in ("count()", "countIf(length(body) > 0)"):
                result = chdb_backend.query_arrow(
                    f"SELECT {select} AS n FROM {table} WHERE {predicate}", settings=settings
                )
                answers.add(int(result.column(0)[0].as_py()))
    assert answers == {expected}, answers


METRIC_ROWS = 300_000  # one service's log records, every 10th row a point of one metric


@pytest.mark.parametrize("key", ["today's", "before metric_name joined it"])
def test_one_metric_reads_its_own_granules(chdb_backend, key: str) -> None:  # type: ignore[no-untyped-def]
    """``metric_name`` in the sorting key keeps a metric's points together within a service.

    The same rows in a table with today's DDL and in one whose key is ``(service, timestamp)``
    (tables made before): a filter on the metric reads a few granules with today's key, and
    every granule (its points are spread over the day) without it.
    """
    ddl = render_create_table("`d`.`t`", TableLayout())
    assert "ORDER BY (`resource`.`service.name`, `metric_name`, `span_name`, timestamp)" in ddl
    old_key = None if key == "today's" else ("`metric_name`, `span_name`, timestamp)", "timestamp)")
    rows = f"""INSERT INTO {{t}} (timestamp, ingest_time, body, metric_name, value, resource)
        SELECT toDateTime64('{DAY0}', 7, 'UTC') + toIntervalMillisecond(number * 200) AS ts,
          ts, if(number % 10 = 0, NULL, 'request handled'),
          if(number % 10 = 0, 'shop.page.views', NULL), if(number % 10 = 0, number, NULL),
          CAST('{{"service.name":"checkout"}}', 'JSON')
        FROM numbers({METRIC_ROWS})"""
    with _merged_table(chdb_backend, old_key, rows) as qualified:
        sql = f"SELECT max(value) FROM {qualified} WHERE metric_name = 'shop.page.views'"
        read, total = _granules(chdb_backend, sql)
        print(f"\none metric ({key} key): {read}/{total} granules")
        answer = chdb_backend.query_arrow(sql, settings=QuerySettings(extra=NO_CACHE))
        assert answer.column(0)[0].as_py() == METRIC_ROWS - 10
        if key == "today's":
            assert read <= 5 < total
        else:
            assert read == total


@contextlib.contextmanager
def _merged_table(backend: Any, old_key: tuple[str, str] | None, rows: str) -> Iterator[str]:
    """A table with today's DDL (``old_key``: a text of it replaced, for the key of tables made
    before) holding the rows ``rows`` inserts into ``{t}``, merged; dropped afterwards."""
    database = f"prune_{uuid.uuid4().hex[:10]}"
    qualified = f"`{database}`.`t`"
    ddl = render_create_table(qualified, TableLayout())
    if old_key is not None:
        assert old_key[0] in ddl
        ddl = ddl.replace(*old_key)
    backend.execute(f"CREATE DATABASE `{database}`")
    try:
        backend.execute(ddl)
        backend.execute(rows.replace("{t}", qualified))
        backend.execute(f"OPTIMIZE TABLE {qualified} FINAL")
        yield qualified
    finally:
        backend.execute(f"DROP DATABASE IF EXISTS `{database}` SYNC")


SPAN_ROWS = 300_000  # one service's rows over a day, every 6th a span of one of 4 operations


@pytest.mark.parametrize("key", ["today's", "before span_name joined it"])
def test_span_only_queries_read_the_spans_granules(chdb_backend, key: str) -> None:  # type: ignore[no-untyped-def]
    """``span_name`` in the sorting key puts a service's spans apart from its log records, so
    the ``duration`` min-max index skips the log records' granules (NULL there).

    The same rows with today's DDL and with the key of tables made before (spans and log
    records interleaved in time): a percentile of span durations reads about a sixth of the
    granules with today's key, and every granule without it; the answers are the same.
    """
    old_key = None if key == "today's" else ("`span_name`, timestamp)", "timestamp)")
    rows = f"""INSERT INTO {{t}} (timestamp, ingest_time, body, span_name, duration, resource)
        SELECT toDateTime64('{DAY0}', 7, 'UTC') + toIntervalMillisecond(number * 250) AS ts,
          ts, if(number % 6 = 0, NULL, 'request handled'),
          if(number % 6 = 0, concat('GET /', toString(number % 4)), NULL),
          if(number % 6 = 0, toInt64(number % 1000) * 10000, NULL),
          CAST('{{"service.name":"checkout"}}', 'JSON')
        FROM numbers({SPAN_ROWS})"""
    with _merged_table(chdb_backend, old_key, rows) as qualified:
        sql = (
            f"SELECT quantileExactLow(0.5)(duration), count() FROM {qualified} "
            "WHERE duration IS NOT NULL"
        )
        read, total = _granules(chdb_backend, sql)
        print(f"\nspan durations ({key} key): {read}/{total} granules")
        answer = chdb_backend.query_arrow(sql, settings=QuerySettings(extra=NO_CACHE))
        assert answer.to_pylist()[0] == {
            "quantileExactLow(0.5)(duration)": 4_980_000,
            "count()": SPAN_ROWS // 6,
        }
        if key == "today's":
            assert read <= total // 6 + 2
        else:
            assert read == total
        # KQL isnotempty(span_name), as the engine writes it, reads the same granules by key.
        spans = (
            f"SELECT count() FROM {qualified} WHERE NOT ((span_name IS NULL) OR (span_name = ''))"
        )
        by_key, _ = _granules(chdb_backend, spans)
        assert chdb_backend.query_arrow(spans).column(0)[0].as_py() == SPAN_ROWS // 6
        if key == "today's":
            assert by_key <= total // 6 + 2
        else:
            assert by_key == total
