"""The batcher: group commit, max rows / max wait, and isolation of a request whose rows fail."""

from __future__ import annotations

import asyncio

import pytest

from bzrk.ingest.batcher import Batching, TableBatcher

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Store:
    """A write function that records inserts and refuses rows marked bad (as ClickHouse would)."""

    def __init__(self) -> None:
        self.inserts: list[list[dict]] = []

    def write(self, table: str, rows: list[dict]) -> int:
        if any(row.get("bad") for row in rows):
            raise ValueError("row refused")
        self.inserts.append(rows)
        return len(rows)


async def test_requests_share_one_insert_until_max_wait() -> None:
    store = Store()
    batcher = TableBatcher("t", store.write, Batching(max_rows=1000, max_wait_s=0.2))
    await asyncio.gather(*(batcher.submit([{"n": i}]) for i in range(5)))
    assert [len(rows) for rows in store.inserts] == [5]
    await batcher.close()


async def test_max_rows_flushes_early() -> None:
    store = Store()
    batcher = TableBatcher("t", store.write, Batching(max_rows=3, max_wait_s=30))
    await asyncio.wait_for(batcher.submit([{"n": i} for i in range(3)]), 5)
    assert [len(rows) for rows in store.inserts] == [3]
    await batcher.close()


async def test_bad_rows_fail_only_their_request() -> None:
    store = Store()
    batcher = TableBatcher("t", store.write, Batching(max_rows=1000, max_wait_s=0.1))
    results = await asyncio.gather(
        batcher.submit([{"n": 1}]),
        batcher.submit([{"n": 2}, {"bad": True}]),
        batcher.submit([{"n": 3}]),
        return_exceptions=True,
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], ValueError)
    assert sorted(row["n"] for rows in store.inserts for row in rows) == [1, 3]
    await batcher.close()


async def test_close_flushes_pending_rows() -> None:
    store = Store()
    batcher = TableBatcher("t", store.write, Batching(max_rows=1000, max_wait_s=60))
    pending = asyncio.create_task(batcher.submit([{"n": 1}]))
    await asyncio.sleep(0.05)
    await batcher.close()
    await asyncio.wait_for(pending, 5)
    assert store.inserts == [[{"n": 1}]]
