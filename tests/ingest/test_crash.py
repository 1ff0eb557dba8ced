"""Crash safety: ``kill -9`` during sustained ingest loses no acknowledged record.

Several clients send OTLP/HTTP log batches with unique ids; an id counts as acknowledged only
when its request got HTTP 200. The server is killed with SIGKILL at a random moment and
restarted on the same data dir; clients then retry their unacknowledged request (as an OTel
exporter or collector would), which is where duplicates come from (delivery is at-least-once).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from bzrk.testing import SRC_DIR
from tests.ingest.conftest import read_store

CLIENTS = 4
RECORDS_PER_REQUEST = 250


def _request(client: int, number: int) -> tuple[bytes, list[str]]:
    request = ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    attr = rl.resource.attributes.add(key="service.name")
    attr.value.string_value = f"crash-client-{client}"
    records = rl.scope_logs.add().log_records
    ids, now = [], time.time_ns()
    for i in range(RECORDS_PER_REQUEST):
        record_id = f"{client}-{number}-{i}"
        rec = records.add(time_unix_nano=now)
        rec.body.string_value = f"crash test record {record_id}"
        kv = rec.attributes.add(key="rid")
        kv.value.string_value = record_id
        ids.append(record_id)
    return request.SerializeToString(), ids


def _start(data_dir: Path) -> tuple[subprocess.Popen[bytes], dict]:
    """``bzrk dev`` on the data dir, keeping its credentials across restarts."""
    creds_path = data_dir / "dev-credentials.json"
    previous = creds_path.stat().st_mtime_ns if creds_path.exists() else None
    env = {**os.environ, "PYTHONPATH": str(SRC_DIR), "BZRK_LOG_FORMAT": "json"}
    cmd = [sys.executable, "-m", "bzrk", "dev", "--data-dir", str(data_dir)]
    for flag in ("gateway", "query", "otlp-grpc", "otlp-http", "loki", "ui"):
        cmd += [f"--{flag}-port", "0"]
    log = (data_dir / "server.log").open("ab")
    process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, (data_dir / "server.log").read_text()[-3000:]
        if creds_path.exists() and creds_path.stat().st_mtime_ns != previous:
            try:
                creds = json.loads(creds_path.read_text())
                if httpx.get(creds["gateway"] + "/health/ready", timeout=2).status_code == 200:
                    return process, creds
            except (json.JSONDecodeError, httpx.HTTPError):
                pass
        time.sleep(0.1)
    process.kill()
    raise AssertionError("server did not become ready")


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_record(tmp_path: Path) -> None:
    data_dir = tmp_path / "dev"
    data_dir.mkdir()
    process, creds = _start(data_dir)
    acked: list[set[str]] = [set() for _ in range(CLIENTS)]
    pending: list[tuple[bytes, list[str]] | None] = [None] * CLIENTS
    stop = threading.Event()

    def client(index: int) -> None:
        headers = {
            "Authorization": f"Bearer {creds['ingest_token']}",
            "Content-Type": "application/x-protobuf",
        }
        number = 0
        with httpx.Client(timeout=30) as http:
            while not stop.is_set():
                body, ids = pending[index] or _request(index, number)
                pending[index] = (body, ids)
                try:
                    response = http.post(
                        f"{creds['otlp_http']}/v1/logs", content=body, headers=headers
                    )
                except httpx.HTTPError:
                    time.sleep(0.05)
                    continue
                if response.status_code == 200:
                    acked[index].update(ids)
                    pending[index] = None
                    number += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    time.sleep(random.uniform(3.0, 8.0))
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    stop.set()
    for thread in threads:
        thread.join()
    acknowledged = set().union(*acked)
    assert len(acknowledged) > 0

    # Restart on the same data, retry what was in flight, then stop cleanly.
    process, creds = _start(data_dir)
    retried = 0
    with httpx.Client(timeout=30) as http:
        for item in pending:
            if item is None:
                continue
            response = http.post(
                f"{creds['otlp_http']}/v1/logs",
                content=item[0],
                headers={
                    "Authorization": f"Bearer {creds['ingest_token']}",
                    "Content-Type": "application/x-protobuf",
                },
            )
            assert response.status_code == 200
            retried += len(item[1])
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0

    rows = read_store(
        data_dir,
        "SELECT attributes.rid.:String AS rid, count() AS n FROM `bzrk_default`.`default`"
        " GROUP BY rid",
    )
    stored = {r["rid"]: int(r["n"]) for r in rows}
    missing = acknowledged - set(stored)
    duplicates = sum(n - 1 for n in stored.values())
    print(
        f"\nacknowledged before kill: {len(acknowledged)}, retried after restart: {retried}, "
        f"stored distinct: {len(stored)}, missing: {len(missing)}, duplicates: {duplicates}"
    )
    assert not missing
    assert set(stored) == acknowledged | {rid for item in pending if item for rid in item[1]}
