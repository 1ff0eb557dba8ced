"""Wire forms of KQL values (adx.md §8) and lenient request parsing (adx.md §2)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from bzrk.api.adx.errors import AdxError
from bzrk.api.adx.request import parse_request, parse_timespan
from bzrk.api.adx.values import (
    RowEncoder,
    encode_datetime,
    encode_decimal,
    encode_real,
    encode_timespan,
    v1_columns,
)
from bzrk.engine.events import Column

SECOND = 10_000_000


@pytest.mark.parametrize(
    ("ticks", "text"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (1, "1970-01-01T00:00:00.0000001Z"),
        (17_041_646_451_234_567, "2024-01-02T03:04:05.1234567Z"),
        (13_239_186_000_000_000, "2011-12-15T03:10:00Z"),
        (11_362_394_451_000_000, "2006-01-02T22:04:05.1Z"),
        (-1, "1969-12-31T23:59:59.9999999Z"),
        (-621_355_968_000_000_000, "0001-01-01T00:00:00Z"),
        (None, None),
    ],
)
def test_datetime(ticks: int | None, text: str | None) -> None:
    assert encode_datetime(ticks) == text


@pytest.mark.parametrize(
    ("ticks", "text"),
    [
        (1, "00:00:00.0000001"),
        (0, "00:00:00"),
        ((3600 + 23 * 60 + 45) * SECOND + 6_789_000, "01:23:45.6789000"),
        (86_400 * SECOND + SECOND + 10_010_001 - SECOND + SECOND, "1.00:00:02.0010001"),
        (-(2 * 86_400 * SECOND + 2 * SECOND + 20_020_002 - 2 * SECOND), "-2.00:00:02.0020002"),
        (None, None),
    ],
)
def test_timespan(ticks: int | None, text: str | None) -> None:
    assert encode_timespan(ticks) == text


def test_scalars() -> None:
    assert encode_real(float("nan")) == "NaN"
    assert encode_real(float("-inf")) == "-Infinity"
    assert encode_real(2.5) == 2.5
    assert encode_decimal(Decimal("1E+2")) == "100"
    assert encode_decimal(Decimal("2.00000000000001")) == "2.00000000000001"


def test_row_encoder_ints_strings_dynamic() -> None:
    encoder = RowEncoder(
        (Column("l", "long"), Column("s", "string"), Column("d", "dynamic"), Column("b", "bool"))
    )
    text = encoder.encode([3.0, None, {"x": float("nan"), "y": [1.5]}, 1])
    # A null string is an absent stored field (issue 20): null, as Kusto sends a null cell.
    assert text == '[3,null,{"x":"NaN","y":[1.5]},true]'
    assert (
        json.loads("[" + encoder.encode_many([[1, "a", None, None]] * 2) + "]")
        == [[1, "a", None, None]] * 2
    )


def test_v1_columns_carry_both_names() -> None:
    assert v1_columns((Column("b", "bool"), Column("t", "datetime"))) == [
        {"ColumnName": "b", "DataType": "SByte", "ColumnType": "bool"},
        {"ColumnName": "t", "DataType": "DateTime", "ColumnType": "datetime"},
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0:01:00", 60),
        ("00:01:00.000", 60),
        ("1 day, 0:00:00", 86_400),
        ("2 days, 1:00:00", 2 * 86_400 + 3600),
        ("1.00:00:30", 86_430),
        ("00:00:30", 30),
        ("-0:00:05", -5),
        ("90s", 90),
        ("2m", 120),
        ("1h", 3600),
    ],
)
def test_parse_timespan(text: str, seconds: int) -> None:
    assert parse_timespan(text) == seconds * SECOND


def test_properties_as_string_or_object_and_option_spellings() -> None:
    python_style = json.dumps(
        {
            "db": "default",
            "csl": "T",
            "properties": json.dumps(
                {
                    "Options": {"servertimeout": "0:01:00", "truncationmaxrecords": "10"},
                    "Parameters": {"n": "10"},
                }
            ),
            "unknownKey": 1,
        }
    ).encode()
    request = parse_request(python_style, require_db=True)
    assert request.options.timeout_ms == 60_000
    assert request.options.max_rows == 10
    assert request.parameters == {"n": "10"}

    grafana_style = json.dumps(
        {
            "db": "default",
            "csl": "T",
            "querySource": "raw",
            "properties": {
                "options": {
                    "servertimeout": "00:00:30",
                    "queryconsistency": "strongconsistency",
                    "results_progressive_enabled": "true",
                    "notruncation": True,
                    "query_datetimescope_from": "2024-01-01T00:00:00Z",
                }
            },
        }
    ).encode()
    request = parse_request(grafana_style, require_db=True)
    assert request.options.timeout_ms == 30_000
    assert request.options.progressive is True
    assert request.options.no_truncation is True
    assert request.options.since == "2024-01-01T00:00:00Z"


def test_mgmt_may_send_empty_db_but_queries_may_not() -> None:
    body = json.dumps({"db": "", "csl": ".show databases"}).encode()
    assert parse_request(body, require_db=False).is_command
    with pytest.raises(AdxError, match="'db'"):
        parse_request(body, require_db=True)
    commented = json.dumps({"db": "", "csl": "// health\n.show databases schema"}).encode()
    assert parse_request(commented, require_db=False).is_command


@pytest.mark.parametrize(
    "option",
    [{"truncationmaxrecords": -1}, {"truncationmaxrecords": "many"}, {"notruncation": "maybe"}],
)
def test_bad_option_values_are_named(option: dict[str, object]) -> None:
    body = json.dumps({"db": "d", "csl": "T", "properties": {"Options": option}}).encode()
    with pytest.raises(AdxError, match=next(iter(option))):
        parse_request(body, require_db=True)


def test_values_off_the_event_contract_still_encode() -> None:
    import uuid
    from datetime import UTC, datetime, timedelta

    encoder = RowEncoder(
        (
            Column("t", "datetime"),
            Column("ts", "timespan"),
            Column("d", "dynamic"),
            Column("g", "guid"),
        )
    )
    row = [
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        timedelta(seconds=1.5),
        {"b": b"hi"},
        uuid.UUID(int=1),
    ]
    assert json.loads("[" + encoder.encode_many([row]) + "]") == [
        [
            "2024-01-02T03:04:05Z",
            "00:00:01.5000000",
            {"b": "aGk="},
            "00000000-0000-0000-0000-000000000001",
        ]
    ]


def test_integers_beyond_their_kql_range() -> None:
    # ClickHouse UInt64 (say a metric hash) typed long: reinterpreted as int64, never 2**64-1
    encoder = RowEncoder((Column("l", "long"), Column("i", "int"), Column("d", "dynamic")))
    text = encoder.encode_many(
        [[2**64 - 1, 2**31, {"h": 15_837_721_547_659_159_810, "ok": 9_223_372_036_854_775_807}]]
    )
    assert json.loads("[" + text + "]") == [
        [-1, -(2**31), {"h": 1.583772154765916e19, "ok": 9_223_372_036_854_775_807}]
    ]
