"""Folding a run into a verdict: what a complete, stopped or partial answer proves."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.alerts.evaluate import run_condition
from bzrk.engine.events import Error
from bzrk.engine.request import QueryRequest
from bzrk.engine.stop import parse_stop_when
from tests.api.mcp.harness import ScriptedExecutor, count_script

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def verdict(script: list[Any], condition: str) -> Any:
    executor = ScriptedExecutor(script)
    out = await run_condition(
        executor,
        QueryRequest(query="q", database="default", stop_when=condition),
        parse_stop_when(condition),
    )
    assert executor.requests[0].stop_when == condition  # the engine may stop the scan early
    return out


async def test_the_last_complete_snapshot_decides() -> None:
    out = await verdict(count_script([2, 4, 9]), "n >= 5")
    assert (out.holds, out.value, out.run_id, out.row_count) == (True, 9, "run-1", 2)
    assert out.first_row_json() == {"service": "checkout", "n": 9}
    out = await verdict(count_script([2, 4]), "n >= 5")
    assert (out.holds, out.value) == (False, 4)
    out = await verdict(count_script([3]), "rows > 1")
    assert (out.holds, out.value) == (True, 2)


async def test_a_stopped_early_run_proves_an_absorbing_condition() -> None:
    out = await verdict(count_script([1, 6], status="stopped_early"), "n >= 5")
    assert out.holds is True and out.run_status == "stopped_early"


async def test_a_partial_answer_decides_only_what_it_proves() -> None:
    held = await verdict(count_script([7], status="soft_budget"), "n >= 5")
    assert held.holds is True  # a lower bound already over the threshold
    unsure = await verdict(count_script([2], status="soft_budget"), "n >= 5")
    assert unsure.holds is None and unsure.error["code"] == "SoftBudget"
    below = await verdict(count_script([2], status="soft_budget"), "n < 5")
    assert below.holds is None  # fewer so far says nothing about the whole window


async def test_a_condition_on_a_missing_column_is_a_coded_error() -> None:
    out = await verdict(count_script([2]), "errors >= 1")
    assert out.holds is None and out.error["code"] == "InvalidCondition"
    assert "columns: service, n" in out.error["message"]


async def test_a_failed_run_carries_its_code_and_run_id() -> None:
    script = [Error(code="UnknownName", message="unknown name 'x'", run_id="r-9")]
    out = await verdict(script, "n >= 1")
    assert out.holds is None and out.error == {"code": "UnknownName", "message": "unknown name 'x'"}
    assert out.run_id == "r-9" and out.run_status == "error"
