"""The dev-server contract of DESIGN.md §6, checked against a real ``bzrk dev`` process."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bzrk.testing import SRC_DIR, DevServer

pytestmark = pytest.mark.e2e

CONTRACT_KEYS = {
    "gateway",
    "query",
    "otlp_grpc",
    "otlp_http",
    "loki",
    "ui",
    "token",
    "ingest_token",
    "admin_user",
    "admin_password",
}


def test_dev_server_contract_and_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = DevServer(data_dir)
    creds = server.start()
    try:
        creds_file = data_dir / "dev-credentials.json"
        assert set(creds) == CONTRACT_KEYS
        assert stat.S_IMODE(creds_file.stat().st_mode) == 0o600
        assert creds["token"].startswith("bzrk_sp_")
        assert creds["ingest_token"].startswith("ing_")
        for key in ("gateway", "query", "otlp_http", "loki", "ui"):
            assert creds[key].startswith("http://127.0.0.1:")
            live = httpx.get(creds[key] + "/health/live", timeout=5)
            assert live.status_code == 200, key
            assert httpx.get(creds[key] + "/metrics", timeout=5).status_code == 200
        assert httpx.get(creds["gateway"] + "/health/ready", timeout=5).status_code == 200
        # The query port refuses anything without a gateway-signed token.
        assert (
            httpx.post(
                creds["query"] + "/v2/rest/query", json={"db": "default", "csl": "print 1"}
            ).status_code
            == 401
        )
    finally:
        started = time.monotonic()
        code = server.stop()
        elapsed = time.monotonic() - started
    assert code == 0
    assert elapsed < 10

    again = DevServer(data_dir)
    creds2 = again.start()
    try:
        for key in ("token", "ingest_token", "admin_user", "admin_password"):
            assert creds2[key] == creds[key]
    finally:
        assert again.stop() == 0


def _bzrk(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC_DIR)}
    return subprocess.run(
        [sys.executable, "-m", "bzrk", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _free_ports(n: int) -> list[str]:
    args: list[str] = []
    for flag in ("query", "otlp-grpc", "otlp-http", "loki", "ui")[:n]:
        args += [f"--{flag}-port", "0"]
    return args


def test_unknown_config_key_fails_fast(tmp_path: Path) -> None:
    config = tmp_path / "bzrk.toml"
    config.write_text("gatewayport = 1\n")
    result = _bzrk("dev", "--data-dir", str(tmp_path / "d"), "--config", str(config))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"bzrk: unknown setting 'gatewayport' in {config}"
    ]


def test_port_in_use_fails_fast(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = _bzrk(
            "dev", "--data-dir", str(tmp_path / "d"), "--gateway-port", str(port), *_free_ports(5)
        )
    assert result.returncode == 2
    assert result.stderr.strip() == f"bzrk: port {port} for gateway is already in use on 127.0.0.1"


def test_unwritable_data_dir_fails_fast(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = _bzrk(
        "dev", "--data-dir", str(blocker / "sub"), "--gateway-port", "0", *_free_ports(5)
    )
    assert result.returncode == 2
    line = result.stderr.strip()
    assert line.startswith(f"bzrk: data dir {blocker / 'sub'} is not writable")
    assert "\n" not in line


def test_bad_flag_value_is_a_usage_error(tmp_path: Path) -> None:
    result = _bzrk("dev", "--gateway-port", "99999")
    assert result.returncode == 2
    assert "gateway-port" in result.stderr


def test_help_documents_every_port_and_flag() -> None:
    result = _bzrk("dev", "--help")
    assert result.returncode == 0
    for flag in (
        "--data-dir",
        "--demo",
        "--host",
        "--gateway-port",
        "--query-port",
        "--otlp-grpc-port",
        "--otlp-http-port",
        "--loki-port",
        "--ui-port",
        "--config",
        "--help-settings",
    ):
        assert flag in result.stdout
    for port in ("9500", "9510", "4317", "4318", "3100", "9570"):
        assert port in result.stdout


def test_ready_only_once_credentials_are_written_and_the_demo_is_loaded(tmp_path: Path) -> None:
    """DESIGN.md §6: ``/health/ready`` answers 200 only when the system is ready, which for
    ``bzrk dev --demo`` includes the credentials file and the demo data (a tool that waits for
    ready and then reads the file or queries the demo must not race the start)."""
    data_dir = tmp_path / "data"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(SRC_DIR), "BZRK_DEMO_HOURS": "1"}
    cmd = [sys.executable, "-m", "bzrk", "dev", "--demo", "--data-dir", str(data_dir)]
    cmd += ["--gateway-port", str(port), *_free_ports(5)]
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    ready_url = f"http://127.0.0.1:{port}/health/ready"
    answers: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            try:
                answers.append(httpx.get(ready_url, timeout=2).status_code)
            except httpx.HTTPError:
                answers.append(0)
            if answers[-1] == 200:
                break
            time.sleep(0.02)
        assert answers and answers[-1] == 200, (tmp_path / "server.log").read_text()[-2000:]
        # At the first 200: the file is there and the demo data answers.
        creds = json.loads((data_dir / "dev-credentials.json").read_text())
        response = httpx.post(
            creds["gateway"] + "/v1/rest/query",
            json={"db": "default", "csl": "default | where timestamp > ago(2d) | count"},
            headers={"Authorization": f"Bearer {creds['token']}"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        assert response.json()["Tables"][0]["Rows"][0][0] > 0
        assert 503 in answers  # the gateway served, and said not ready, while the demo loaded
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0
        log.close()
