"""``bzrk search`` against a real ``bzrk dev --demo``: the vendor's streamed layout in agent mode,
the final result alone when piped, formats, stop modes, Ctrl-C, history files and exit codes.

The subprocess's stdout is a pipe: without ``--agent`` that is the piped layout (result on
stdout, ``#`` lines on stderr); ``--agent`` gives the streamed one.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import CliHome, Run

pytestmark = pytest.mark.e2e

INCREMENT = re.compile(
    r"^# Increment (\d+) - at (\S+) - (\d+)/(\d+) time slices complete - (\d+) rows \((\d+(?:\.\d)?[kmg]?b)\) - (/\S+)$"
)
COMPLETE = re.compile(r"^# Query Complete - (\d+) rows \((\d+(?:\.\d)?[kmg]?b)\) - (/\S+)$")
STOPPED = re.compile(r"^# Stopped Early - (.+) at increment (\d+) - (\d+) rows - (/\S+)$")
COUNT = "default | summarize n=count()"
DAY = ("--since", "24h ago")


def comments(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("# ")]


def read_tsv(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines()]


def test_agent_mode_streams_increments_and_saves_history(connected: Run, cli_home: CliHome) -> None:
    result = connected("search", COUNT, *DAY, "--desc", "count the demo rows", "--agent")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    increments = [m for line in lines if (m := INCREMENT.match(line))]
    complete = [m for line in lines if (m := COMPLETE.match(line))]
    assert len(complete) == 1 and lines[-3] == complete[0].group(0)
    # 24 h are planned as 4 growing windows: 3 increments, then the whole answer.
    assert [int(m.group(1)) for m in increments] == [1, 2, 3]
    assert [(int(m.group(3)), int(m.group(4))) for m in increments] == [(1, 4), (2, 4), (3, 4)]
    # Each increment prints its rows under its header; counts only grow.
    counts = [int(lines[lines.index(m.group(0)) + 2]) for m in increments]
    final = int(lines[-1])
    assert lines[-2] == "n" and counts == sorted(counts) and counts[-1] <= final and final > 0

    history = cli_home.cache / "bzrk" / "history"
    final_path = Path(complete[0].group(3))
    assert final_path.parent.parent == history
    assert final_path.name == "PrimaryResult.tsv"
    assert read_tsv(final_path) == [["n"], [str(final)]]
    assert complete[0].group(2) == f"{final_path.stat().st_size}b"
    for match, count in zip(increments, counts, strict=True):
        path = Path(match.group(7))
        assert path == final_path.parent / "incremental" / "PrimaryResult" / f"{match.group(1)}.tsv"
        assert read_tsv(path) == [["n"], [str(count)]]
    assert (final_path.parent / "incremental" / "PrimaryResult" / "4.tsv").exists()
    record = json.loads((final_path.parent / "query.json").read_text())
    assert record["status"] == "complete" and record["desc"] == "count the demo rows"
    assert record["query"] == COUNT and record["increments"] == 4


def fixed_day() -> tuple[str, ...]:
    """The last 24 h as fixed bounds: "24h ago" slides between calls, and rows drop off its edge."""
    now = datetime.now(UTC)
    return ("--since", (now - timedelta(hours=24)).isoformat(), "--until", now.isoformat())


def test_piped_output_is_the_final_result_only(connected: Run) -> None:
    query = "default | summarize n=count() by severity_text | sort by severity_text asc"
    window = fixed_day()
    piped = connected("search", query, *window)
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert lines[0] == "severity_text\tn" and all("\t" in line for line in lines)
    assert not any(line.startswith("#") for line in lines)  # what `wc -l` counts: rows + header
    assert [c for c in comments(piped.stderr) if c.startswith("# Increment")] == []
    assert COMPLETE.match(comments(piped.stderr)[-1])
    # The same rows whether streamed or not.
    agent = connected("search", query, *window, "--agent", "--no-stream")
    assert agent.stdout.splitlines()[1:] == lines


def test_output_formats(connected: Run) -> None:
    query = "default | summarize n=count() by severity_text | sort by severity_text asc"
    window = fixed_day()
    tsv = connected("search", query, *window)
    tsv_rows = [line.split("\t") for line in tsv.stdout.splitlines()]
    assert tsv_rows[0] == ["severity_text", "n"]

    as_json = connected("search", query, *window, "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)  # one document, whatever the number of snapshots
    assert COMPLETE.match(comments(as_json.stderr)[-1])
    assert [sorted(row) for row in rows] == [["n", "severity_text"]] * len(rows)
    # Spans and metric points have no severity_text: JSON says null, TSV leaves the cell empty.
    assert [[row["severity_text"] or "", str(row["n"])] for row in rows] == tsv_rows[1:]
    assert rows[0]["severity_text"] is None
    assert json.loads(connected("search", query, *window, "-o", "json").stdout) == rows

    jsonl = connected("search", query, *window, "--jsonl")
    assert [json.loads(line) for line in jsonl.stdout.splitlines()] == rows
    assert connected("search", query, *window, "-o", "jsonl").stdout == jsonl.stdout

    as_csv = connected("search", query, *window, "--csv")
    parsed = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert parsed == tsv_rows
    assert connected("search", query, *window, "-o", "csv").stdout == as_csv.stdout
    assert connected("search", query, *window, "-o", "tsv").stdout == tsv.stdout

    # A table written to a pipe: no colour, no tabs, every value whole.
    table = connected("search", query, *window, "-o", "table")
    assert table.returncode == 0, table.stderr
    out = table.stdout.splitlines()
    assert re.fullmatch(r"severity_text\s+n", out[0]) and "\t" not in table.stdout
    assert "\x1b[" not in table.stdout and len(out) == len(rows) + 2

    # Agent mode keeps the vendor's stream: one JSON array per snapshot, # lines on stderr.
    streamed = connected("search", query, *window, "--json", "--agent")
    documents = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert len(documents) == 4 and documents[-1] == rows

    for flags in (("--json", "--csv"), ("--jsonl", "-o", "tsv"), ("-o", "xml")):
        usage = connected("search", query, *flags)
        assert usage.returncode == 2 and "Traceback" not in usage.stderr, flags


def test_dynamic_and_datetime_cells(connected: Run) -> None:
    query = (
        'print t=datetime(2024-01-02 03:04:05.5), d=dynamic({"a": [1, "x\\ty"]}), '
        "s=1d + 2h, r=2.5, b=true, e=''"
    )
    result = connected("search", query, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {
            "t": "2024-01-02T03:04:05.5000000Z",
            "d": {"a": [1, "x\ty"]},
            "s": "1.02:00:00",
            "r": 2.5,
            "b": True,
            "e": "",
        }
    ]
    tsv = connected("search", query)
    assert tsv.stdout.splitlines()[-1] == (
        '2024-01-02T03:04:05.5000000Z\t{"a":[1,"x\\\\ty"]}\t1.02:00:00\t2.5\ttrue\t'
    )


def test_stop_when(connected: Run) -> None:
    result = connected("search", COUNT, *DAY, "--stop-when", "n >= 1", "--agent")
    assert result.returncode == 3, result.stderr  # stopped early is incomplete
    lines = result.stdout.splitlines()
    stopped = STOPPED.match(lines[-1])
    assert stopped, result.stdout
    assert stopped.group(1) == 'predicate "n >= 1" held'
    at = int(stopped.group(2))
    increments = [m for line in lines if (m := INCREMENT.match(line))]
    assert int(increments[-1].group(1)) == at < 4
    # Every earlier increment had n == 0 (the predicate did not hold there).
    assert all(lines[lines.index(m.group(0)) + 2] == "0" for m in increments[:-1])
    final = Path(stopped.group(4))
    assert int(read_tsv(final)[1][0]) >= 1
    assert json.loads((final.parent / "query.json").read_text())["status"] == "stopped_early"

    partial = connected("search", COUNT, *DAY, "--stop-when", "n >= 1", "--allow-partial")
    assert partial.returncode == 0, partial.stderr
    out = partial.stdout.splitlines()
    assert out[0] == "n" and int(out[1]) >= 1 and STOPPED.match(comments(partial.stderr)[-1])

    # A predicate that never holds runs to the end; == never cancels.
    never = connected("search", COUNT, *DAY, "--stop-when", "n == 0")
    assert never.returncode == 0 and COMPLETE.match(comments(never.stderr)[-1])

    missing = connected("search", COUNT, *DAY, "--stop-when", "nope > 1")
    assert missing.returncode == 2
    assert "stop_when column 'nope' is not in the result" in missing.stderr


def test_stop_cmd(connected: Run, cli_home: CliHome) -> None:
    log = cli_home.root / "calls.log"
    script = f'echo "$1 $BZRK_SNAPSHOT_TSV $BZRK_INCREMENT $BZRK_ROWS" >> {log}; exit 0'
    result = connected("search", COUNT, *DAY, "--stop-cmd", script, "--agent")
    assert result.returncode == 3, result.stderr
    stopped = STOPPED.match(result.stdout.splitlines()[-1])
    assert stopped and stopped.group(2) == "1"
    assert stopped.group(1) == f'stop command "{script}" exited 0'
    arg, env_path, increment, rows = log.read_text().split()
    assert arg == env_path and Path(arg).name == "1.tsv" and Path(arg).exists()
    assert (increment, rows) == ("1", "1")

    log.unlink()
    keep_going = connected(
        "search", COUNT, *DAY, "--stop-cmd", f"echo $BZRK_INCREMENT >> {log}; exit 1"
    )
    assert keep_going.returncode == 0, keep_going.stderr
    assert log.read_text().split() == ["1", "2", "3"]  # not after the final snapshot

    abort = connected("search", COUNT, *DAY, "--stop-cmd", "exit 7")
    assert abort.returncode == 1
    assert "--stop-cmd exited 7 at increment 1" in abort.stderr

    both = connected("search", COUNT, "--stop-cmd", "true", "--stop-when", "rows > 1")
    assert both.returncode == 2 and "exclusive" in both.stderr


def test_time_windows(connected: Run) -> None:
    def count(*flags: str) -> int:
        result = connected("search", COUNT, *flags)
        assert result.returncode == 0, result.stderr
        return int(result.stdout.splitlines()[-1])

    fixed = fixed_day()
    day = count(*fixed)
    assert 0 < count("--since", "24h ago", "--until", "12h ago") < day
    assert count(*fixed, "--ingest-until", "2000-01-01") == 0
    assert count(*fixed, "--ingest-since", "2000-01-01") == day
    assert count("--since", "2000-01-01", "--until", "2000-01-02") == 0


def test_timeout_is_incomplete(connected: Run) -> None:
    result = connected("search", COUNT, *DAY, "--timeout", "0.001")
    assert result.returncode == 3, result.stderr
    assert comments(result.stderr)[-1].startswith("# Query Incomplete - timed out after 0.001s")
    allowed = connected("search", COUNT, *DAY, "--timeout", "0.001", "--allow-partial")
    assert allowed.returncode == 0


def test_stats(connected: Run) -> None:
    result = connected("search", COUNT, *DAY, "--stats")
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == "n"  # the result alone
    stats = comments(result.stderr)[-1]
    match = re.match(
        r"# Stats - elapsed \S+ - query time \S+ - rows processed (\d+) .* time slices 4/4$", stats
    )
    assert match and int(match.group(1)) > 0


def test_errors(connected: Run) -> None:
    parse = connected("search", "default | where", *DAY)
    assert parse.returncode == 1
    assert re.search(r"bzrk: ParseError: .*\(line 1, column \d+\)", parse.stderr)
    assert "Traceback" not in parse.stderr

    database = connected("search", COUNT, *DAY, "--database", "nope")
    assert database.returncode == 1 and "DatabaseNotFound" in database.stderr

    bad_token = connected("search", COUNT, "--token", "bzrk_sp_not-a-token")
    assert bad_token.returncode == 1 and "Traceback" not in bad_token.stderr
    assert "refused the token from --token" in bad_token.stderr  # one was sent: not "send one"
    env_token = connected("search", COUNT, env={"BZRK_TOKEN": "bzrk_sp_not-a-token"})
    assert env_token.returncode == 1 and "refused the token from BZRK_TOKEN" in env_token.stderr

    for flags, message in (
        (("--json", "--csv"), "exclusive"),
        (("--desc", "x" * 80), "--desc must be shorter"),
        (("--stop-when", "n >>= 1"), "invalid stop_when"),
    ):
        usage = connected("search", COUNT, *flags)
        assert usage.returncode == 2 and message in usage.stderr


def test_empty_result_prints_no_rows(connected: Run) -> None:
    query = "default | where body == 'no such body, ever'"
    agent = connected("search", query, *DAY, "--no-stream", "--agent")
    assert agent.returncode == 0
    assert len(agent.stdout.splitlines()) == 1  # only the # line
    assert COMPLETE.match(agent.stdout.strip()).group(1) == "0"  # type: ignore[union-attr]
    piped = connected("search", query, *DAY)
    assert piped.returncode == 0 and piped.stdout == ""
    assert json.loads(connected("search", query, *DAY, "--json").stdout) == []


def test_global_flags_before_the_command(bzrk: Run, server: dict[str, object]) -> None:
    bzrk("profile", "add", "elsewhere", "--endpoint", "http://127.0.0.1:9")
    bzrk("profile", "add", "dev", "--endpoint", str(server["gateway"]))
    result = bzrk(
        "-P",
        "dev",
        "--token",
        str(server["token"]),
        "--database",
        "default",
        "search",
        "print where_am_i='dev'",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "dev"
    # A flag after the command wins over the same flag before it.
    overridden = bzrk(
        "--endpoint",
        "http://127.0.0.1:9",
        "--token",
        str(server["token"]),
        "search",
        "print 1",
        "--endpoint",
        str(server["gateway"]),
    )
    assert overridden.returncode == 0, overridden.stderr


def test_stats_name_chunks_only_when_the_query_counted_them() -> None:
    from bzrk.api.grpc._pb import query_pb2
    from bzrk.cli.search import stats_lines

    counted = query_pb2.Progress(rows_processed=10, chunks_total=8, chunks_scanned=2)
    assert "chunks scanned 2/8" in stats_lines(counted, 0.1)[0]
    fast = query_pb2.Progress(rows_processed=10)  # done before the chunk count started
    assert "chunks" not in stats_lines(fast, 0.1)[0]
    assert "rows processed 10" in stats_lines(fast, 0.1)[0]


def test_take_short_circuits_and_says_complete(connected: Run) -> None:
    result = connected("search", 'default | where severity_text == "INFO" | take 50', *DAY)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 51  # header and 50 rows
    complete = COMPLETE.match(comments(result.stderr)[-1])
    assert complete and complete.group(1) == "50"


# The first slice of the day is quick; the rest takes many seconds, on a quiet machine too
# (range(1, 100) finished within a second of the first snapshot there, before the interrupt).
HEAVY = (
    "default | where timestamp > ago(1d) | mv-expand k = range(1, 400)"
    " | summarize n = dcount(hash_sha256(strcat(body, tostring(k)))) by bin(timestamp, 1h)"
)


@pytest.mark.parametrize("agent", [False, True])
def test_ctrl_c_prints_the_last_complete_snapshot_and_exits_130(
    cli_home: CliHome, server: dict[str, object], agent: bool
) -> None:
    import signal
    import subprocess
    import time

    from tests.cli.conftest import bzrk_command

    env = cli_home.env(BZRK_TOKEN=str(server["token"]), BZRK_ENDPOINT=str(server["gateway"]))
    flags = ["--agent"] if agent else []
    process = subprocess.Popen(
        bzrk_command("search", HEAVY, *DAY, *flags),
        env=env,
        cwd=cli_home.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    history = cli_home.cache / "bzrk" / "history"

    def snapshot_with_rows() -> bool:
        # The newest slices of the day may hold no rows (the demo data ends when it was loaded).
        saved = history.glob("*/incremental/PrimaryResult/*.tsv")
        return any(len(path.read_text().splitlines()) > 1 for path in saved)

    deadline = time.monotonic() + 120
    while not snapshot_with_rows():
        assert process.poll() is None, ("finished before the interrupt", process.communicate())
        assert time.monotonic() < deadline, "no snapshot with rows"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    saved = sorted(history.glob("*/incremental/PrimaryResult/*.tsv"), key=lambda p: int(p.stem))
    last = read_tsv(saved[-1])
    assert len(last) > 1
    text = stdout + stderr
    interrupted = [line for line in comments(text) if line.startswith("# Query Interrupted")]
    assert len(interrupted) == 1, text
    assert re.match(
        r"# Query Interrupted - at increment \d+ - \d+/4 time slices complete", interrupted[0]
    )
    rows = [line.split("\t") for line in stdout.splitlines() if not line.startswith("#")]
    assert rows[-len(last) :] == last  # the last complete snapshot, as printed
    record = json.loads(next(history.glob("*/query.json")).read_text())
    assert record["status"] == "interrupted"
