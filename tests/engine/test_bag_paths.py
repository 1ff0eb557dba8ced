"""Bag paths over a real bzrk table: native sub-column reads answer exactly as the JSON text does."""

from __future__ import annotations

import json

import pytest

from bzrk.engine.backends.base import QuerySettings
from bzrk.engine.compile.query import QueryCompiler
from bzrk.engine.oneshot import execute_text
from bzrk.engine.semantic_settings import SEMANTIC_SETTINGS
from bzrk.kql.parser import parse
from bzrk.storage.writer import write_rows
from tests.engine.stored_logs import Logs, create_logs

NS = 1_704_067_200_000_000_000  # 2024-01-01T00:00:00Z

ROWS = [
    {
        "resource": {"service.name": "checkout", "service.version": "1.2"},
        "attributes": {
            "http.route": "/api/pay",
            "http.status_code": 200,
            "duration_ms": 12.5,
            "cache.hit": True,
            "tags": ["a", "b/c"],
        },
    },
    {
        "resource": {"service.name": "checkout"},
        "attributes": {"http.route": "/api/cart", "http.status_code": "503", "duration_ms": 7},
        # Stored as its bytes (storage/schema.py HEX_IDS) and read back as this text.
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "span_id": "b7ad6b7169203331",
    },
    {
        "resource": {"service.name": "frontend", "host": {"name": "h/1"}},
        "attributes": {"http": {"method": "GET", "route": "/"}, "duration_ms": "n/a"},
    },
    {"resource": {"host.name": "h2"}, "attributes": {}, "trace_id": "not hex"},
    {"resource": {"service.name": ""}, "attributes": {"http.route": "", "user.id": "u 1"}},
    {
        "resource": {"service.name": "batch"},
        "attributes": {
            "n": {"big": 3000000000, "neg": -5, "f": 2.75, "s": "42", "t": "2024-01-02T03:04:05Z"},
            # Past 2**53 (no exact double) and past Int64 (stored as UInt64).
            "wide": {"odd": 9007199254740993, "u": 18446744073709551615, "e": "1e3"},
            # ClickHouse stores this string as a DateTime variant.
            "when": "2024-01-02 03:04:05",
            "flag": False,
            "e": "",
            # Keys a str.format over SQL text read as slots (issue 19).
            "{0}": "slot",
            "a{{b": "double",
            "a{b": "single",
        },
    },
]


@pytest.fixture
def logs(chdb_backend, ch_database) -> str:  # type: ignore[no-untyped-def]
    create_logs(chdb_backend, ch_database, NS, ROWS)
    return ch_database


def _rows(backend, database: str, text: str, *, native: bool = True) -> list[list[object]]:  # type: ignore[no-untyped-def]
    result = execute_text(backend, text, resolver=Logs(database, native=native))
    return result.tables[0].rows


def _sql(database: str, text: str) -> str:
    return QueryCompiler(Logs(database)).compile(parse(text)).tables[0].render()


# Each query's answer over the native paths must equal the JSON-text answer.
SAME_ANSWER = [
    "logs | project s = tostring(resource.service.name)",
    'logs | project s = tostring(resource["service.name"]), v = tostring(resource.service.version)',
    "logs | project r = tostring(attributes['http.route']), r2 = tostring(attributes.http.route)",
    "logs | project c = toint(attributes['http.status_code']), d = todouble(attributes.duration_ms)",
    "logs | project c = tolong(attributes.http.status_code), b = tobool(attributes['cache.hit'])",
    "logs | project h = tostring(attributes.http), t = tostring(attributes.tags)",
    "logs | project h = attributes.http, t = attributes.tags, m = attributes.http.method",
    "logs | project n = isnull(resource.service.name), e = isempty(resource.service.name)",
    "logs | project n = isnull(attributes.http.route), e = isnotempty(attributes['http.route'])",
    "logs | project g = gettype(attributes.duration_ms), g2 = gettype(resource.service.name)",
    "logs | project t0 = tostring(attributes.tags[0]), h = tostring(resource.host)",
    "logs | project u = tostring(attributes['user.id']), x = tostring(attributes.nothing.here)",
    "logs | where resource.service.name == 'checkout' | count",
    "logs | where resource['service.name'] != 'checkout' | count",
    "logs | where not(resource.service.name == 'checkout') | project body",
    "logs | where resource.service.name == 'checkout' or resource.service.name == '' | project body",
    "logs | where 'batch' == resource.service.name and attributes.flag == false | project body",
    "logs | where attributes.http.route has 'api' | project body",
    "logs | where tostring(attributes['http.route']) startswith '/api' | project body",
    "logs | where toint(attributes['http.status_code']) >= 500 | project body",
    "logs | summarize n = count() by s = tostring(resource.service.name) | order by s asc",
    "logs | summarize n = count() by r = tostring(attributes.http.route) | order by r asc",
    "logs | summarize n = count() by attributes.http.route | order by n desc, attributes_http_route asc",
    "logs | extend r = attributes | project x = tostring(r.http.route)",
    "logs | project-rename a = attributes | project x = tostring(a['http.route'])",
    "logs | where body != 'x' | extend k = 1 | project s = tostring(resource.service.name), k",
    "logs | summarize d = dcount(tostring(resource.service.name))",
    "logs | summarize a = avg(todouble(attributes['duration_ms'])) by s = tostring(resource.service.name)"
    " | order by s asc",
    "logs | project resource, attributes | take 10",
    "logs | project a = toint(attributes.n.big), b = tolong(attributes.n.big), c = toint(attributes.n.neg)",
    "logs | project a = todouble(attributes.n.f), b = tolong(attributes.n.f), c = toint(attributes.n.s)",
    "logs | project a = todouble(attributes.n.s), b = todecimal(attributes.n.f), c = tobool(attributes.flag)",
    "logs | project a = todatetime(attributes.n.t), b = totimespan(attributes.n.s), c = tobool(attributes.n)",
    "logs | project a = tostring(attributes.n), b = tostring(attributes.flag), c = tostring(attributes.n.f)",
    "logs | project a = todouble(attributes.n), b = tolong(attributes.http), c = isempty(attributes.e)",
    "logs | where attributes.n.big > 100 | project body",
    "logs | where attributes.flag == false | project body",
    "logs | summarize s = sum(tolong(attributes.n.neg)), m = max(todouble(attributes['duration_ms']))",
    "logs | project a = todouble(attributes['cache.hit']), b = todouble(attributes.tags),"
    " c = todouble(attributes.wide.odd), d = todouble(attributes.wide.u), e = todouble(attributes.wide.e)",
    "logs | project w = tostring(attributes.when), d = todouble(attributes.when), n = attributes.when",
    "logs | where tostring(attributes.when) startswith '2024' | project body",
    "logs | project t = todatetime(attributes.when), l = tolong(attributes.when), b = tobool(attributes.when)",
    "logs | project a = todouble(attributes.http.status_code), b = todouble(attributes.n.t),"
    " c = todouble(attributes.e), d = todouble(attributes.http), e = todouble(attributes.wide)",
    # Operators that build their own SQL around a relation carrying hidden path columns.
    "logs | mv-expand t = attributes.tags | project t = tostring(t), s = tostring(resource.service.name)",
    "logs | mv-apply t = attributes.tags to typeof(string) on (take 1)"
    " | project s = tostring(resource.service.name), t",
    "logs | join kind=inner (logs | project body, r2 = tostring(attributes.http.route)) on body"
    " | project r = tostring(attributes.http.route), r2",
    "logs | where attributes.http.route != '' | join kind=leftouter"
    " (logs | where resource.service.name == 'checkout') on body | count",
    "logs | union (logs) | summarize n = count() by s = tostring(resource.service.name)",
    "logs | serialize | extend p = prev(tostring(attributes.http.route)) | project p",
    "logs | summarize arg_max(timestamp, attributes) by s = tostring(resource.service.name)",
    "logs | top 2 by tostring(attributes['http.route']) desc | project body",
    "logs | extend s = tostring(resource.service.name) | distinct s, attributes",
    "logs | parse body with 'line ' n:int | project n, r = tostring(attributes.http.route)",
    "logs | extend a = attributes | project-away attributes | project r = tostring(a.http.route)",
    "logs | sort by timestamp asc | take 3 | project h = tostring(attributes.http)",
    # $raw's fields read the columns and bag paths they were made from (issue 21).
    "logs | where $raw.body == 'line 1' | count",
    "logs | project b = $raw.body, s = tostring($raw.severity_text), n = isnull($raw.span_name)",
    "logs | where isnotempty($raw.body) and $raw.body != 'line 2' | project body",
    "logs | project r = tostring($raw.attributes['http.route']), c = toint($raw.attributes.http.status_code)",
    "logs | project e = isempty($raw.attributes), h = $raw.attributes.http, x = $raw.attributes.tags",
    "logs | project s = tostring($raw.resource.service.name), r = tostring($raw.resource)",
    # A bag with typed paths under $raw, with a dotted bracket key (doc-raw-nested: was read
    # from the whole record's text, row by row).
    'logs | where $raw.resource["service.name"] == "checkout" | count',
    'logs | project s = tostring($raw.resource["service.name"]), v = $raw.resource.service.version',
    "logs | where $raw.attributes['http.route'] == '/api/cart' | project body",
    "logs | extend body = 'changed' | project b = tostring($raw.body), body",
    "logs | where body != 'x' | project-away body | project b = $raw.body",
    "logs | summarize n = count() by b = tostring($raw.body) | order by b asc",
    "logs | project t = tostring($raw.timestamp), x = $raw.nothing, d = $raw.duration",
    "logs | project t = tostring($raw.trace_id), trace_id, s = $raw.span_id, p = $raw.parent_span_id",
    "logs | where $raw.trace_id == '0af7651916cd43dd8448eb211c80319c' | project span_id",
    "logs | where trace_id in ('not hex', 'x') or isnull(trace_id) | count",
    "logs | summarize n = count(), d = dcount(trace_id) by trace_id | order by trace_id asc",
]


@pytest.mark.parametrize("text", SAME_ANSWER)
def test_native_paths_answer_as_the_json_text_does(chdb_backend, logs, text) -> None:  # type: ignore[no-untyped-def]
    native = _rows(chdb_backend, logs, text)
    plain = _rows(chdb_backend, logs, text, native=False)
    # Rows compare by repr: NaN (avg of no values) equals itself there.
    assert sorted(map(repr, native)) == sorted(map(repr, plain))


def test_path_values_follow_kql_rules(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    rows = _rows(
        chdb_backend,
        logs,
        "logs | order by timestamp asc | project s = tostring(resource.service.name),"
        " r = tostring(attributes['http.route']), c = toint(attributes['http.status_code']),"
        " d = todouble(attributes.duration_ms), h = tostring(attributes.http),"
        " t = tostring(attributes.tags), hit = tobool(attributes['cache.hit'])",
    )
    assert rows == [
        [
            "checkout",
            "/api/pay",
            200,
            12.5,
            '{"route":"/api/pay","status_code":200}',
            '["a","b/c"]',
            True,
        ],
        ["checkout", "/api/cart", 503, 7.0, '{"route":"/api/cart","status_code":"503"}', "", None],
        ["frontend", "/", None, None, '{"method":"GET","route":"/"}', "", None],
        ["", "", None, None, "", "", None],
        ["", "", None, None, '{"route":""}', "", None],
        ["batch", "", None, None, "", "", None],
    ]


def test_keys_with_braces_read_their_own_path(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    text = (
        "logs | where resource.service.name == 'batch' | project a = tostring(attributes['{0}']),"
        " b = tostring(attributes['a{{b']), c = tostring(attributes['a{b'])"
    )
    assert _rows(chdb_backend, logs, text) == [["slot", "double", "single"]]
    assert _rows(chdb_backend, logs, text, native=False) == [["slot", "double", "single"]]


def test_dotted_keys_and_nested_paths_are_one_subcolumn(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    flat = _rows(chdb_backend, logs, "logs | where attributes['http.route'] == '/' | count")
    nested = _rows(chdb_backend, logs, "logs | where attributes.http.route == '/' | count")
    assert flat == nested == [[1]]


def test_hot_path_reads_native_subcolumns(logs) -> None:  # type: ignore[no-untyped-def]
    sql = _sql(
        logs,
        "logs | where isnotempty(tostring(attributes['http.route']))"
        " | summarize n = count(), a = avg(todouble(attributes.duration_ms))"
        " by s = tostring(resource.service.name), r = tostring(attributes['http.route'])",
    )
    # One read of the table, of the native paths; nothing parses JSON text or serializes a
    # whole bag.
    assert sql.count(f"FROM `{logs}`.`logs`") == 1
    for path in (
        "`attributes`.`http`.`route`",
        "`attributes`.`duration_ms`",
        "`resource`.`service`.`name`",
    ):
        assert path in sql
    assert "JSONExtract" not in sql and "JSONType" not in sql
    assert "toJSONString(`attributes`)" not in sql and "toJSONString(`resource`)" not in sql
    # A number converts from its stored variant, without per-row JSON text.
    assert "toJSONString(`attributes`.`duration_ms`)" not in sql


def test_service_filter_is_a_key_condition(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    sql = _sql(logs, "logs | where resource.service.name == 'checkout' | count")
    # In a filter a NULL name drops the row as '' would: the column is compared as it is.
    assert "(`resource`.`service`.`name` = 'checkout')" in sql and "ifNull" not in sql
    # Not under NOT (a NULL name is not 'checkout': the row stays), and not against '' (which
    # a NULL name equals in KQL).
    negated = _sql(logs, "logs | where not(resource.service.name == 'checkout') | count")
    assert "NOT ifNull((`resource`.`service`.`name` = 'checkout'), false)" in negated
    # A dynamic compares by its stored type (issue 20): an absent name is null, not the
    # string '', so == '' keeps only names stored as '' and the column is compared as it is.
    empty = _sql(logs, "logs | where resource.service.name == '' | count")
    assert "(`resource`.`service`.`name` = '')" in empty
    plan = chdb_backend.query_arrow(f"EXPLAIN indexes = 1 {sql}", settings=None).to_pylist()
    text = "\n".join(str(next(iter(r.values()))) for r in plan)
    assert "PrimaryKey" in text and "service.name" in text


def test_whole_bags_still_come_out_whole(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    rows = _rows(
        chdb_backend,
        logs,
        "logs | order by timestamp asc | take 1 | project resource, s = resource.service.name",
    )
    assert rows == [
        [{"service": {"name": "checkout", "version": "1.2"}}, "checkout"],
    ]


def test_paths_after_summarize_fall_back_to_text(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    text = (
        "logs | summarize b = take_any(attributes) by s = tostring(resource.service.name)"
        " | where s == 'frontend' | project m = tostring(b.http.method)"
    )
    assert _rows(chdb_backend, logs, text) == [["GET"]]


def test_numbers_read_their_stored_variant(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    text = (
        "logs | where resource.service.name == 'batch' | project a = toint(attributes.n.big),"
        " b = tolong(attributes.n.big), c = todouble(attributes.n.f), d = tolong(attributes.n.f),"
        " e = toint(attributes.n.s), f = todouble(attributes.n), g = tostring(attributes.n.neg)"
    )
    assert _rows(chdb_backend, logs, text) == [[None, 3_000_000_000, 2.75, 2, 42, None, "-5"]]
    wide = (
        "logs | where resource.service.name == 'batch' | project a = todouble(attributes.wide.odd),"
        " b = todouble(attributes.wide.u), c = todouble(attributes.wide.e), d = todouble(attributes.flag)"
    )
    assert _rows(chdb_backend, logs, wide) == [
        [9007199254740992.0, 18446744073709551615.0, 1000.0, None]
    ]
    sql = _sql(logs, text)
    assert "dynamicElement(" in sql and "JSONExtract" not in sql.partition("`_q1` AS (")[2]


def test_a_whole_table_count_reads_the_table_itself(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    sql = _sql(logs, "logs | count")
    assert sql.startswith(f"SELECT toInt64(count()) AS `Count`\nFROM `{logs}`.`logs`\nWHERE 1")
    assert _rows(chdb_backend, logs, "logs | count") == [[len(ROWS)]]
    # A filtered count still counts the filtered rows.
    assert _rows(chdb_backend, logs, "logs | where body == 'line 1' | count") == [[1]]


def test_a_sub_object_is_read_only_when_a_stored_path_lies_under_it(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    def read(text: str, *, registry: bool) -> tuple[list[list[object]], int]:
        compiled = QueryCompiler(Logs(logs, registry=registry)).compile(parse(text))
        table, stats = chdb_backend.query_arrow_stats(
            compiled.tables[0].render(), settings=QuerySettings(extra=dict(SEMANTIC_SETTINGS))
        )
        return table.to_pylist(), stats.bytes_read

    many = [
        {"timestamp": NS + i, "ingest_time": NS, "attributes": json.dumps({"http.route": "/x"})}
        for i in range(20_000)
    ]
    write_rows(chdb_backend, f"`{logs}`.`logs`", many)
    # No stored path lies under http.route: with the registry the sub-object is not read
    # (every row's shared-data offsets otherwise: 8 bytes a row).
    leaf = "logs | summarize n = count() by r = tostring(attributes['http.route']) | order by r"
    (with_registry, fewer), (without, more) = read(leaf, registry=True), read(leaf, registry=False)
    assert with_registry == without and more - fewer > 8 * 20_000 * 0.9
    # Paths lie under `http` (one row nests method and route): the object text comes back.
    nested = "logs | where attributes.http.method == 'GET' | project h = tostring(attributes.http)"
    assert read(nested, registry=True)[0] == [{"h": '{"method":"GET","route":"/"}'}]


def test_paths_of_one_type_convert_with_one_cast(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    route = "logs | where isnotempty(tostring(attributes['http.route'])) | count"
    duration = "logs | summarize a = sum(todouble(attributes.duration_ms))"
    when = "logs | where resource.service.name == 'batch' | project w = tostring(attributes.when)"
    assert _rows(chdb_backend, logs, route) == [[3]]  # /api/pay, /api/cart, / (nested)
    assert _rows(chdb_backend, logs, when) == [["2024-01-02 03:04:05"]]
    # The registry's answers are part of the query: ClickHouse folds them while planning.
    assert "json_type NOT IN ('String')" in _sql(logs, route)
    assert "json_type NOT IN ('Int64', 'UInt64', 'Float64')" in _sql(logs, duration)
    before = _rows(chdb_backend, logs, duration)
    # A later row stores another type at the same paths: the same query text (and a cached
    # plan, were there one) still answers by KQL's rules for every stored value.
    later = {"http.route": ["a", 1], "duration_ms": True}
    write_rows(
        chdb_backend,
        f"`{logs}`.`logs`",
        [{"timestamp": NS, "ingest_time": NS, "attributes": json.dumps(later)}],
    )
    routes = "logs | where tostring(attributes['http.route']) startswith '[' | project r = tostring(attributes['http.route'])"
    assert _rows(chdb_backend, logs, routes) == [['["a",1]']]
    assert _rows(chdb_backend, logs, duration) == before  # a bool holds no number
    for text in (route, duration, routes):
        native = _rows(chdb_backend, logs, text)
        assert sorted(map(repr, native)) == sorted(
            map(repr, _rows(chdb_backend, logs, text, native=False))
        )


def test_raw_fields_read_their_columns_not_the_whole_record(logs) -> None:  # type: ignore[no-untyped-def]
    # `$raw` is a cast of every column to one JSON object, computed per row: slow to filter on.
    sql = _sql(logs, "logs | where $raw.body == 'line 1' | count")
    assert "$raw" not in sql and "`body` = 'line 1'" in sql
    sql = _sql(logs, "logs | where tostring($raw.attributes['http.route']) == '/' | count")
    assert "$raw" not in sql and "`attributes`.`http`.`route`" in sql


def test_raw_fields_keep_the_stored_value(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    # The whole-record alias re-reads strings that look like times as DateTime
    # ("2024-01-02T03:04:05Z" came out as "2024-01-02 03:04:05"); a field of $raw is now the
    # field as stored, as the bag path and the column read it.
    rows = _rows(
        chdb_backend,
        logs,
        "logs | where isnotempty(tostring(attributes.n.t)) | project r = tostring($raw.attributes.n.t),"
        " a = tostring(attributes.n.t), w = tostring($raw.attributes)",
    )
    assert [r[:2] for r in rows] == [["2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"]]
    assert '"t":"2024-01-02T03:04:05Z"' in rows[0][2]


def test_a_raw_path_into_a_typed_bag_reads_the_native_path(logs) -> None:  # type: ignore[no-untyped-def]
    # doc-raw-nested: `$raw.resource["service.name"]` took minutes over a demo day, every row's
    # whole record serialized to JSON text and parsed twice.
    sql = _sql(logs, 'logs | where $raw.resource["service.name"] == "checkout" | count')
    assert "`resource`.`service`.`name`" in sql
    assert "$raw" not in sql and "JSONExtract" not in sql


def test_a_stored_bags_keys_are_its_flat_otel_keys(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    # OTel attribute keys are flat ("http.route"); ClickHouse keeps them as nested paths, and
    # bag_keys / fieldstats list them as they were sent (ka-attributes-flat-keys).
    keys = _rows(
        chdb_backend, logs, "logs | project k = bag_keys(attributes), r = bag_keys(resource)"
    )
    assert keys[0] == [["http.route", "user.id"], ["service.name"]]
    assert ["host.name", "service.name"] in [r for _, r in keys]
    stats = _rows(chdb_backend, logs, "logs | fieldstats resource with depth=1")
    assert {row[0] for row in stats} == {
        "resource.service.name",
        "resource.host.name",
        "resource.service.version",
    }
    # A bag the query builds keeps ADX's top-level keys.
    assert _rows(chdb_backend, logs, "print k = bag_keys(dynamic({'a': {'b': 1}}))") == [[["a"]]]


def test_a_stored_bags_keys_are_read_natively_and_agree_with_its_text(  # type: ignore[no-untyped-def]
    chdb_backend, logs
) -> None:
    # bmcp-discover-keys (the vendor MCP's discover step) ran past its 10 s budget over a demo
    # day: every row's bag was serialized to JSON text and parsed four levels deep. The table
    # read now lists the stored paths (JSONAllPaths) and the bag's text is not read at all.
    # A stored bag is tested without its text (the test table declares no absent bags, so
    # an empty one is `{}`); a declared typed path is a key only where the record has a value.
    query = (
        "logs | where isnotnull(resource) and not(isnull(attributes))"
        " | project k = bag_keys(attributes), r = bag_keys(resource)"
    )
    sql = _sql(logs, query)
    assert "JSONAllPaths(`attributes`)" in sql and "JSONAllPaths(`resource`)" in sql
    assert "toJSONString(`attributes`)" not in sql and "JSONExtract" not in sql
    native = _rows(chdb_backend, logs, query)
    assert native == _rows(chdb_backend, logs, query, native=False)
    assert len(native) == len(ROWS)
    assert [[], ["host.name"]] in native  # a record without service.name
    counted = _rows(
        chdb_backend,
        logs,
        "logs | project k = bag_keys(resource) | mv-expand k"
        " | summarize n = count() by key = tostring(k) | sort by n desc, key asc",
    )
    # every record but the one without service.name
    assert counted[0] == ["service.name", len(ROWS) - 1]


def test_a_stored_bags_text_is_serialized_once_per_test(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    # A stored bag is an object: its text needs no null or JSON-string case, and the general
    # form spelled its serialization five times per `has` (short-circuit evaluation computes
    # each spelling anew): the vendor's leading `search` over a demo day took 9 s.
    query = 'logs | where resource has "checkout" or tostring(attributes) contains "pay"'
    where = _sql(logs, query).split("WHERE", 1)[1]
    assert where.count("toJSONString(`resource`)") == 1
    assert "JSONType(toJSONString(`attributes`))" not in where
    for text in (query, 'logs | search "checkout" or "GET"', "logs | where isnotnull(scope)"):
        rows = _rows(chdb_backend, logs, text + " | project body | sort by body asc")
        assert rows == _rows(
            chdb_backend, logs, text + " | project body | sort by body asc", native=False
        )
        assert rows
