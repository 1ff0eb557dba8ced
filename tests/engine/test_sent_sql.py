"""SQL reaches ClickHouse rendered once and whole: no NUL marker, no template slot left over
(issue #19), and names with braces in them read their own keys over stored rows."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bzrk.engine.compile.query import QueryCompiler
from bzrk.engine.events import Error, RowBatch
from bzrk.engine.oneshot import execute_text
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.engine.timewindow import Window, now_ticks, scan_filter
from bzrk.kql.parser import parse
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.writer import write_rows
from tests.engine.sent_sql import SentSql, leftovers
from tests.engine.stored_logs import Logs, create_logs

NS = 1_700_000_000 * 10**9
# Keys a format string would misread: `{0}` is slot 0, `{{` an escaped brace.
BRACED = {"{0}": "slot", "a{{b": "doubled", "a{b": "single", "}": "closing", "0": "plain"}
QUERY = (
    "project z = tostring(attributes['{0}']), d = tostring(attributes['a{{b']),"
    " s = tostring(attributes['a{b']), c = tostring(attributes['}']),"
    " p = tostring(attributes['0'])"
)
EXPECTED = [["slot", "doubled", "single", "closing", "plain"]]


def test_a_nul_or_an_unrendered_slot_is_found_and_quoted_text_is_not() -> None:
    assert leftovers("SELECT 1 FROM t WHERE \x00bzrk:scan-bounds\x00") == ["a NUL byte"]
    assert leftovers("SELECT toInt64({0}) AS x")
    assert leftovers("SELECT 1 LIMIT \x00bzrk:row-cap\x00")
    assert not leftovers("SELECT '{0}' AS `a{b}`, 'it\\'s {' AS `x\\`}`")


def test_the_backend_of_an_engine_test_is_watched(chdb_backend, sent_sql: SentSql) -> None:  # type: ignore[no-untyped-def]
    chdb_backend.query_arrow("SELECT '{0}' AS x")
    assert sent_sql.texts == ["SELECT '{0}' AS x"]


@pytest.mark.parametrize("native", [True, False], ids=["native-paths", "json-text"])
def test_braced_keys_read_their_own_values_over_stored_rows(
    chdb_backend,  # type: ignore[no-untyped-def]
    ch_database: str,
    native: bool,
    sent_sql: SentSql,
) -> None:
    create_logs(chdb_backend, ch_database, NS, [{"attributes": BRACED}])
    resolver = Logs(ch_database, native=native)
    result = execute_text(chdb_backend, f"logs | {QUERY}", resolver=resolver)
    assert result.tables[0].rows == EXPECTED
    where = "logs | where tostring(attributes['{0}']) == 'slot' | count"
    assert execute_text(chdb_backend, where, resolver=resolver).tables[0].rows == [[1]]
    assert any("{0}" in text for text in sent_sql.texts)  # quoted in the SQL, as a key


def test_braced_keys_through_the_query_service_windows(
    chdb_backend,  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    sent_sql: SentSql,
) -> None:
    now_ns = now_ticks() * 100
    rows = [
        {
            "timestamp": now_ns - (i + 1) * 60 * 10**9,
            "ingest_time": now_ns,
            "body": f"line {i}",
            "attributes": json.dumps(BRACED),
        }
        for i in range(3)
    ]
    write_rows(chdb_backend, catalog.qualified_name("default", "default"), rows)
    service = QueryService(chdb_backend, catalog=catalog)
    request = QueryRequest(
        database="default", query=f"default | {QUERY} | take 1", since="2h ago", progressive=True
    )

    async def collect() -> list[Any]:
        return [event async for event in service.execute(request)]

    events = asyncio.run(collect())
    assert not [e for e in events if isinstance(e, Error)]
    final = [e for e in events if isinstance(e, RowBatch)]
    assert final and final[-1].rows == EXPECTED
    # Every window was a run of its own, each bounded in its WHERE: no marker reached chDB.
    bounded = [t for t in sent_sql.texts if "fromUnixTimestamp64Nano" in t]
    assert bounded and all("\0" not in t for t in bounded)


def test_one_plan_renders_each_window_and_stays_as_it_was(ch_database: str) -> None:
    table = QueryCompiler(Logs(ch_database)).compile(parse(f"logs | {QUERY}")).tables[0]
    unbounded = table.render()
    first = table.capped(11).render(scan_filter(Window(10, 20), Window()))
    second = table.render(scan_filter(Window(30, None), Window(None, 40)))
    assert "toInt64(1000)" in first and "toInt64(2000)" in first and first.endswith("LIMIT 11")
    assert "toInt64(3000)" in second and "`ingest_time` < " in second
    assert not second.splitlines()[-1].startswith("LIMIT")  # the cap was the copy's
    assert "toInt64(1000)" not in second
    assert table.render() == unbounded and unbounded.count("WHERE 1") == 1


def test_a_discovery_probe_over_a_stored_table_sends_a_whole_query(
    chdb_backend,  # type: ignore[no-untyped-def]
    ch_database: str,
    sent_sql: SentSql,
) -> None:
    # bag_unpack without a schema asks the data for its keys while compiling: that probe read
    # the stored table with the scan-bounds marker still in its text.
    create_logs(chdb_backend, ch_database, NS, [{"attributes": {"{0}": "slot", "k": "v"}}])
    query = "logs | project attributes | evaluate bag_unpack(attributes) | project-reorder *"
    result = execute_text(chdb_backend, query, resolver=Logs(ch_database))
    assert sorted(c.name for c in result.tables[0].columns) == ["k", "{0}"]
    assert sorted(map(str, result.tables[0].rows[0])) == ["slot", "v"]
    assert len(sent_sql.texts) >= 2 and not sent_sql.bad  # the probe and the query
