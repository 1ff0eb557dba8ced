"""``bzrk alert …`` and ``bzrk workflow run`` as a user types them, against ``bzrk dev --demo``."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.cli.conftest import Run

pytestmark = pytest.mark.e2e


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def test_alert_commands_create_show_mute_history_delete(connected: Run) -> None:
    name = f"cli-{uuid.uuid4().hex[:6]}"
    created = ok(
        connected(
            "alert", "create", name,
            "--query", "default | where severity_text == 'ERROR' | summarize n = count()",
            "--condition", "n >= 1", "--every", "1s", "--since", "1d ago",
            "--label", "team=payments", "--severity", "critical",
        )
    )  # fmt: skip
    assert created.startswith(f"Created alert {name} (") and "n >= 1 every 1s" in created
    bad = connected("alert", "create", "x", "--query", "print 1", "--condition", "n >>= 1")
    assert bad.returncode == 1 and "InvalidCondition" not in bad.stdout
    assert "expected '<ident> <op> <number>'" in bad.stderr and "HTTP 400" in bad.stderr
    assert name in ok(connected("alert", "list"))

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        shown = json.loads(ok(connected("alert", "show", name, "--json")))
        if shown["state"] == "firing":
            break
        time.sleep(0.5)
    assert shown["state"] == "firing" and shown["labels"] == {"team": "payments"}
    text = ok(connected("alert", "show", name))
    assert "state        firing since" in text and "severity     critical" in text

    muted = ok(connected("alert", "mute", name, "--for", "1h"))
    assert muted.startswith(f"Muted {name} until ")
    assert json.loads(ok(connected("alert", "show", name, "--json")))["muted"] is True
    assert connected("alert", "mute", name).returncode == 2
    assert ok(connected("alert", "unmute", name)) == f"Unmuted {name}\n"

    history = ok(connected("alert", "history", name, "-n", "5")).splitlines()
    assert history and all(" run=" in line for line in history)
    assert any(" firing " in line for line in history)
    entries = json.loads(ok(connected("alert", "history", name, "--json")))["evaluations"]
    assert entries[-1]["status"] == "firing" and entries[-1]["value"] >= 1
    ok(connected("alert", "delete", name))
    gone = connected("alert", "show", name)
    assert gone.returncode == 1 and "not found" in gone.stderr


def test_workflow_run_prints_each_step(connected: Run, server: dict[str, Any]) -> None:
    name = f"cli-wf-{uuid.uuid4().hex[:6]}"
    made = httpx.post(
        server["gateway"] + "/api/v1/workflows",
        headers={"Authorization": f"Bearer {server['token']}"},
        json={
            "name": name,
            "database": "default",
            "since": "1d ago",
            "steps": [
                {
                    "name": "count",
                    "query": "default | summarize n = count()",
                    "continue_when": "n >= 1",
                },
                {"name": "never", "query": "print x = {{count.n}}", "continue_when": "x < 0"},
                {"name": "after", "query": "print 1"},
            ],
        },
        timeout=30,
    )
    assert made.status_code == 201, made.text
    assert name in ok(connected("workflow", "list"))
    ran = connected("workflow", "run", name)
    assert ran.returncode == 3, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].endswith(": stopped")
    assert lines[1].split()[:2] == ["count", "passed"] and "run=" in lines[1]
    assert lines[2].split()[:2] == ["never", "stopped"]
    assert lines[3].split() == ["after", "skipped"]
    as_json = json.loads(connected("workflow", "run", name, "--json").stdout)
    assert as_json["steps"][1]["first_row"]["x"] == as_json["steps"][0]["first_row"]["n"]
