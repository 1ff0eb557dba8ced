"""What the alerting tests share: a local HTTP receiver, OTLP logs at chosen ages, waiting."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import httpx
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

T = TypeVar("T")


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A webhook receiver on loopback: records every POST; answers ``fail_first`` with 500."""

    fail_first: int = 0
    fail_status: int = 500
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                failing = outer.fail_first > 0
                if failing:
                    outer.fail_first -= 1
                status = outer.fail_status if failing else 200
                outer.received.append(
                    Received({k.lower(): v for k, v in self.headers.items()}, body, status)
                )
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def accepted(self, state: str | None = None) -> list[Received]:
        """The deliveries answered 2xx (optionally of one ``state``)."""
        return [
            r
            for r in self.received
            if r.status == 200 and (state is None or r.json.get("state") == state)
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for(
    what: str, probe: Callable[[], T | None], timeout_s: float = 60.0, every_s: float = 0.25
) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def send_logs(
    otlp_grpc: str,
    ingest_token: str,
    *,
    count: int,
    age_s: float,
    severity: str = "ERROR",
    service: str = "checkout",
) -> None:
    """``count`` log records of ``service`` timestamped ``age_s`` ago, through OTLP/gRPC."""
    exporter = OTLPLogExporter(
        endpoint=otlp_grpc.removeprefix("http://"),
        insecure=True,
        headers=(("authorization", f"Bearer {ingest_token}"),),
    )
    provider = LoggerProvider(resource=Resource.create({"service.name": service}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("alerts.test")
    stamp = int((time.time() - age_s) * 1e9)
    number = SeverityNumber.ERROR if severity == "ERROR" else SeverityNumber.INFO
    for i in range(count):
        logger.emit(
            timestamp=stamp + i * 1000,
            severity_text=severity,
            severity_number=number,
            body=f"payment {i} failed",
        )
    provider.shutdown()


def api(creds: dict[str, Any]) -> httpx.Client:
    return httpx.Client(
        base_url=creds["gateway"],
        headers={"Authorization": f"Bearer {creds['token']}"},
        timeout=60,
    )


def database_with_token(http: httpx.Client, name: str) -> str:
    """A new database with table ``default`` and an ingest token for it (the token text)."""
    made = http.post("/api/v1/admin/databases", json={"name": name})
    assert made.status_code in (200, 201), made.text
    table = http.post("/api/v1/admin/tables", json={"database": name, "name": "default"})
    assert table.status_code in (200, 201, 409), table.text
    token = http.post(
        "/api/v1/admin/ingest-tokens",
        json={"name": f"{name}-ing", "database": name, "table": "default"},
    )
    assert token.status_code in (200, 201), token.text
    return str(token.json()["token"])
