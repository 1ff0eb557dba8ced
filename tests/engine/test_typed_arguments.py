"""An OTel attribute passed where a function takes a typed value is read as that type with
Berserk's `asXXX` extractors (the vendor's SKILL.md, *Permissive mode* 2): the value when it is
stored as that type, else null, never converted across types. Over logs sent through the real
OTLP/HTTP receiver whose `n` and `path` attributes hold a different type on each record, as
attributes from several instrumentations do. Before, bzrk converted (`tolower` of the number
5 was "5", `avg` of the string "7" was 7)."""

from __future__ import annotations

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import final_rows, logs_request, recorded_service
from tests.engine.otlp import text as _s
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token):  # type: ignore[no-untyped-def]  # noqa: F811
    records = [
        {
            "n": AnyValue(int_value=5),
            "path": _s("/api/orders/17"),
            "lvl": _s("ERROR"),
            "ms": AnyValue(int_value=10),
            "ok": AnyValue(bool_value=True),
        },
        {
            "n": _s("7"),
            "path": AnyValue(int_value=404),
            "lvl": AnyValue(int_value=3),
            "ms": AnyValue(int_value=20),
            "ok": _s("true"),
        },
        {
            "n": AnyValue(double_value=2.5),
            "path": _s("/health"),
            "lvl": _s("Warn"),
            "ms": AnyValue(double_value=0.5),
            "ok": AnyValue(bool_value=False),
        },
        {},
    ]
    request = logs_request(0, records, {"service.name": "svc"})
    svc, _ = await recorded_service(catalog, ingest_app, ingest_token, request)
    return svc


async def _by_body(svc: QueryService, columns: str) -> list[list[object]]:
    rows = await final_rows(svc, f"default | project body, {columns} | order by body asc")
    return [row[1:] for row in rows]


@pytest.mark.anyio
async def test_a_string_function_reads_only_strings(service) -> None:  # type: ignore[no-untyped-def]
    rows = await _by_body(
        service,
        "lower = tolower(attributes.lvl), prefix = substring(attributes.path, 0, 4),"
        " len = strlen(attributes.path), none = isempty(tolower(attributes.lvl))",
    )
    assert rows == [
        ["error", "/api", 14, False],
        ["", "", 0, True],  # the number 3 and the number 404 are no strings
        ["warn", "/hea", 7, False],
        ["", "", 0, True],  # no attributes at all
    ]


@pytest.mark.anyio
async def test_a_number_function_reads_only_numbers(service) -> None:  # type: ignore[no-untyped-def]
    rows = await _by_body(
        service, "r = round(attributes.n, 1), b = bin(attributes.n, 2), e = exp(attributes.n) > 1"
    )
    assert rows == [[5.0, 4.0, True], [None, None, None], [2.5, 2.0, True], [None, None, None]]
    # a negated attribute is its number negated (it failed in ClickHouse: negate of a String)
    negated = await _by_body(service, "neg = -attributes.n")
    assert negated == [[-5.0], [None], [-2.5], [None]]


@pytest.mark.anyio
async def test_an_aggregate_skips_values_of_another_type(service) -> None:  # type: ignore[no-untyped-def]
    # 5 and 2.5 are numbers; "7" is a string holding one and is left out, as absent values are
    rows = await final_rows(
        service,
        "default | summarize a = avg(attributes.n), s = sum(attributes.n),"
        " m = max(attributes.n), p = percentile(attributes.n, 100),"
        " ps = percentiles(attributes.n, 0, 100), c = count()",
    )
    assert rows == [[3.75, 7.5, 5.0, 5.0, 2.5, 5.0, 4]]
    # a path that only ever held numbers reads them all (ClickHouse's own cast)
    only_numbers = await final_rows(
        service, "default | summarize a = avg(attributes.ms), m = max(attributes.ms)"
    )
    assert only_numbers == [[10.166666666666666, 20.0]]
    # numbers order by value; the string orders by its text after them
    top = await final_rows(service, "default | top 2 by attributes.n desc | project body")
    assert top == [["r0"], ["r2"]]


@pytest.mark.anyio
async def test_an_explicit_conversion_still_crosses_types(service) -> None:  # type: ignore[no-untyped-def]
    # to*() is how a query parses a string into a number (SKILL.md: "use an explicit to*() only
    # to cross types"), and the type of a stored value is what gettype says
    rows = await _by_body(
        service,
        "n = todouble(attributes.n), s = tostring(attributes.path), t = gettype(attributes.n)",
    )
    assert rows == [
        [5.0, "/api/orders/17", "long"],
        [7.0, "404", "string"],
        [2.5, "/health", "real"],
        [None, "", "null"],
    ]


@pytest.mark.anyio
async def test_between_compares_an_attribute_by_its_stored_type(service) -> None:  # type: ignore[no-untyped-def]
    # as `>=` and `<=` do (SKILL.md: a type that cannot match is not equal; ordering is null):
    # the string "7" is not in a numeric range; before, between converted it
    rows = await _by_body(
        service, "b = attributes.n between (1 .. 10), nb = attributes.n !between (1 .. 3)"
    )
    assert rows == [[True, True], [None, None], [True, False], [None, None]]
    assert await final_rows(
        service, "default | where attributes.n between (1 .. 10) | project body | order by body asc"
    ) == [["r0"], ["r2"]]


@pytest.mark.anyio
async def test_a_condition_reads_only_a_stored_bool(service) -> None:  # type: ignore[no-untyped-def]
    # asbool, as `attributes.ok == true` compares: the string "true" is no bool (it was
    # converted, so `where attributes.ok` and `attributes.ok == true` disagreed); tobool() parses
    rows = await _by_body(
        service,
        "i = iff(attributes.ok, 1, 0), e = attributes.ok == true, t = tobool(attributes.ok)",
    )
    assert rows == [[1, True, True], [0, False, True], [0, False, False], [0, False, None]]
    assert await final_rows(service, "default | where attributes.ok | project body") == [["r0"]]
    assert await final_rows(service, "default | summarize countif(attributes.ok)") == [[1]]


@pytest.mark.anyio
async def test_the_extractors_can_be_called_by_name(service) -> None:  # type: ignore[no-untyped-def]
    # the asXXX family SKILL.md names, written out: asstring(level) where the binder would put it
    rows = await _by_body(
        service,
        "s = asstring(attributes.path), l = aslong(attributes.n), d = asdouble(attributes.n),"
        " b = asbool(attributes.ok), t = gettype(asdouble(attributes.n))",
    )
    assert rows == [
        ["/api/orders/17", 5, 5.0, True, "real"],
        [None, None, None, None, "real"],  # 404 is no string, "7" no number, "true" no bool
        ["/health", None, 2.5, False, "real"],  # 2.5 is no long
        [None, None, None, None, "real"],
    ]


@pytest.mark.anyio
async def test_an_extractor_of_a_plain_value_is_it_widened_or_null(service) -> None:  # type: ignore[no-untyped-def]
    # asstring(5) is a string null (its cast to a non-Nullable String failed in ClickHouse)
    rows = await final_rows(
        service,
        "print s = asstring(5), e = isempty(asstring(5)), t = asstring('x'), d = asdouble(3),"
        " l = aslong(int(3)), b = asbool(1)",
    )
    assert rows == [[None, True, "x", 3.0, 3, None]]
