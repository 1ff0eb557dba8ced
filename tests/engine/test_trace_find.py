"""trace-find over spans and logs sent through the real OTLP/HTTP receivers: each relation
(child, descendant, parent, ancestor, sibling, correlated log), and/or, chains, search blocks,
the attached clauses, and the errors of what it refuses."""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2 as tr

from bzrk.engine.events import Error
from bzrk.engine.oneshot import execute_text
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import final_rows, post_otlp
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401

S = 10**9  # ns
BASE = (time.time_ns() // S - 1800) * S  # half an hour ago
CHECKOUT, CRON, DEEP = "a" * 32, "b" * 32, "c" * 32
DEPTH = 200  # the deep trace's chain: far below any fixed number of self-joins


def _sid(n: int) -> bytes:
    return n.to_bytes(8, "big")


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _traces() -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()

    def spans(service: str) -> Any:
        rs = req.resource_spans.add()
        rs.resource.attributes.append(_kv("service.name", service))
        return rs.scope_spans.add()

    def span(scope: Any, trace: str, sid: int, parent: int | None, name: str, **kw: Any) -> Any:
        sp = scope.spans.add(
            trace_id=bytes.fromhex(trace),
            span_id=_sid(sid),
            name=name,
            start_time_unix_nano=BASE + sid * S,
            end_time_unix_nano=BASE + sid * S + S // 2,
            **kw,
        )
        if parent is not None:
            sp.parent_span_id = _sid(parent)
        return sp

    front = spans("frontend")
    # checkout: GET /checkout > (call payment > POST /pay > UPDATE payments), render
    span(front, CHECKOUT, 1, None, "GET /checkout", kind=tr.Span.SPAN_KIND_SERVER)
    span(front, CHECKOUT, 2, 1, "call payment", kind=tr.Span.SPAN_KIND_CLIENT)
    span(front, CHECKOUT, 3, 1, "render")
    pay = spans("payment")
    failed = span(pay, CHECKOUT, 4, 2, "POST /pay", kind=tr.Span.SPAN_KIND_SERVER)
    failed.status.code = tr.Status.STATUS_CODE_ERROR
    span(pay, CHECKOUT, 5, 4, "UPDATE payments")
    cron = spans("cron")
    span(cron, CRON, 10, None, "cron tick")
    deep = spans("deep")
    for level in range(DEPTH):
        span(deep, DEEP, 100 + level, 100 + level - 1 if level else None, f"level {level}")
    return req


def _logs() -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    scope = req.resource_logs.add().scope_logs.add()
    for trace, sid, body in (
        (CHECKOUT, 1, "user login failed"),
        (CHECKOUT, 4, "payment declined: card expired"),
        (CRON, 10, "Deadlock detected"),
        (DEEP, 100 + DEPTH - 1, "bottom reached"),
    ):
        record = scope.log_records.add(
            time_unix_nano=BASE + sid * S, severity_number=17, severity_text="ERROR"
        )
        record.body.string_value = body
        record.trace_id, record.span_id = bytes.fromhex(trace), _sid(sid)
    return req


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token) -> QueryService:  # type: ignore[no-untyped-def]  # noqa: F811
    await post_otlp(ingest_app, ingest_token, ("/v1/traces", _traces()), ("/v1/logs", _logs()))
    return QueryService(catalog.backend, catalog=catalog)


async def rows(service: QueryService, query: str) -> list[list[Any]]:
    return await final_rows(service, query)


async def traces(service: QueryService, pattern: str) -> set[str]:
    found = await rows(service, f"default | trace-find {pattern}")
    return {row[0] for row in found}


@pytest.mark.anyio
async def test_each_relation_between_spans(service: QueryService) -> None:
    checkout = {CHECKOUT}
    # > child: a direct child only, never a grandchild
    assert (
        await traces(service, '{ span_name == "call payment" } > { span_name == "POST /pay" }')
        == checkout
    )
    assert (
        await traces(service, '{ span_name == "GET /checkout" } > { status_code == "ERROR" }')
        == set()
    )
    # >> descendant: any depth
    assert (
        await traces(service, '{ span_name == "GET /checkout" } >> { status_code == "ERROR" }')
        == checkout
    )
    assert await traces(service, '{ span_name == "render" } >> { status_code == "ERROR" }') == set()
    # < parent, << ancestor: the same relations read from the lower span
    assert (
        await traces(service, '{ span_name == "POST /pay" } < { span_name == "call payment" }')
        == checkout
    )
    assert (
        await traces(service, '{ span_name == "POST /pay" } < { span_name == "GET /checkout" }')
        == set()
    )
    assert (
        await traces(
            service, '{ span_name == "UPDATE payments" } << { span_name == "GET /checkout" }'
        )
        == checkout
    )
    # ~ sibling: another span under the same parent (a span is not its own sibling)
    assert (
        await traces(service, '{ span_name == "call payment" } ~ { span_name == "render" }')
        == checkout
    )
    assert await traces(service, '{ span_name == "render" } ~ { span_name == "render" }') == set()
    assert await traces(service, '{ span_name == "GET /checkout" } ~ { span_name == "cron tick" }') == set()  # fmt: skip


@pytest.mark.anyio
async def test_deep_descendants_and_ancestors(service: QueryService) -> None:
    bottom = f'{{ span_name == "level {DEPTH - 1}" }}'
    assert await traces(service, f'{{ span_name == "level 0" }} >> {bottom}') == {DEEP}
    assert await traces(service, f'{bottom} << {{ span_name == "level 0" }}') == {DEEP}
    assert await traces(service, f'{bottom} >> {{ span_name == "level 0" }}') == set()


@pytest.mark.anyio
async def test_logs_are_leaf_children_of_their_span(service: QueryService) -> None:
    checkout = {CHECKOUT}
    assert (
        await traces(service, '{ span_name == "GET /checkout" } :: { body has "login" }')
        == checkout
    )
    # :: reads the span's own logs; >> finds a log under a descendant span
    assert (
        await traces(service, '{ span_name == "GET /checkout" } :: { body has "declined" }')
        == set()
    )
    assert (
        await traces(service, '{ span_name == "GET /checkout" } >> { body has "declined" }')
        == checkout
    )
    assert await traces(service, '{ span_name == "level 0" } >> { body has "bottom" }') == {DEEP}
    # a log has no children
    assert await traces(service, '{ body has "declined" } > { }') == set()


@pytest.mark.anyio
async def test_composition_chains_and_blocks(service: QueryService) -> None:
    assert await traces(service, "{ }") == {CHECKOUT, CRON, DEEP}
    assert await rows(service, "default | trace-find { } | count") == [[3]]
    assert await traces(service, '{ resource.service.name == "cron" } or { span_name == "render" }') == {CHECKOUT, CRON}  # fmt: skip
    assert await traces(service, '{ resource.service.name == "cron" } and { span_name == "render" }') == set()  # fmt: skip
    assert await traces(service, '{ resource.service.name == "payment" } and { span_name == "render" }') == {CHECKOUT}  # fmt: skip
    # a chain is its pairwise checks
    chain = '{ span_name == "GET /checkout" } > { span_name == "call payment" } > { span_name == "POST /pay" }'
    assert await traces(service, chain) == {CHECKOUT}
    broken = '{ span_name == "GET /checkout" } > { span_name == "render" } > { span_name == "POST /pay" }'
    assert await traces(service, broken) == set()
    assert await traces(service, '{ search "deadlock" }') == {CRON}
    assert await traces(service, '{ search body:"declined" }') == {CHECKOUT}
    assert await traces(service, '{ severity_text == "ERROR" } within=10m') == {
        CHECKOUT,
        CRON,
        DEEP,
    }


@pytest.mark.anyio
async def test_attached_clauses_read_the_trace_rows(service: QueryService) -> None:
    # every row of the matching trace (5 spans, 2 logs), by trace_id
    assert await rows(
        service,
        'default | trace-find { status_code == "ERROR" } '
        'summarize errors = countif(status_code == "ERROR"), rows = count()',
    ) == [[CHECKOUT, 1, 7]]
    per_service = await rows(
        service,
        'default | trace-find { status_code == "ERROR" } '
        "summarize n = count() by service = tostring(resource.service.name) | order by service asc",
    )
    assert per_service == [[CHECKOUT, "", 2], [CHECKOUT, "frontend", 3], [CHECKOUT, "payment", 2]]
    assert await rows(
        service,
        'default | trace-find { severity_text == "ERROR" } where body has "declined"',
    ) == [[CHECKOUT]]


async def error(service: QueryService, query: str) -> Error:
    request = QueryRequest(database="default", query=query, since="2h ago", progressive=False)
    errors = [e async for e in service.execute(request) if isinstance(e, Error)]
    assert errors, query
    return errors[0]


@pytest.mark.anyio
async def test_what_trace_find_refuses(service: QueryService) -> None:
    for query, code, at in (
        ("default | trace-find { } depth=3", "UnsupportedConstruct", "depth=3"),
        ('default | trace-find { } within="soon"', "UnsupportedConstruct", "within"),
        ("default | trace-find ({ } and { }) > { }", "UnsupportedConstruct", "({ } and { }) > { }"),
        ("default | trace-find { print 1 }", None, None),
        ("datatable(x:long)[1] | trace-find { x == 1 }", "UnknownName", "trace-find"),
    ):
        found = await error(service, query)
        if code is not None:
            assert found.code == code, (query, found)
        if at is not None:
            assert found.location is not None, (query, found)
            assert query[found.location.start_column - 1 :].startswith(at), (query, found)


def test_any_table_with_trace_columns(chdb_backend: Any) -> None:
    spans = (
        "datatable(trace_id:string, span_id:string, parent_span_id:string, duration:timespan)"
        '["t", "s", "", 1s, "t", "c", "s", 1s]'
    )
    found = execute_text(chdb_backend, f"{spans} | trace-find {{ }} > {{ }}").tables[0].rows
    assert found == [["t"]]
