"""Bag paths whose form a run picks from the path registry's facts (compile/bag_paths.py
``RegistryFacts``), over logs sent through the real OTLP/HTTP receiver and read through the
query service: mixed types across rows, absent paths, paths that are objects in some rows, and
a cached plan whose path gains a new type between two runs."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList

from bzrk.engine.compile.relation import CompiledQuery
from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import BASE, final_rows, logs_request, post_otlp, recorded_service
from tests.engine.otlp import text as _s
from tests.engine.recording import Recording
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401


def _i(number: int) -> AnyValue:
    return AnyValue(int_value=number)


def _d(number: float) -> AnyValue:
    return AnyValue(double_value=number)


def _kv(**fields: AnyValue) -> AnyValue:
    return AnyValue(
        kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in fields.items()])
    )


def _logs(first: int, *records: dict[str, AnyValue]) -> ExportLogsServiceRequest:
    """Records ``r<first>``, ``r<first + 1>``, … of the service ``shop``, with these attributes."""
    return logs_request(first, records, {"service.name": "shop"})


FIRST = _logs(
    0,
    {"code": _s("abc"), "http.route": _s("/a"), "dur": _d(1.5), "obj": _s("flat")},
    {"code": _i(42), "http.route": _s("/b"), "dur": _i(7), "obj": _kv(a=_i(1))},
    {"http.route": _s("/a")},
)


@pytest.fixture
async def service(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> tuple[QueryService, Recording]:
    return await recorded_service(catalog, ingest_app, ingest_token, FIRST)


@pytest.mark.anyio
async def test_mixed_absent_and_object_paths_answer_as_kusto(service) -> None:  # type: ignore[no-untyped-def]
    svc, recording = service
    rows = await final_rows(
        svc,
        "default | where isnotnull(body) | project body, c = tostring(attributes.code), "
        'r = tostring(attributes["http.route"]), d = todouble(attributes.dur), '
        "o = tostring(attributes.obj), m = tostring(attributes.missing), "
        "mn = isnull(attributes.missing), dn = isnull(attributes.dur) | order by body asc",
    )
    assert rows == [
        ["r0", "abc", "/a", 1.5, "flat", "", True, False],
        ["r1", "42", "/b", 7.0, '{"a":1}', "", True, False],
        ["r2", "", "/a", None, "", "", True, True],
    ]
    (sql,) = recording.queries()
    # The run read the registry's facts itself: no sub-query on it inside the SQL. The
    # strings-only path is ClickHouse's cast; the mixed one and the object keep the general form.
    assert "$paths" not in sql
    assert "CAST(`attributes`.`http`.`route` AS String)" in sql
    assert "toJSONString(`attributes`.^`obj`)" in sql
    assert "dynamicElement(`attributes`.`code`, 'String')" in sql


@pytest.mark.anyio
async def test_a_cached_plan_reads_the_registry_afresh_when_a_path_gains_types(  # type: ignore[no-untyped-def]
    service,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    svc, recording = service
    query = (
        'default | where isnotempty(tostring(attributes["http.route"])) '
        '| summarize n = count() by r = tostring(attributes["http.route"]) | order by r asc'
    )
    assert await final_rows(svc, query) == [["/a", 2], ["/b", 1]]
    (first,) = recording.queries()
    assert "CAST(`attributes`.`http`.`route` AS String)" in first
    assert "^`http`.`route`" not in first  # no object under the path: its sub-object is not read
    # The path now holds a number in one record and an object in another.
    more = _logs(3, {"http.route": _i(5)}, {"http.route": _kv(x=_s("y"))})
    await post_otlp(ingest_app, ingest_token, ("/v1/logs", more))
    recording.sent.clear()
    assert await final_rows(svc, query) == [["/a", 2], ["/b", 1], ["5", 1], ['{"x":"y"}', 1]]
    assert len(svc.plans) == 1  # the same plan, rendered with the facts as they are now
    (second,) = recording.queries()
    assert "toJSONString(`attributes`.^`http`.`route`)" in second
    assert "$paths" not in second


@pytest.mark.anyio
async def test_the_registry_is_read_again_only_after_a_write(  # type: ignore[no-untyped-def]
    service,
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    svc, _ = service
    registry_reads: list[str] = []
    read = catalog.backend.query_arrow

    def recording_read(sql: str, *args: Any, **kwargs: Any) -> Any:
        if "$paths" in sql:
            registry_reads.append(sql)
        return read(sql, *args, **kwargs)

    monkeypatch.setattr(catalog.backend, "query_arrow", recording_read)
    # Renders that had to read the registry (in a worker thread, off the event loop).
    blocking: list[int] = []
    bound = CompiledQuery.bound

    def recording_bound(self: CompiledQuery, bounds: Any) -> Any:
        blocking.append(1)
        return bound(self, bounds)

    monkeypatch.setattr(CompiledQuery, "bound", recording_bound)
    query = (
        'default | summarize n = count() by r = tostring(attributes["http.route"]) | order by r asc'
    )
    assert await final_rows(svc, query) == [["/a", 2], ["/b", 1]]
    first = len(blocking)
    assert first >= 1
    assert await final_rows(svc, query) == [["/a", 2], ["/b", 1]]
    assert len(registry_reads) == 1  # the second run answered the same facts from memory
    assert len(blocking) == first  # ... on the event loop, without a worker thread
    await post_otlp(ingest_app, ingest_token, ("/v1/logs", _logs(3, {"http.route": _i(5)})))
    # The path now holds a number: the next run reads the registry again and converts it.
    assert await final_rows(svc, query) == [["/a", 2], ["/b", 1], ["5", 1]]
    assert len(registry_reads) == 2
    assert len(blocking) > first


@pytest.mark.anyio
async def test_numbers_only_path_converts_without_text(service) -> None:  # type: ignore[no-untyped-def]
    svc, recording = service
    rows = await final_rows(
        svc,
        "default | summarize s = sum(todouble(attributes.dur)), n = countif(isnotnull(attributes.dur))",
    )
    assert rows == [[8.5, 2]]
    (sql,) = recording.queries()
    assert "CAST(`attributes`.`dur` AS Nullable(Float64))" in sql
    assert "toFloat64OrNull" not in sql


def test_a_run_that_cannot_read_the_registry_asks_inside_the_sql_with_the_same_answer(
    chdb_backend,
    ch_database,  # type: ignore[no-untyped-def]
) -> None:
    from dataclasses import replace

    from bzrk.engine.backends.base import QuerySettings
    from bzrk.engine.compile.query import QueryCompiler
    from bzrk.engine.semantic_settings import SEMANTIC_SETTINGS
    from bzrk.kql.parser import parse
    from tests.engine.stored_logs import (
        Logs,
        create_logs,
        registry_reader,
        unreadable_registry,
    )

    create_logs(
        chdb_backend,
        ch_database,
        BASE,
        [
            {"attributes": {"k": "a", "n": 1.5, "o": "x"}},
            {"attributes": {"k": 3, "n": 2, "o": {"p": 1}}},
            {"attributes": {}},
            # Past 2**53: the nearest double, as the JSON text form reads it.
            {"attributes": {"n": 9007199254740993}},
        ],
    )
    text = (
        "logs | project body, k = tostring(attributes.k), n = todouble(attributes.n), "
        "o = tostring(attributes.o), z = tostring(attributes.z) | order by body asc"
    )
    settings = QuerySettings(extra=SEMANTIC_SETTINGS)
    answers = []
    for reader, asked in ((registry_reader(chdb_backend), False), (unreadable_registry, True)):
        resolver = Logs(ch_database)
        resolver.source = replace(resolver.source, registry_reader=reader)
        compiled = QueryCompiler(resolver).compile(parse(text))
        assert compiled.facts is not None
        sql = compiled.bound(None).tables[0].sql
        assert ("$paths" in sql) is asked
        answers.append(chdb_backend.query_arrow(sql, settings=settings).to_pylist())
    assert answers[0] == answers[1]
    assert [(r["k"], r["n"], r["o"], r["z"]) for r in answers[0]] == [
        ("a", 1.5, "x", ""),
        ("3", 2.0, '{"p":1}', ""),
        ("", None, "", ""),
        ("", 9007199254740992.0, "", ""),
    ]
