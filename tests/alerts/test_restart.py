"""A restart in the middle of a firing loses no notification and sends none twice."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from bzrk.testing import DevServer
from tests.alerts.helpers import Receiver, api, database_with_token, send_logs, wait_for

pytestmark = [pytest.mark.e2e]

QUERY = 'default | where severity_text == "ERROR" | summarize n = count()'


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def test_restart_while_a_firing_notification_is_undelivered(tmp_path, receiver: Receiver) -> None:  # type: ignore[no-untyped-def]
    """The receiver refuses the firing notification until bzrk has been restarted: after the
    restart that same notification (same delivery id) arrives once, the alert is still firing
    and is not announced again, and its resolution arrives once."""
    receiver.fail_first = 10_000
    server = DevServer(tmp_path / "data", extra_env={"BZRK_ALERTS_TICK_MS": "200"})
    creds = server.start()
    try:
        with api(creds) as http:
            token = database_with_token(http, "restart")
            hook = http.post(
                "/api/v1/connections",
                json={"name": "hook", "type": "webhook", "url": receiver.url, "secret": "x"},
            ).json()["connection"]
            alert = http.post(
                "/api/v1/alerts",
                json={"name": "restart errors", "query": QUERY, "database": "restart",
                      "since": "5m ago", "every": "2s", "condition": "n >= 3",
                      "connections": [hook["id"]]},
            ).json()["alert"]  # fmt: skip
        send_logs(creds["otlp_grpc"], token, count=5, age_s=245)
        wait_for("a refused firing attempt", lambda: receiver.received, 30)
        refused_id = receiver.received[0].headers["x-bzrk-delivery"]
        server.stop()
        assert not receiver.accepted()
        receiver.fail_first = 0
        creds = server.start()
        with api(creds) as http:
            delivered = wait_for(
                "the firing after the restart", lambda: receiver.accepted("firing"), 30
            )
            assert delivered[0].headers["x-bzrk-delivery"] == refused_id
            assert http.get(f"/api/v1/alerts/{alert['id']}").json()["alert"]["state"] == "firing"
            wait_for("the resolution", lambda: receiver.accepted("resolved"), 90)
            time.sleep(3)
            assert len(receiver.accepted("firing")) == 1
            assert len(receiver.accepted("resolved")) == 1
            assert {
                r.headers["x-bzrk-delivery"]
                for r in receiver.received
                if r.json["state"] == "firing"
            } == {refused_id}
            history = http.get(f"/api/v1/alerts/{alert['id']}/history?limit=500").json()[
                "evaluations"
            ]
            queued = [e for e in history if e["notification"] != "none"]
            assert [e["status"] for e in queued] == ["resolved", "firing"]
            first_firing = queued[1]["notifications"][0]
            assert first_firing["status"] == "delivered" and first_firing["attempts"] >= 2
    finally:
        server.stop()
