"""The real engine (one-shot execution on chDB) behind this app, read by the real Python SDK.

Until the query service wires the engine into ``ctx.executor``, this adapts
:func:`bzrk.engine.oneshot.run_query` to the executor protocol, so the wire format is checked
against the engine's real values, not only scripted ones.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from bzrk.engine.events import Event
from bzrk.engine.request import QueryRequest
from tests.api.adx.scripted import LoopbackServer, make_app

oneshot = pytest.importorskip("bzrk.engine.oneshot")
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

from azure.kusto.data import KustoClient  # noqa: E402
from azure.kusto.data.exceptions import KustoApiError  # noqa: E402

EVERY_TYPE = (
    "print b=true, i=int(7), l=long(9223372036854775807), r=real(1.5), d=decimal(2.5), "
    's="héllo", t=datetime(2024-01-02T03:04:05.1234567Z), ts=timespan(1.01:00:01.5), '
    'g=guid(123e27de-1e4e-49d9-b579-fe0b331d3642), dyn=dynamic({"a":[1,2]}), '
    "n=real(nan), z=long(null)"
)


class OneShotExecutor:
    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def execute(self, request: QueryRequest) -> AsyncIterator[Event]:
        return oneshot.run_query(self.backend, request.query)


@pytest.fixture(scope="module")
def kc(chdb_backend: Any) -> Iterator[KustoClient]:
    with LoopbackServer(make_app(OneShotExecutor(chdb_backend)), "hypercorn") as server:  # type: ignore[arg-type]
        yield KustoClient(server.url)


def test_every_type_round_trips_from_the_engine(kc: KustoClient) -> None:
    row = kc.execute_query("default", EVERY_TYPE).primary_results[0][0].to_dict()
    assert row == {
        "b": True,
        "i": 7,
        "l": 9_223_372_036_854_775_807,
        "r": 1.5,
        "d": Decimal("2.5"),
        "s": "héllo",
        "t": datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        "ts": timedelta(days=1, hours=1, seconds=1.5),
        "g": "123e27de-1e4e-49d9-b579-fe0b331d3642",
        "dyn": {"a": [1, 2]},
        "n": "NaN",
        "z": None,
    }


def test_render_and_streaming(kc: KustoClient) -> None:
    query = "range x from 1 to 5 step 1 | extend y = x * 2 | render timechart"
    result = kc.execute_query("default", query)
    assert [r["y"] for r in result.primary_results[0]] == [2, 4, 6, 8, 10]
    props = next(t for t in result.tables if t.table_kind.value == "QueryProperties")
    assert '"Visualization":"timechart"' in props[0]["Value"]
    streamed = kc.execute_streaming_query("default", "range x from 1 to 3000 step 1")
    assert sum(len(list(t)) for t in streamed.iter_primary_results()) == 3000


def test_engine_errors_are_kusto_api_errors(kc: KustoClient) -> None:
    with pytest.raises(KustoApiError) as info:
        kc.execute_query("default", "print x=1 | where nope > 1")
    assert "nope" in str(info.value)
    body = info.value.http_response.json()
    assert body["error_details"]["location"]["start_column"] == 19
