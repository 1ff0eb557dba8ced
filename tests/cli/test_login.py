"""``bzrk login`` (device flow approved through the gateway's page with the admin's browser
session), stored tokens, silent refresh, ``status`` and ``logout``."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bzrk.cli import login as login_module
from bzrk.cli.gateway import CLIENT_ID, Gateway
from bzrk.cli.profiles import Connection
from tests.cli.conftest import CliHome, Run, bzrk_command

pytestmark = pytest.mark.e2e


def approve_in_browser(server: dict[str, Any], user_code: str, decision: str = "approve") -> str:
    """What a user does: sign in, open the verification page, submit the code."""
    with httpx.Client(base_url=server["gateway"], follow_redirects=True) as browser:
        signed_in = browser.post(
            "/auth/login",
            json={"username": server["admin_user"], "password": server["admin_password"]},
        )
        assert signed_in.status_code == 200, signed_in.text
        page = browser.get("/device", params={"user_code": user_code})
        assert page.status_code == 200 and user_code in page.text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf, page.text
        answer = browser.post(
            "/device",
            data={"csrf_token": csrf.group(1), "user_code": user_code, "decision": decision},
        )
        assert answer.status_code == 200, answer.text
        return answer.text


def device_login(cli_home: CliHome, server: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    process = subprocess.Popen(
        bzrk_command("login", "--no-browser"),
        env=cli_home.env(),
        cwd=cli_home.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    user_code = None
    while user_code is None:
        line = process.stderr.readline()
        assert line, f"bzrk login ended early: {''.join(lines)}"
        lines.append(line)
        if match := re.fullmatch(r"    ([B-DF-HJ-NP-TV-Z]{4}-[B-DF-HJ-NP-TV-Z]{4})\n", line):
            user_code = match.group(1)
    assert lines[0].startswith(f"To log in, open {server['gateway']}/device")
    assert "Approved" in approve_in_browser(server, user_code)
    stdout, rest = process.communicate(timeout=120)
    return subprocess.CompletedProcess(
        process.args, process.returncode, stdout, "".join(lines) + rest
    )


def credentials_file(cli_home: CliHome) -> Path:
    return cli_home.state / "bzrk" / "credentials" / "dev.json"


def test_device_login_refresh_status_logout(
    bzrk: Run, cli_home: CliHome, server: dict[str, Any]
) -> None:
    assert bzrk("profile", "add", "dev", "--endpoint", server["gateway"]).returncode == 0
    before = bzrk("search", "print 1")
    assert before.returncode == 1 and "not logged in: run `bzrk login`" in before.stderr
    # `status` says so once, and does not go on to a query check that can only fail the same way.
    unknown = bzrk("status")
    assert unknown.returncode == 1
    assert (unknown.stdout + unknown.stderr).count("not logged in") == 1
    assert "Query:    not checked (no accepted credential)" in unknown.stdout

    result = device_login(cli_home, server)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"Logged in to {server['gateway']} as admin (admin)"
    path = credentials_file(cli_home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    stored = json.loads(path.read_text())
    assert stored["access_token"].startswith("bzrk_at_")
    assert stored["refresh_token"].startswith("bzrk_rt_")

    status = bzrk("status")
    assert status.returncode == 0, status.stderr
    assert "Identity: admin (admin)" in status.stdout
    assert re.search(r"^Query:    reachable, version \S+", status.stdout, re.M)
    searched = bzrk("search", "print answer=42")
    assert searched.returncode == 0 and searched.stdout.splitlines()[-1] == "42"

    # An access token about to expire is refreshed silently (and the refresh token rotates).
    stored["expires_at"] = time.time() - 10
    path.write_text(json.dumps(stored))
    refreshed = bzrk("search", "print answer=43")
    assert refreshed.returncode == 0, refreshed.stderr
    fresh = json.loads(path.read_text())
    assert fresh["access_token"] != stored["access_token"]
    assert fresh["refresh_token"] != stored["refresh_token"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    # A token the gateway refuses (e.g. revoked) is refreshed once, then the call succeeds.
    fresh_refused = dict(fresh, access_token="bzrk_at_revoked-or-unknown")
    path.write_text(json.dumps(fresh_refused))
    again = bzrk("table", "list")
    assert again.returncode == 0, again.stderr

    logout = bzrk("logout")
    assert logout.returncode == 0 and not path.exists()
    # The logout revoked the whole family: an old refresh token is refused.
    path.write_text(json.dumps(dict(fresh, expires_at=0)))
    rejected = bzrk("search", "print 1")
    assert rejected.returncode == 1
    assert "Refresh token rejected. Run `bzrk login` again." in rejected.stderr
    assert "Traceback" not in rejected.stderr


def test_denied_login_fails(bzrk: Run, cli_home: CliHome, server: dict[str, Any]) -> None:
    bzrk("profile", "add", "dev", "--endpoint", server["gateway"])
    process = subprocess.Popen(
        bzrk_command("login", "--no-browser"),
        env=cli_home.env(),
        cwd=cli_home.root,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    code = None
    while code is None:
        line = process.stderr.readline()
        assert line
        if line.startswith("    "):
            code = line.strip()
    assert "Denied" in approve_in_browser(server, code, decision="deny")
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 1 and "login denied" in err


def test_poll_honours_slow_down(server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll earlier than the gateway's interval gets ``slow_down``: the CLI then waits 5 s more
    for this and every later poll (RFC 8628 3.5), and the login still completes."""
    waits: list[float] = []
    real_sleep = time.sleep
    user_code: list[str] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        # The first two polls go out early, as from a client whose clock jumped: the second is
        # too soon after the first (the first has nothing to be compared with). The user
        # approves only after that slow_down: an approval racing a poll answers it "pending".
        if len(waits) == 3:
            approve_in_browser(server, user_code[0])
        real_sleep(0.2 if len(waits) <= 2 else seconds)

    monkeypatch.setattr(login_module.time, "sleep", sleep)
    connection = Connection(server["gateway"], "default", None, None)
    with Gateway(connection) as gateway:
        started = gateway.post_form("/oauth/device/code", {"client_id": CLIENT_ID}).json()
        user_code.append(started["user_code"])
        body = login_module.poll_device_token(gateway, started)
    assert body["access_token"].startswith("bzrk_at_")
    interval = float(started["interval"])
    assert waits == [interval, interval, interval + 5]
