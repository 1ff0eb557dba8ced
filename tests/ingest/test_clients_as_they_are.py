"""Clients as they are, against a real ``bzrk dev``: a Loki logging library with HTTP Basic auth,
and an HTTP client that sends fewer body bytes than it declares."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from urllib.parse import urlsplit

import httpx
import pytest

from tests.ingest.test_end_to_end import _kql


@pytest.mark.parametrize(("version", "path"), [("1", "/loki/api/v1/push"), ("0", "/api/prom/push")])
def test_python_logging_loki_with_basic_auth_is_stored_with_otel_severity(
    dev_server, version: str, path: str
) -> None:  # type: ignore[no-untyped-def]
    import logging_loki

    creds = dev_server.credentials
    run = uuid.uuid4().hex[:8]
    handler = logging_loki.LokiHandler(
        url=creds["loki"] + path,
        tags={"service_name": f"loki-lib-{run}"},
        # The tenant as user name, the ingest token as password: how Loki clients authenticate.
        auth=("tenant-1", creds["ingest_token"]),
        version=version,
    )
    logger = logging.getLogger(f"loki-test-{run}")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.error("payment %s failed", run)
        logger.warning("disk %s almost full", run)
        logger.info("started %s", run)
        logger.critical("out of memory %s", run)
    finally:
        logger.removeHandler(handler)
        handler.close()
    rows = []
    for _ in range(50):  # the push is acknowledged after the write; the read is immediate
        rows = _kql(
            creds,
            f'default | where tostring(resource.service.name) == "loki-lib-{run}" '
            "| project body, severity_text, severity_number | order by severity_number asc",
        )
        if len(rows) == 4:
            break
        time.sleep(0.1)
    assert [(r["severity_text"], r["severity_number"]) for r in rows] == [
        ("INFO", 9),
        ("WARN", 13),
        ("ERROR", 17),
        ("FATAL", 21),
    ], rows
    errors = _kql(
        creds,
        f'default | where severity_text == "ERROR" and body has "{run}" | project body',
    )
    assert errors == [{"body": f"payment {run} failed"}]


def test_loki_basic_auth_with_a_wrong_password_is_refused(dev_server) -> None:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    body = {"streams": [{"stream": {"job": "x"}, "values": [[str(time.time_ns()), "no"]]}]}
    for auth in (("tenant", "ing_wrong"), ("tenant", "")):
        response = httpx.post(creds["loki"] + "/loki/api/v1/push", json=body, auth=auth)
        assert response.status_code == 401, response.text
        assert "ingest token" in response.text


def test_a_body_shorter_than_its_content_length_gets_400(dev_server) -> None:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    url = urlsplit(creds["otlp_http"])
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock:
        sock.sendall(
            b"POST /v1/logs HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + creds["ingest_token"].encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            b'{"resourceLogs": ['
        )
        # The client gives up on the rest. Whoever sees it first answers: Hypercorn's HTTP/1.1
        # layer (a bare 400) or the receiver (a 400 naming the missing bytes; the in-process
        # case of tests/ingest/test_malformed.py pins that message). Never a 500.
        time.sleep(0.2)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer[:300]
    assert not body or b"ended after 18 bytes of the 1000" in body, answer[:300]
