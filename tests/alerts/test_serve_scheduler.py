"""The scale-out layout: ``bzrk serve scheduler`` alone evaluates alerts stored by another
process's API (the query service's own candidate turned off), sharing the metadata store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from bzrk.testing import SRC_DIR, DevServer
from tests.alerts.helpers import Receiver, api, wait_for

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def test_a_scheduler_process_alone_fires_alerts(tmp_path, receiver: Receiver) -> None:  # type: ignore[no-untyped-def]
    dev_dir = tmp_path / "dev"
    server = DevServer(dev_dir, extra_env={"BZRK_ALERTS_SCHEDULER": "false"})
    creds = server.start()
    scheduler = None
    try:
        with api(creds) as http:
            hook = http.post(
                "/api/v1/connections", json={"name": "hook", "type": "webhook", "url": receiver.url}
            ).json()["connection"]
            alert = http.post(
                "/api/v1/alerts",
                json={"name": "constant", "query": "print n = 5", "database": "default",
                      "every": "1s", "condition": "n >= 3", "connections": [hook["id"]]},
            ).json()["alert"]  # fmt: skip
            # The query service runs no candidate: nothing evaluates the alert.
            assert http.get(f"/api/v1/alerts/{alert['id']}/history").json()["evaluations"] == []
            env = {
                **os.environ,
                "PYTHONPATH": str(SRC_DIR),
                "BZRK_META_URL": f"sqlite:///{dev_dir / 'meta.sqlite3'}",
                "BZRK_ALERTS_TICK_MS": "200",
            }
            log = (tmp_path / "scheduler.log").open("wb")
            scheduler = subprocess.Popen(
                [sys.executable, "-m", "bzrk", "serve", "scheduler", "--data-dir", str(tmp_path / "sched")],
                env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            firing = wait_for(
                "the scheduler's notification", lambda: receiver.accepted("firing"), 60
            )
            assert firing[0].json["alert"] == "constant" and firing[0].json["value"] == 5
            history = http.get(f"/api/v1/alerts/{alert['id']}/history").json()["evaluations"]
            assert history and history[-1]["status"] == "firing" and history[-1]["run_id"]
            scheduler.send_signal(signal.SIGTERM)
            assert scheduler.wait(15) == 0
    finally:
        if scheduler is not None and scheduler.poll() is None:
            scheduler.kill()
            scheduler.wait()
        server.stop()
