"""Text searches of stored bags test each stored path (compile/bag_search.py), over logs sent
through the real OTLP/HTTP receiver and read through the query service: the answer is the one
the bag's JSON text gives, keys and values of every type, keys awkward as ClickHouse paths, a
path that arrives after a plan was cached, a bag of very many paths, and a run that cannot read
the path registry."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList

from bzrk.engine.backends.base import QuerySettings
from bzrk.engine.compile.bag_search import MAX_SEARCHED_PATHS, TESTS_PER_BAG
from bzrk.engine.compile.query import QueryCompiler
from bzrk.engine.oneshot import execute_text
from bzrk.engine.semantic_settings import SEMANTIC_SETTINGS
from bzrk.engine.service import QueryService
from bzrk.kql.parser import parse
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import BASE, final_rows, logs_request, post_otlp, recorded_service
from tests.engine.otlp import text as _s
from tests.engine.recording import Recording
from tests.engine.stored_logs import Logs, create_logs, registry_reader, unreadable_registry
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401


def _logs(first: int, service: str, *records: dict[str, AnyValue]) -> ExportLogsServiceRequest:
    """Records ``r<first>``, … one second apart, from ``service`` (and a pod of it)."""
    return logs_request(
        first, records, {"service.name": service, "k8s.pod.name": f"{service}-7f9c-x2"}
    )


FIRST = _logs(
    0,
    "checkout",
    {"http.route": _s("/api/checkout"), "http.status_code": AnyValue(int_value=402)},
    {"error.message": _s("Connection REFUSED by upstream"), "retry": AnyValue(bool_value=True)},
    {"latency": AnyValue(double_value=1.5e-07), "user.id": _s("u-04823")},
)
SECOND = _logs(
    3,
    "frontend",
    {
        "tags": AnyValue(array_value=ArrayValue(values=[_s("blue"), _s("canary")])),
        "peer": AnyValue(
            kvlist_value=KeyValueList(values=[KeyValue(key="host", value=_s("db-1"))])
        ),
    },
    {"note": _s("a\nb")},
)


@pytest.fixture
async def service(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> tuple[QueryService, Recording]:
    return await recorded_service(catalog, ingest_app, ingest_token, FIRST, SECOND)


def _bodies(rows: list[list[Any]]) -> list[str]:
    return sorted(row[0] for row in rows)


# (operator, needle) pairs whose per-path answer must equal the JSON text's, over both bags.
SAME_AS_TEXT = [
    ("has", "checkout"),  # a resource value (service.name, a typed path) and a route
    ("has", "refused"),  # case-insensitive, inside a longer value
    ("has_cs", "refused"),  # case-sensitive: REFUSED is not refused
    ("has", "connection refused"),  # a phrase
    ("has", "/api/checkout"),  # punctuation
    ("has", "402"),  # a number's text
    ("has", "true"),  # a boolean's text
    ("has", "canary"),  # an array element
    ("has", "db"),  # a value inside an object value
    ("has", "status"),  # a key: `http.status_code` has the term `status`
    ("has", "7f9c"),  # part of a pod name
    ("has", "u-04823"),
    ("contains", "heck"),
    ("contains_cs", "REF"),
    ("hasprefix", "conn"),
    ("hassuffix", "out"),
    ("!has", "checkout"),
    ("has", "absent"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("op", "needle"), SAME_AS_TEXT)
async def test_a_bag_search_answers_as_the_bags_text_does(service, op: str, needle: str) -> None:  # type: ignore[no-untyped-def]
    svc, recording = service
    for bag in ("resource", "attributes"):
        native = await final_rows(svc, f'default | where {bag} {op} "{needle}" | project body')
        sql = recording.queries()[-1]
        assert f"toJSONString(`{bag}`)" not in sql  # read per path, not serialized
        text = await final_rows(
            svc, f'default | where tostring({bag}) {op} "{needle}" | project body'
        )
        assert _bodies(native) == _bodies(text), (bag, op, needle)


@pytest.mark.anyio
async def test_search_finds_values_and_keys_of_every_bag(service) -> None:  # type: ignore[no-untyped-def]
    svc, recording = service
    rows = await final_rows(svc, 'search "frontend" | project body')
    assert _bodies(rows) == ["r3", "r4"]  # service.name of the second batch
    assert "dynamicElement(`resource`.`k8s`.`pod`.`name`, 'String')" in recording.queries()[-1]
    # As a value, a bag without the term is false (an absent path's test is NULL, read false).
    rows = await final_rows(
        svc, 'default | project body, h = attributes has "canary", n = attributes !has "canary"'
    )
    assert sorted(rows) == [[f"r{i}", i == 3, i != 3] for i in range(5)]
    assert "toJSONString(`attributes`)" not in recording.queries()[-1]
    rows = await final_rows(svc, 'default | where * has "frontend" | project body')
    assert _bodies(rows) == ["r3", "r4"]  # ADX's explicit form of the same search
    assert "toJSONString(`resource`)" not in recording.queries()[-1]
    rows = await final_rows(svc, 'default | where * !has "frontend" | project body')
    assert _bodies(rows) == ["r0", "r1", "r2"]
    rows = await final_rows(
        svc, 'default | where attributes has_any ("canary", "402") | project body'
    )
    assert _bodies(rows) == ["r0", "r3"]
    assert "toJSONString(`attributes`)" not in recording.queries()[-1]
    rows = await final_rows(
        svc, 'default | where attributes has_all ("blue", "canary") | project body'
    )
    assert _bodies(rows) == ["r3"]
    rows = await final_rows(svc, 'search "canary" or "402" | project body, $table')
    assert sorted(rows) == [["r0", "default"], ["r3", "default"]]
    rows = await final_rows(svc, 'search "connection refused" | summarize n = count() by $table')
    assert rows == [["default", 1]]
    # Keys read dotted, as the record sent them: `error.message` is one key of two terms.
    rows = await final_rows(svc, 'default | where attributes has "error.message" | project body')
    assert _bodies(rows) == ["r1"]
    # A value is tested as it is, not as JSON escapes it: 'a\nb' has the term b.
    rows = await final_rows(svc, 'default | where attributes has "b" | project body')
    assert _bodies(rows) == ["r4"]
    # A number's or boolean's value is not tested for letters no number spells (the SQL
    # skips it); the key still is.
    rows = await final_rows(svc, 'default | where attributes has "latency" | project body')
    assert _bodies(rows) == ["r2"]


@pytest.mark.anyio
async def test_a_path_that_arrives_after_the_plan_was_cached_is_searched(  # type: ignore[no-untyped-def]
    service,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    svc, _ = service
    query = 'default | where attributes has "sunflower" | project body'
    assert await final_rows(svc, query) == []
    later = _logs(5, "checkout", {"garden.plant": _s("Sunflower seeds")})
    await post_otlp(ingest_app, ingest_token, ("/v1/logs", later))
    assert _bodies(await final_rows(svc, query)) == ["r5"]
    assert len(svc.plans) == 1  # the same plan, rendered with the paths as they are now


def test_a_run_that_cannot_read_the_registry_searches_the_text(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    create_logs(
        chdb_backend,
        ch_database,
        BASE,
        [
            {"attributes": {"k": "alpha beta", "n": 7}},
            {"attributes": {"alpha": 1}},
            {"attributes": {"k": "gamma"}},
        ],
    )
    text = 'logs | where attributes has "alpha" | project body | order by body asc'
    settings = QuerySettings(extra=SEMANTIC_SETTINGS)
    answers = []
    for broken in (False, True):
        resolver = Logs(ch_database)
        reader = unreadable_registry if broken else registry_reader(chdb_backend)
        resolver.source = replace(resolver.source, registry_reader=reader)
        sql = QueryCompiler(resolver).compile(parse(text)).bound(None).tables[0].sql
        assert ("toJSONString(`attributes`)" in sql) is broken
        answers.append(chdb_backend.query_arrow(sql, settings=settings).to_pylist())
    assert answers[0] == answers[1]
    assert len(answers[0]) == 2


def test_a_phrase_regex_runs_behind_a_substring_that_folds_alike(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    query = (
        'datatable(s: string)["Connection refuſed!", "xconnection refused", "connection refused.",'
        ' "CONNECTION REFUSED", "connection  refused"] | where s has "connection refused"'
    )
    rows = execute_text(chdb_backend, query).tables[0].rows
    # RE2's (?i) folds the long s into s; the substring search in front of it (the longest
    # run of the needle without an s, "connection refu") must not drop that row.
    assert rows == [["Connection refuſed!"], ["connection refused."], ["CONNECTION REFUSED"]]
    sql = QueryCompiler(Logs("d")).compile(parse('logs | where body has "a-b_c"')).tables[0].sql
    assert "positionCaseInsensitiveUTF8" in sql and "match(" in sql


def _one_each(*attributes: list[KeyValue]) -> ExportLogsServiceRequest:
    """Records ``r0``, ``r1``, … one second apart, each with its own attributes."""
    return logs_request(0, [{kv.key: kv.value for kv in attrs} for attrs in attributes], {})


# Keys that are awkward as ClickHouse paths: empty segments, spaces, quotes, non-ASCII.
AWKWARD_KEYS = ["a..b", "x.", ".y", "sp ace", "back`tick", "quo'te", "uni.cöde"]


@pytest.mark.anyio
async def test_awkward_keys_are_searched_like_the_text(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    request = _one_each(
        *([KeyValue(key=key, value=_s(f"needle{n} v"))] for n, key in enumerate(AWKWARD_KEYS))
    )
    svc, _ = await recorded_service(catalog, ingest_app, ingest_token, request)
    for n in range(len(AWKWARD_KEYS)):
        rows = await final_rows(svc, f'default | where attributes has "needle{n}" | project body')
        text = await final_rows(
            svc, f'default | where tostring(attributes) has "needle{n}" | project body'
        )
        assert rows == text == [[f"r{n}"]], AWKWARD_KEYS[n]
    rows = await final_rows(svc, 'search "needle3" | project body')
    assert rows == [["r3"]]


@pytest.mark.anyio
async def test_a_bag_of_very_many_paths_is_searched_as_its_text(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    request = _one_each(
        [KeyValue(key=f"k{i}", value=_s(f"v{i}")) for i in range(MAX_SEARCHED_PATHS + 1)]
    )
    svc, recording = await recorded_service(catalog, ingest_app, ingest_token, request)
    assert await final_rows(svc, 'default | where attributes has "v7" | project body') == [["r0"]]
    sql = recording.queries()[-1]
    assert "toJSONString(`attributes`)" in sql  # one test per path would be 257 of them
    assert "`attributes`.`k7`" not in sql


@pytest.mark.anyio
async def test_many_terms_over_many_paths_stay_within_clickhouses_limits(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    # 16 terms over 200 paths would be 3,200 tests of one bag: past ClickHouse's 50,000 AST
    # nodes (TOO_BIG_AST). Past TESTS_PER_BAG the bag is searched as its text instead.
    paths = 200
    assert 16 * paths > TESTS_PER_BAG and paths <= MAX_SEARCHED_PATHS
    request = _one_each(
        *([KeyValue(key=f"k{i}.p", value=_s(f"v{i} w{j}")) for i in range(paths)] for j in range(3))
    )
    svc, recording = await recorded_service(catalog, ingest_app, ingest_token, request)
    terms = " or ".join(f'"absent{n}"' for n in range(15))
    assert await final_rows(svc, f'search {terms} or "w2" | project body') == [["r2"]]
    # One term over the same bag is tested per path.
    assert await final_rows(svc, 'default | where attributes has "w1" | project body') == [["r1"]]
    sql = recording.queries()[-1]
    assert "toJSONString(`attributes`)" not in sql
