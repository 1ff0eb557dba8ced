"""``self_telemetry``: a real ``bzrk dev`` exports its own spans and logs over OTLP into its
``default`` table, where KQL finds them; off by default."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bzrk.testing import DevServer

pytestmark = pytest.mark.e2e

OWN = '| where timestamp > ago(1h) | where tostring(resource["service.namespace"]) == "berserk"'


def query(creds: dict[str, Any], text: str) -> list[list[Any]]:
    answer = httpx.post(
        creds["gateway"] + "/query",
        json={"query": text, "database": "default"},
        headers={"authorization": f"Bearer {creds['token']}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    rows: list[list[Any]] = answer.json()["Tables"][0]["rows"]
    return rows


def test_bzrk_exports_its_own_spans_and_logs_into_default(tmp_path: Path) -> None:
    server = DevServer(
        tmp_path / "data",
        extra_env={
            "BZRK_SELF_TELEMETRY": "true",
            # The SDK's batch delays (5 s, 1 s by default), shortened for the test.
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_BLRP_SCHEDULE_DELAY": "200",
        },
    )
    creds = server.start()
    try:
        query(creds, "print marker = 'self-telemetry test'")
        spans: list[list[Any]] = []
        logs: list[list[Any]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (spans and logs):
            time.sleep(0.5)
            spans = query(
                creds,
                f"default {OWN} | where span_name == 'bzrk.query'"
                " | project surface = tostring(attributes['bzrk.surface']),"
                " status = tostring(attributes['bzrk.status']),"
                " service = tostring(resource['service.name'])",
            )
            logs = query(creds, f"default {OWN} | where body has 'bzrk ready' | project body")
        assert ["http", "complete", "bzrk"] in spans, spans
        assert logs, "the 'bzrk ready' log line did not arrive"
        requests = query(
            creds, f"default {OWN} | where span_name startswith 'HTTP ' | distinct span_name"
        )
        assert ["HTTP POST /query"] in requests, requests
    finally:
        assert server.stop() == 0


def test_nothing_is_exported_by_default(dev_server: DevServer) -> None:
    assert query(dev_server.credentials, f"default {OWN} | count") == [[0]]
