"""One leader among scheduler candidates; due work claimed once; a dead leader replaced."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bzrk.alerts.scheduler import LEASE, Scheduler
from bzrk.alerts.service import AlertService

pytestmark = pytest.mark.anyio

QUERY = "default | summarize n = count()"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_lease_has_one_holder_until_it_expires_or_is_released(service: AlertService) -> None:
    store = service.store
    assert store.acquire_lease(LEASE, "a", 10, now=100.0)
    assert not store.acquire_lease(LEASE, "b", 10, now=105.0)
    assert store.acquire_lease(LEASE, "a", 10, now=105.0)  # renewal
    assert store.lease_holder(LEASE, 106.0) == "a"
    assert store.acquire_lease(LEASE, "b", 10, now=116.0)  # a stopped renewing
    assert not store.acquire_lease(LEASE, "a", 10, now=117.0)
    store.release_lease(LEASE, "b")
    assert store.acquire_lease(LEASE, "a", 10, now=118.0)


def test_a_due_alert_is_claimed_by_one_claimer(service: AlertService, owner: Any) -> None:
    alert = service.create_alert(owner, {"name": "a", "query": QUERY, "database": "default",
                                         "every": "10s", "condition": "n >= 1"})  # fmt: skip
    now = time.time() + 1
    first = service.store.claim_due_alerts(now, 10)
    assert [r["id"] for r in first] == [alert["id"]]
    assert service.store.claim_due_alerts(now, 10) == []  # already moved on by one period
    assert [r["id"] for r in service.store.claim_due_alerts(now + 10, 10)] == [alert["id"]]
    # Far behind (a long downtime): the next due time is one period from now, no burst.
    later = service.store.claim_due_alerts(now + 1000, 10)[0]
    assert later["next_due_at"] == pytest.approx(now + 1010)


async def test_two_candidates_evaluate_each_period_once(ctx: Any, owner: Any) -> None:
    one, two = AlertService(ctx), AlertService(ctx)
    alert = await asyncio.to_thread(
        one.create_alert, owner,
        {"name": "a", "query": QUERY, "database": "default", "every": "1s", "condition": "n >= 3"},
    )  # fmt: skip
    first = Scheduler(one, tick_s=0.05, lease_s=30)
    second = Scheduler(two, tick_s=0.05, lease_s=30)
    first.start()
    await asyncio.sleep(0.2)
    second.start()
    await asyncio.sleep(3.2)
    assert first.leader and not second.leader
    await first.stop()
    await asyncio.sleep(0.5)
    assert second.leader  # the lease was released: the other candidate took over
    await asyncio.sleep(1.5)
    await second.stop()
    history = await asyncio.to_thread(one.history, owner, alert["id"], 100)
    times = sorted(e["time"] for e in history)
    assert 4 <= len(history) <= 7, history
    assert len(set(times)) == len(times)
    assert history[-1]["status"] == "firing" and history[-1]["value"] == 5
    assert [e["status"] for e in history] == ["firing"] * len(history)
    await one.aclose()
    await two.aclose()
