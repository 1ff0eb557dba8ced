"""Admission counts the requests on their way to a batch, which the batchers wait for."""

from __future__ import annotations

import pytest

from bzrk.ingest.pipeline import Admission

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_request_is_on_its_way_until_its_rows_arrive_or_it_ends() -> None:
    calls: list[int] = []
    admission = Admission(1024, on_arrived=lambda: calls.append(admission.arriving))
    async with admission.hold(10) as first:
        assert admission.arriving == 1
        async with admission.hold(10):
            assert admission.arriving == 2
            first.arrived()
            first.arrived()  # idempotent
            assert admission.arriving == 1 and calls == []
        # The second request ended (answered or failed) without arriving: no longer counted.
        assert admission.arriving == 0 and calls == [0]
    assert admission.arriving == 0 and calls == [0]
    assert admission.inflight_bytes == 0
