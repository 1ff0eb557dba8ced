"""A query that is expensive to plan does not stall the process: on a real ``bzrk dev``,
``/health/ready`` keeps answering while a 300-step ``extend`` chain or a 22-level doubling
``let`` chain is planned, and the query ends (an answer or a coded error) within 20 s.

These are availability bounds (planning runs in a planning thread, off the event loop, under
a deadline), not speed goals: the bounds are loose on purpose.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.e2e

# The shape of the report (issue 19): 250 `| extend x = x + 1` were 4.8 KB and stalled 10 s.
EXTEND_CHAIN = "print x = 1 | " + " | ".join("extend x = x + 1" for _ in range(300))
LET_CHAIN = (
    "let a0 = 1; " + " ".join(f"let a{i + 1} = a{i} + a{i};" for i in range(22)) + " print a22"
)


@pytest.mark.parametrize("query", [EXTEND_CHAIN, LET_CHAIN], ids=["extend-300", "let-22"])
def test_health_answers_while_a_heavy_query_is_planned(dev_server, query: str) -> None:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    outcome: dict[str, Any] = {}

    def send() -> None:
        started = time.monotonic()
        outcome["response"] = httpx.post(
            creds["gateway"] + "/query",
            json={"query": query, "database": "default"},
            headers={"Authorization": f"Bearer {creds['token']}"},
            timeout=60,
        )
        outcome["seconds"] = time.monotonic() - started

    sender = threading.Thread(target=send)
    sender.start()
    latencies = []
    while sender.is_alive() or not latencies:
        started = time.monotonic()
        assert httpx.get(creds["gateway"] + "/health/ready", timeout=10).status_code == 200
        latencies.append(time.monotonic() - started)
        time.sleep(0.05)
    sender.join()
    response = outcome["response"]
    assert outcome["seconds"] < 20
    # The stall this guards against was 10-30 s of no answer at all. Health checks answer in
    # under a second; one check on a machine shared with other heavy work may wait longer for
    # the CPU (1.05 s seen at load average 25), so the median takes the 1 s bound and the
    # slowest check a looser one.
    assert sorted(latencies)[len(latencies) // 2] < 1.0, latencies
    assert max(latencies) < 3.0, latencies
    # An answer, or a coded error of ours: never an internal error.
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert response.json()["code"] == "QueryTooComplex"
    else:
        assert response.json()["Tables"][0]["rows"][0][-1] in (301, 2**22)
