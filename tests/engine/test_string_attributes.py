"""An OTel string attribute stays a string whatever it spells, over logs sent through the real
OTLP/HTTP receiver: a value that reads as a date, a time, a number or a boolean is compared,
typed, serialized and searched as the text it arrived as.

Before the writer's INSERT settings (storage/schema.py INSERT_SETTINGS), ClickHouse's JSON type
guessed a `Date` for "2024-01-01" and a `DateTime` for "2024-01-01 10:00:00", so
`attributes.build_date == "2024-01-01"` matched nothing.
"""

from __future__ import annotations

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue

from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import final_rows, logs_request, recorded_service
from tests.engine.otlp import text as _s
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401

# (attribute, the text it was sent as)
LOOKALIKES = [
    ("day", "2024-01-01"),
    ("clock", "2024-01-01 10:00:00"),
    ("iso", "2024-01-01T10:00:00.123Z"),
    ("number", "42"),
    ("real", "1.5"),
    ("flag", "true"),
]


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token):  # type: ignore[no-untyped-def]  # noqa: F811
    attributes = {name: _s(value) for name, value in LOOKALIKES}
    attributes["days"] = AnyValue(array_value=ArrayValue(values=[_s("2024-01-01")]))
    request = logs_request(0, [attributes], {"service.name": "svc", "build.date": "2024-02-03"})
    svc, _ = await recorded_service(catalog, ingest_app, ingest_token, request)
    return svc


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "value"), LOOKALIKES)
async def test_a_string_attribute_equals_its_own_text(service, name: str, value: str) -> None:  # type: ignore[no-untyped-def]
    rows = await final_rows(
        service,
        f'default | project eq = attributes["{name}"] == "{value}", '
        f'text = tostring(attributes["{name}"]), type = gettype(attributes["{name}"]), '
        f'raw = $raw.attributes["{name}"] == "{value}"',
    )
    assert rows == [[True, value, "string", True]]


@pytest.mark.anyio
async def test_a_lookalike_is_found_by_filter_and_kept_in_arrays_and_resources(service) -> None:  # type: ignore[no-untyped-def]
    rows = await final_rows(
        service,
        'default | where attributes.day == "2024-01-01" and resource["build.date"] == "2024-02-03"'
        " | project body, d = tostring(attributes.days), first = tostring(attributes.days[0]),"
        " bag = tostring(attributes)",
    )
    assert len(rows) == 1
    body, days, first, bag = rows[0]
    assert (body, days, first) == ("r0", '["2024-01-01"]', "2024-01-01")
    assert '"iso":"2024-01-01T10:00:00.123Z"' in bag and '"clock":"2024-01-01 10:00:00"' in bag
