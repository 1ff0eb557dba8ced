"""Helpers for tests: a real ``bzrk dev`` in a subprocess, and in-process ASGI clients.

``DevServer`` starts ``python -m bzrk dev`` with every port 0 in its own data dir (chDB allows
one store per process, so a server under test always lives in its own process), waits for
``dev-credentials.json`` and ``/health/ready``, and stops it with SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bzrk.types import ASGIApp

SRC_DIR = Path(__file__).resolve().parents[1]


def client(app: ASGIApp, base_url: str = "http://testserver") -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` talking to ``app`` in-process (no socket)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)


class DevServer:
    def __init__(
        self, data_dir: Path, *, demo: bool = False, extra_env: dict[str, str] | None = None
    ) -> None:
        self.data_dir = data_dir
        self.demo = demo
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.credentials: dict[str, Any] = {}

    def start(self, timeout_s: float = 300.0) -> dict[str, Any]:
        creds_path = self.data_dir / "dev-credentials.json"
        # A previous run's file may exist: wait until this run has rewritten it.
        started_at = time.time() - 1
        env = {
            **os.environ,
            "PYTHONPATH": str(SRC_DIR),
            "BZRK_LOG_FORMAT": "json",
            **self.extra_env,
        }
        cmd = [sys.executable, "-m", "bzrk", "dev", "--data-dir", str(self.data_dir)]
        for flag in ("gateway", "query", "otlp-grpc", "otlp-http", "loki", "ui"):
            cmd += [f"--{flag}-port", "0"]
        if self.demo:
            cmd.append("--demo")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = (self.data_dir / "server.log").open("ab")
        self.process = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"bzrk dev exited with {self.process.returncode}: {self.log_tail()}"
                )
            if creds_path.exists() and creds_path.stat().st_mtime >= started_at:
                try:
                    self.credentials = json.loads(creds_path.read_text())
                except json.JSONDecodeError:
                    time.sleep(0.05)
                    continue
                try:
                    if (
                        httpx.get(
                            self.credentials["gateway"] + "/health/ready", timeout=2
                        ).status_code
                        == 200
                    ):
                        return self.credentials
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"bzrk dev did not become ready in {timeout_s} s: {self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        path = self.data_dir / "server.log"
        return (
            "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
            if path.exists()
            else ""
        )

    def stop(self, timeout_s: float = 15.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode

    def __enter__(self) -> DevServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
