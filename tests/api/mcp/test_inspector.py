"""MCP Inspector 2.12 CLI (modern era, bearer header) lists and calls the tools.

Slow and needs Node 22 plus the Inspector in the cache ``make mcp-conformance`` fills
(``~/.cache/bzrk-mcp-conformance`` or ``$BZRK_MCP_CACHE``); skipped when absent.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.api.mcp.harness import (
    LoopbackServer,
    ScriptedExecutor,
    count_script,
    make_context,
    mcp_app,
)

pytestmark = pytest.mark.slow

CACHE = Path(
    os.environ.get("BZRK_MCP_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bzrk-mcp-conformance"
)
BIN = CACHE / "node_modules" / ".bin"


def inspector(url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "HOME": str(home)}
    command = [str(BIN / "mcp-inspector"), "--cli", url, "--transport", "http"]
    command += ["--protocol-era", "modern", "--header", "Authorization: Bearer test-token"]
    command += ["--format", "json", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_inspector_lists_and_calls_tools(tmp_path: Path) -> None:
    if not (BIN / "mcp-inspector").exists():
        pytest.skip(f"MCP Inspector not installed in {CACHE} (run make mcp-conformance once)")
    ctx = make_context(tmp_path, ScriptedExecutor(count_script([3, 5], status="stopped_early")))
    with LoopbackServer(mcp_app(ctx)) as server:
        listed = inspector(server.url, tmp_path, "--method", "tools/list")
        assert listed.returncode == 0, listed.stderr
        names = [t["name"] for t in json.loads(listed.stdout)["result"]["tools"]]
        assert names == [
            "list_databases",
            "list_tables",
            "discover_fields",
            "query",
            "get_run",
            "get_docs",
            "list_alerts",
            "get_alert",
            "create_alert",
            "update_alert",
            "delete_alert",
            "list_workflows",
            "run_workflow",
            "list_connections",
            "list_dashboards",
            "get_dashboard",
        ]
        called = inspector(
            server.url,
            tmp_path,
            *("--method", "tools/call", "--tool-name", "query"),
            *("--tool-arg", "query=default | summarize n=count() by service"),
            *("--tool-arg", "database=default", "--tool-arg", "stop_when=n >= 5"),
        )
        assert called.returncode == 0, called.stderr
        structured = json.loads(called.stdout)["result"]["structuredContent"]
        assert structured["status"] == "stopped_early"
        assert structured["rows"] == [["checkout", 5], ["cart", 2]]
        docs = inspector(
            server.url,
            tmp_path,
            *("--method", "tools/call", "--tool-name", "get_docs", "--tool-arg", "topic=kql"),
        )
        assert docs.returncode == 0, docs.stderr
        assert "time-bounded" in json.loads(docs.stdout)["result"]["content"][0]["text"]
    ctx.meta.close()
