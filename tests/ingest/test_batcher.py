"""The batcher: group commit, max rows / max wait, and isolation of a request whose rows fail."""

from __future__ import annotations

import asyncio
import threading

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


async def test_nothing_on_its_way_writes_before_max_wait() -> None:
    store = Store()
    batching = Batching(max_rows=1000, max_wait_s=60, min_wait_s=0)
    batcher = TableBatcher("t", store.write, batching, expecting=lambda: False)
    await asyncio.wait_for(batcher.submit([{"n": 1}]), 5)
    assert store.inserts == [[{"n": 1}]]
    await batcher.close()


async def test_a_request_on_its_way_joins_the_batch() -> None:
    store = Store()
    on_its_way = [True]
    batching = Batching(max_rows=1000, max_wait_s=60, min_wait_s=0)
    batcher = TableBatcher("t", store.write, batching, expecting=lambda: on_its_way[0])
    first = asyncio.create_task(batcher.submit([{"n": 1}]))
    await asyncio.sleep(0.05)
    assert store.inserts == [] and not first.done()  # the batch waits for the second request
    second = batcher.add([{"n": 2}])
    on_its_way[0] = False
    batcher.wake()
    await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert store.inserts == [[{"n": 1}, {"n": 2}]]
    await batcher.close()


async def test_a_batch_written_early_still_acknowledges_only_after_its_write() -> None:
    written = threading.Event()
    release = threading.Event()

    def slow_write(table: str, rows: list[dict]) -> int:
        written.set()
        release.wait(10)
        return len(rows)

    batching = Batching(max_rows=1000, max_wait_s=60, min_wait_s=0)
    batcher = TableBatcher("t", slow_write, batching, expecting=lambda: False)
    pending = asyncio.create_task(batcher.submit([{"n": 1}]))
    await asyncio.to_thread(written.wait, 5)
    await asyncio.sleep(0.05)
    assert not pending.done()  # the INSERT has started but not returned: no acknowledgement
    release.set()
    await asyncio.wait_for(pending, 5)
    await batcher.close()


async def test_min_wait_keeps_a_lone_request_in_its_batch() -> None:
    store = Store()
    batching = Batching(max_rows=1000, max_wait_s=60, min_wait_s=0.3)
    batcher = TableBatcher("t", store.write, batching, expecting=lambda: False)
    first = asyncio.create_task(batcher.submit([{"n": 1}]))
    await asyncio.sleep(0.05)
    second = batcher.add([{"n": 2}])
    await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert store.inserts == [[{"n": 1}, {"n": 2}]]
    await batcher.close()
