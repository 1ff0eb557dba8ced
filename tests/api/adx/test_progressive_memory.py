"""A 1 M-row progressive answer streams with bounded memory (rows are never held whole)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest

from bzrk.engine.events import Column, Done, Metadata, Progress, RowBatch, TableSchema
from tests.api.adx.scripted import LoopbackServer, ScriptedExecutor, make_app

COLUMNS = (
    Column("timestamp", "datetime"),
    Column("service", "string"),
    Column("latency", "real"),
    Column("n", "long"),
    Column("attributes", "dynamic"),
)
T0 = 17_040_672_000_000_000
BATCH = 10_000


def _rss_bytes() -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", text).group(1)) * 1024  # type: ignore[union-attr]


def _stream(total_rows: int):  # type: ignore[no-untyped-def]
    async def run(request):  # type: ignore[no-untyped-def]
        yield TableSchema("PrimaryResult", COLUMNS)
        # snapshot 1: a quick partial answer
        yield RowBatch("PrimaryResult", "s1", [[T0, "api", 1.0, 0, {}]] * 1000, True)
        yield Metadata("s1")
        yield Progress(coverage=0.5)
        # snapshot 2: the whole answer, produced lazily batch by batch
        for start in range(0, total_rows, BATCH):
            rows = [
                [T0 + i * 10_000, f"svc-{i % 7}", i / 3, i, {"http.status": 200 + i % 5}]
                for i in range(start, min(start + BATCH, total_rows))
            ]
            yield RowBatch("PrimaryResult", "s2", rows, start + BATCH >= total_rows)
            await anyio.sleep(0)
        yield Metadata("s2")
        yield Progress(coverage=1.0)
        yield Done()

    return run


@pytest.mark.slow
def test_million_row_progressive_stream_has_bounded_memory() -> None:
    total = 1_000_000
    executor = ScriptedExecutor({"Big": _stream(total)})
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_bytes())
            time.sleep(0.05)

    with LoopbackServer(make_app(executor), "hypercorn") as server:  # what bzrk dev runs
        body = {
            "db": "default",
            "csl": "Big",
            "properties": {"Options": {"results_progressive_enabled": True}},
        }
        baseline = _rss_bytes()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        received = 0
        tail = b""
        replace_count = 0
        with httpx.stream("POST", f"{server.url}/v2/rest/query", json=body, timeout=300) as resp:
            assert resp.status_code == 200
            for chunk in resp.iter_raw():
                received += len(chunk)
                replace_count += chunk.count(b'"DataReplace"')
                tail = (tail + chunk)[-65_536:]
        stop.set()
        sampler.join()
    growth = peak[0] - baseline
    print(f"streamed {received / 1e6:.0f} MB, RSS growth {growth / 1e6:.0f} MB")
    assert received > 75_000_000  # the body is far larger than the memory bound below
    assert growth < 30_000_000, f"RSS grew {growth / 1e6:.0f} MB while streaming"
    assert replace_count == 2  # one DataReplace per snapshot
    assert b'"RowCount":1000000' in tail
    assert tail.rstrip().endswith(b'"HasErrors":false,"Cancelled":false}\n]')
