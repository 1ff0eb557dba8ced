"""``bzrk dev --demo`` end to end: the demo goes through the real OTLP/HTTP ingest and is acknowledged."""

from __future__ import annotations

import json

import httpx
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from bzrk.demo.loader import MARKER

pytestmark = pytest.mark.e2e


def test_dev_demo_loads_through_real_ingest(dev_server) -> None:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    probe = httpx.post(
        creds["otlp_http"] + "/v1/logs",
        content=ExportLogsServiceRequest().SerializeToString(),
        headers={
            "Authorization": f"Bearer {creds['ingest_token']}",
            "Content-Type": "application/x-protobuf",
        },
        timeout=10,
    )
    if probe.status_code == 404:
        pytest.skip("the OTLP/HTTP ingest receiver is not merged yet (POST /v1/logs answers 404)")
    assert probe.status_code == 200, probe.text
    marker = dev_server.data_dir / MARKER
    assert marker.exists(), dev_server.log_tail()
    loaded = json.loads(marker.read_text())
    assert loaded["records"]["logs"] > 10_000
    assert loaded["records"]["traces"] > 10_000
    assert loaded["records"]["metrics"] > 10_000
    assert "demo data loaded" in dev_server.log_tail(400)
