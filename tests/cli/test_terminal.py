"""An interactive ``bzrk search`` in a real terminal (tmux): progress bar, tables fitted to 80 and
160 columns (or whole with ``--wide``), dynamic trees.

The normalized screens are kept in ``snapshots/`` (numbers, paths and times replaced so the demo
data's counts do not matter); ``BZRK_UPDATE_SNAPSHOTS=1`` rewrites them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import CliHome, Run, bzrk_command

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
    ),
]

SNAPSHOTS = Path(__file__).parent / "snapshots"
# min_of keeps the row's width fixed whatever the demo data's count: the snapshot stays exact.
QUERY = (
    "default | summarize n=count() | project found=min_of(n, 1), "
    'info=dynamic({"source": "demo", "tags": ["a", "b"]})'
)


def normalize(screen: str) -> str:
    """Only what varies between runs: history paths, times, file sizes, the 0/1 of `found`."""
    text = re.sub(r"/\S*/history/[0-9a-f-]+/", "<history>/", screen)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "<ts>", text)
    text = re.sub(r"\(\d+(\.\d)?[kmg]?b\)", "(<size>)", text)
    text = re.sub(r"\d+:\d\d:\d\d$", "<elapsed>", text, flags=re.M)
    text = re.sub(r"\b\d+% (\d+/\d+ time slices)", r"<pct> \1", text)
    text = re.sub(r"^(\s*)[01](\s+├─)", r"\1#\2", text, flags=re.M)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip() + "\n"


def run_in_tmux(cli_home: CliHome, env: dict[str, str], *args: str, width: int = 110) -> str:
    socket = f"bzrk-cli-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket, "-f", os.devnull]
    command = " ".join(
        shlex.quote(part)
        for part in ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *bzrk_command(*args)]
    )
    script = f"cd {shlex.quote(str(cli_home.root))}; {command}; echo EXIT=$?; sleep 600"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "t", "-x", str(width), "-y", "60", script], check=True
    )
    try:
        deadline = time.monotonic() + 120
        screen = ""
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-J", "-S", "-", "-t", "t"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            if "EXIT=" in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"bzrk search did not finish in the terminal:\n{screen}")
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)


def terminal_env(cli_home: CliHome, server: dict[str, Any], **extra: str) -> dict[str, str]:
    env = cli_home.env(BZRK_TOKEN=server["token"], TERM="xterm-256color", **extra)
    env.pop("NO_COLOR", None)
    keep = ("PATH", "HOME", "PYTHONPATH", "TERM", "BZRK_TOKEN", "LANG", "LC_ALL")
    return {k: v for k, v in env.items() if k in keep or k.startswith("XDG_") or k in extra}


def test_interactive_search_table_and_progress(
    connected: Run, cli_home: CliHome, server: dict[str, Any]
) -> None:
    screen = run_in_tmux(
        cli_home,
        terminal_env(cli_home, server, LANG="C.UTF-8"),
        "search",
        QUERY,
        "--since",
        "24h ago",
    )
    assert "EXIT=0" in screen, screen
    lines = [line.rstrip() for line in screen.splitlines()]
    assert any(
        re.match(r"# Increment 1 - at \S+ - 1/4 time slices complete - 1 rows", line)
        for line in lines
    )
    assert any(line.startswith("# Query Complete - 1 rows") for line in lines)
    # The progress bar's last state stays on stderr: the whole window, every slice complete.
    assert re.search(r"^searching ━+ 100% 4/4 time slices \d+:\d\d:\d\d$", screen, re.M), screen
    # A table (header, rule, right-aligned count), not TSV; the dynamic value as a tree.
    header = [i for i, line in enumerate(lines) if re.fullmatch(r"found\s+info", line)]
    assert len(header) == 4, screen  # three increments and the final answer
    final = header[-1]
    assert re.fullmatch(r"─+", lines[final + 1].strip())
    assert re.fullmatch(r"\s*1\s+├─ source: demo", lines[final + 2])
    assert [line.strip() for line in lines[final + 3 : final + 6]] == [
        "└─ tags",
        "├─ [0]: a",
        "└─ [1]: b",
    ]
    assert "\t" not in screen

    check_snapshot("search_terminal.txt", screen)


def check_snapshot(name: str, screen: str) -> None:
    SNAPSHOTS.mkdir(exist_ok=True)
    snapshot = SNAPSHOTS / name
    normalized = normalize(screen)
    if os.environ.get("BZRK_UPDATE_SNAPSHOTS") or not snapshot.exists():
        snapshot.write_text(normalized)
    assert normalized == snapshot.read_text()


# Twelve columns and long values: wider than any terminal. Deterministic, so snapshots are exact.
WIDE = (
    "range i from 1 to 3 step 1"
    ' | extend service = strcat("checkout-service-", i),'
    ' message = strcat("request handled in ", i * 17, " ms by the payment gateway after a retry"),'
    ' trace_id = "4bf92f3577b34da6a3ce929d0e0e4736", span_id = "00f067aa0ba902b7",'
    ' region = "eu-west-1", pod = strcat("checkout-7d9f8b6c5d-x2x4", i),'
    ' http_route = "/api/v1/orders/{id}/items", status = 200, duration_ms = i * 17.5,'
    ' attributes = dynamic({"http.method": "POST", "retry": true})'
)
COLUMNS = ["i", "service", "message", "trace_id", "span_id", "region", "pod", "http_route",
           "status", "duration_ms", "attributes"]  # fmt: skip


@pytest.mark.parametrize("width", [80, 160])
def test_a_wide_result_fits_the_terminal(
    connected: Run, cli_home: CliHome, server: dict[str, Any], width: int
) -> None:
    env = terminal_env(cli_home, server, LANG="C.UTF-8")
    screen = run_in_tmux(cli_home, env, "search", WIDE, "--no-stream", width=width)
    assert "EXIT=0" in screen, screen
    lines = [line.rstrip() for line in screen.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["i", "service"])
    end = next(i for i in range(start, len(lines)) if not lines[i] or lines[i][0] in "(E")
    table = lines[start:end]  # header, rule, rows (a dynamic value's tree spans lines)
    header = table[0]
    assert all(len(line) <= width for line in table), [x for x in table if len(x) > width]
    shown = header.split()
    # Columns keep their names (or a readable cut of them): none is squeezed to a letter.
    assert len(shown) >= 4 and all(
        len(name) >= min(len(c), 6) for name, c in zip(shown, COLUMNS, strict=False)
    )
    rows = [line for line in table[2:] if re.match(r"\d", line)]
    assert [row.split()[0] for row in rows] == ["1", "2", "3"]
    assert any("…" in row for row in rows)  # long values are cut, visibly
    if len(shown) < len(COLUMNS):  # the rest is named, with how to see it
        assert re.search(r"\(\d+ more columns? not shown: .*--wide or -o json", screen), screen
    check_snapshot(f"search_wide_{width}.txt", screen)


def test_wide_shows_every_column_and_value_whole(
    connected: Run, cli_home: CliHome, server: dict[str, Any]
) -> None:
    env = terminal_env(cli_home, server, LANG="C.UTF-8")
    screen = run_in_tmux(cli_home, env, "search", WIDE, "--no-stream", "--wide", width=80)
    assert "EXIT=0" in screen, screen
    header = next(line for line in screen.splitlines() if line.split()[:2] == ["i", "service"])
    assert header.split() == COLUMNS, screen
    assert "request handled in 34 ms by the payment gateway after a retry" in screen
    assert "…" not in screen and "not shown" not in screen
    assert "├─ http.method: POST" in screen  # dynamic values as trees


@pytest.mark.parametrize("how", ["CLAUDECODE", "GEMINI_CLI", "--agent"])
def test_agent_mode_in_a_terminal_prints_tsv(
    connected: Run, cli_home: CliHome, server: dict[str, Any], how: str
) -> None:
    extra = {} if how.startswith("--") else {how: "1"}
    env = terminal_env(cli_home, server, LANG="C.UTF-8", **extra)
    flags = [how] if how.startswith("--") else []
    screen = run_in_tmux(
        cli_home, env, "search", QUERY, "--since", "24h ago", "--no-stream", *flags
    )
    assert "EXIT=0" in screen, screen
    assert "━" not in screen and "─" not in screen  # no bar, no borders, no trees
    assert re.search(r'^\d+\s+\{"source":"demo","tags":\["a","b"\]\}$', screen, re.M), screen
    assert "\x1b[" not in screen
