"""Running a browser flow (``tests/ui/*.mjs``) against a ``bzrk dev`` and reading its report.

Each flow is a Node script driving Debian's Chromium through playwright-core; it prints one JSON
line with what it measured. Without Chromium, Node or a built UI the calling test skips and says
which is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "src" / "bzrk" / "ui" / "web"
STATIC_INDEX = REPO / "src" / "bzrk" / "ui" / "static" / "index.html"
ARTIFACTS = REPO / "test-artifacts" / "ui"
CHROMIUM = os.environ.get("BZRK_CHROMIUM", "/usr/bin/chromium")
HERE = Path(__file__).parent


def skip_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set BZRK_CHROMIUM)"
    if shutil.which("node") is None:
        return "node is not installed (Node.js 20+ is needed to build and test the UI)"
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        return "UI dependencies are not installed: run `make ui`"
    if not STATIC_INDEX.is_file():
        return "the UI is not built: run `make ui`"
    return None


def run_flow(script: str, credentials: dict[str, Any], *, timeout_s: float = 600) -> dict[str, Any]:
    """Runs ``tests/ui/<script>`` and returns its report (skips when the browser is missing)."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    env = {
        **os.environ,
        "BZRK_GATEWAY": credentials["gateway"],
        "BZRK_USER": credentials["admin_user"],
        "BZRK_PASSWORD": credentials["admin_password"],
        "BZRK_TOKEN": credentials["token"],
        "BZRK_INGEST_TOKEN": credentials["ingest_token"],
        "BZRK_OTLP_HTTP": credentials["otlp_http"],
        "BZRK_ARTIFACTS": str(ARTIFACTS),
        "BZRK_CHROMIUM": CHROMIUM,
        "BZRK_UI_WEB": str(WEB),
    }
    done = subprocess.run(
        ["node", str(HERE / script)], env=env, capture_output=True, text=True, timeout=timeout_s
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report from {script}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"report-{Path(script).stem}.json").write_text(json.dumps(report, indent=2))
    assert report.get("ok"), report.get("error", report)
    assert done.returncode == 0
    return report


def screenshot_ok(name: str) -> bool:
    path = ARTIFACTS / f"{name}.png"
    return path.is_file() and path.stat().st_size > 1000


def run_ts(module: str, function: str, calls: list[list[Any]]) -> list[dict[str, Any]]:
    """Call ``function`` of the pure UI module ``src/<module>.ts`` under Node once per argument
    list (``run_ts.mjs``): ``{"ok": value}`` or ``{"error": message}`` each."""
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("run_ts.mjs")), module, function],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        timeout=120,
        env={"BZRK_UI_WEB": str(WEB), "PATH": "/usr/bin:/bin:/usr/local/bin"},
        check=True,
    )
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result
