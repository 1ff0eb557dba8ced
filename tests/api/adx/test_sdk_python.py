"""The real Python ``azure-kusto-data`` SDK against the ADX app on a loopback port.

The engine is scripted here (it tests the encoders); ``test_e2e.py`` runs the real engine.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from bzrk.engine.events import (
    Column,
    Done,
    Error,
    Metadata,
    RowBatch,
    TableSchema,
    Visualization,
)
from tests.api.adx.scripted import (
    ALL_TYPES_COLUMNS,
    ALL_TYPES_ROWS,
    MEMBER,
    LoopbackServer,
    ScriptedExecutor,
    make_app,
    simple_result,
)

kusto = pytest.importorskip("azure.kusto.data")
from azure.kusto.data import (  # noqa: E402
    ClientRequestProperties,
    KustoClient,
    KustoConnectionStringBuilder,
)
from azure.kusto.data.exceptions import (  # noqa: E402
    KustoApiError,
    KustoMultiApiError,
    KustoServiceError,
)

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")


def _failing_after_rows(request):  # type: ignore[no-untyped-def]
    cols = (Column("n", "long"),)
    yield TableSchema("PrimaryResult", cols)
    yield RowBatch("PrimaryResult", "it-1", [[1], [2]], False)
    yield Error(code="MemoryLimitExceeded", message="summarize memory limit reached (4 GiB)")


SCRIPTS = {
    "AllTypes": simple_result(ALL_TYPES_COLUMNS, ALL_TYPES_ROWS),
    "Chart": simple_result(
        (Column("ts", "datetime"), Column("n", "long")),
        [[0, 1]],
        visualization=Visualization("timechart", {"title": "hits"}),
    ),
    "Fails": _failing_after_rows,
    "BigInts": simple_result(
        (Column("h", "long"), Column("raw", "dynamic")),
        [[15_837_721_547_659_159_810, {"h": 15_837_721_547_659_159_810, "n": [1, 2**63 - 1]}]],
    ),
    "Params": lambda request: simple_result(
        (Column("k", "string"), Column("v", "string")),
        [[k, str(v)] for k, v in sorted(request.parameters.items())],
    ),
    "Two": [
        TableSchema("PrimaryResult", (Column("a", "long"),)),
        TableSchema("Totals", (Column("s", "string"),)),
        RowBatch("Totals", "i", [["x"]], True),
        RowBatch("PrimaryResult", "i", [[1], [2]], False),
        RowBatch("PrimaryResult", "i", [[3]], True),
        Metadata("i"),
        Done(),
    ],
}


@pytest.fixture(scope="module")
def executor() -> ScriptedExecutor:
    return ScriptedExecutor(dict(SCRIPTS))


@pytest.fixture(scope="module")
def server(executor: ScriptedExecutor) -> Iterator[LoopbackServer]:
    with LoopbackServer(make_app(executor)) as srv:
        yield srv


@pytest.fixture(scope="module")
def kc(server: LoopbackServer) -> KustoClient:
    return KustoClient(
        KustoConnectionStringBuilder.with_aad_application_token_authentication(
            server.url, "test-token"
        )
    )


EXPECTED_ROW_0 = {
    "b": True,
    "i": 2_147_483_647,
    "l": 9_223_372_036_854_775_807,
    "r": 1.5,
    "d": Decimal("2.00000000000001"),
    "s": 'héllo "q"',
    # dateutil truncates to microseconds
    "t": datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
    "ts": timedelta(days=1, hours=1, seconds=1, microseconds=500_000),
    "g": "123e27de-1e4e-49d9-b579-fe0b331d3642",
    "dyn": {"a": [1, 2, {"b": None}], "s": "x"},
}


def _check_all_types(rows: list[dict]) -> None:  # type: ignore[type-arg]
    assert rows[0] == EXPECTED_ROW_0
    assert rows[1]["r"] == "NaN"  # the SDK passes the string through (adx.md §8)
    assert rows[1]["ts"] == -timedelta(seconds=2002)
    assert rows[1]["dyn"] == [1, "two"]
    assert rows[1]["t"] == datetime(1970, 1, 1, tzinfo=UTC)
    assert rows[2]["b"] is None and rows[2]["l"] is None and rows[2]["t"] is None
    assert rows[2]["r"] == "Infinity" and rows[3]["r"] == "-Infinity"
    assert rows[3]["ts"] == timedelta(0)  # one tick is below the SDK's microsecond precision
    assert rows[3]["d"] == Decimal("0")


def test_execute_query_round_trips_every_type(kc: KustoClient) -> None:
    result = kc.execute_query("default", "AllTypes")
    table = result.primary_results[0]
    assert [c.column_type for c in table.columns] == [c.type for c in ALL_TYPES_COLUMNS]
    _check_all_types([row.to_dict() for row in table])
    assert result.errors_count == 0


def test_streaming_query_round_trips_every_type(kc: KustoClient) -> None:
    result = kc.execute_streaming_query("default", "AllTypes")
    tables = [[row.to_dict() for row in table] for table in result.iter_primary_results()]
    assert len(tables) == 1
    _check_all_types(tables[0])


def test_mgmt_and_execute_routing(kc: KustoClient) -> None:
    result = kc.execute_mgmt("default", ".show tables")
    names = [row["TableName"] for row in result.primary_results[0]]
    assert names == ["default", "metrics"]
    # execute() routes by the leading dot
    assert kc.execute("default", ".show version").primary_results[0][0]["BuildVersion"]


def test_visualization_reaches_query_properties(kc: KustoClient) -> None:
    result = kc.execute_query("default", "Chart")
    props = next(t for t in result.tables if t.table_kind.value == "QueryProperties")
    assert '"Visualization":"timechart"' in props[0]["Value"]
    assert len(result.primary_results) == 1


def test_two_result_tables_in_schema_order(kc: KustoClient) -> None:
    result = kc.execute_query("default", "Two")
    assert [t.table_name for t in result.primary_results] == ["PrimaryResult", "Totals"]
    assert [r["a"] for r in result.primary_results[0]] == [1, 2, 3]
    assert [r["s"] for r in result.primary_results[1]] == ["x"]


def test_properties_and_parameters_arrive(kc: KustoClient, executor: ScriptedExecutor) -> None:
    crp = ClientRequestProperties()
    crp.set_option("servertimeout", timedelta(minutes=1))
    crp.set_option("truncationmaxrecords", 1234)
    crp.set_parameter("n", "10")
    crp.client_request_id = f"test;{uuid.uuid4()}"
    result = kc.execute_query("default", "Params", crp)
    assert [(r["k"], r["v"]) for r in result.primary_results[0]] == [("n", "10")]
    sent = executor.requests[-1]
    assert sent.timeout_ms == 60_000
    assert sent.limits.max_rows == 1234
    assert sent.client_request_id == crp.client_request_id
    assert sent.surface == "adx" and sent.principal == "sp:sp-admin"
    assert sent.progressive is False


def test_error_before_body_is_kusto_api_error_with_our_message(kc: KustoClient) -> None:
    with pytest.raises(KustoApiError) as info:
        kc.execute_query("default", "NoSuchTable")
    assert "unknown table in 'NoSuchTable'" in str(info.value)
    assert info.value.get_api_error().code == "General_BadRequest"
    assert info.value.is_semantic_error()


def test_error_after_rows_is_multi_api_error(kc: KustoClient) -> None:
    with pytest.raises(KustoMultiApiError) as info:
        kc.execute_query("default", "Fails")
    assert "summarize memory limit reached" in str(info.value)
    with pytest.raises(KustoMultiApiError):
        for table in kc.execute_streaming_query("default", "Fails").iter_primary_results():
            list(table)


def test_unknown_command_and_forbidden(server: LoopbackServer, kc: KustoClient) -> None:
    with pytest.raises(KustoApiError) as info:
        kc.execute_mgmt("default", ".drop table default")
    assert "'.drop table default'" in str(info.value)
    member_app = make_app(ScriptedExecutor(), principal=MEMBER)
    with LoopbackServer(member_app) as member:
        client = KustoClient(member.url)
        # A member lists what they may query, and is refused the rest.
        listed = client.execute_mgmt("", ".show databases").primary_results[0]
        assert [row[0] for row in listed] == ["default"]
        with pytest.raises(KustoApiError) as info:
            client.execute_query("other-db", "T | take 1")
        assert "no access to database 'other-db'" in str(info.value)
        assert info.value.http_response.status_code == 403
        # everyone may read the schemas they may query (Grafana's health check)
        assert client.execute_mgmt("", ".show databases schema").primary_results[0]


def test_unknown_database_is_404(kc: KustoClient) -> None:
    missing = ScriptedExecutor()
    with LoopbackServer(make_app(missing)) as srv:
        client = KustoClient(srv.url)
        with pytest.raises(KustoServiceError) as info:
            client.execute_mgmt("nope", ".show database nope schema as json")
        assert info.value.http_response.status_code == 404
        body = info.value.http_response.json()
        assert body["status"] == 404 and body["error"]["code"] == "DatabaseNotFound"


def test_integers_beyond_int64_do_not_break_streaming(kc: KustoClient) -> None:
    # the SDK's streaming JSON parser stops at integers outside int64
    rows = [
        row.to_dict()
        for table in kc.execute_streaming_query("default", "BigInts").iter_primary_results()
        for row in table
    ]
    assert rows == [
        {
            "h": 15_837_721_547_659_159_810 - 2**64,
            "raw": {"h": 1.583772154765916e19, "n": [1, 2**63 - 1]},
        }
    ]
