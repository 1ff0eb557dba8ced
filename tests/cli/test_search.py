"""``bzrk search`` against a real ``bzrk dev --demo``: streaming headers, formats, stop modes,
history files and exit codes."""

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


def test_streams_increments_and_saves_history(connected: Run, cli_home: CliHome) -> None:
    result = connected("search", COUNT, *DAY, "--desc", "count the demo rows")
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


def test_no_stream_json_and_csv(connected: Run) -> None:
    query = "default | summarize n=count() by severity_text | sort by severity_text asc"
    plain = connected("search", query, *DAY, "--no-stream")
    assert plain.returncode == 0, plain.stderr
    assert not [line for line in plain.stdout.splitlines() if line.startswith("# Increment")]
    tsv_rows = [line.split("\t") for line in plain.stdout.splitlines()[1:]]
    assert tsv_rows[0] == ["severity_text", "n"]

    as_json = connected("search", query, *DAY, "--no-stream", "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)  # stdout is one JSON document; comments go to stderr
    assert COMPLETE.match(comments(as_json.stderr)[0])
    assert [sorted(row) for row in rows] == [["n", "severity_text"]] * len(rows)
    assert {row["severity_text"] for row in rows} == {row[0] for row in tsv_rows[1:]}

    as_csv = connected("search", query, *DAY, "--no-stream", "--csv")
    assert as_csv.returncode == 0, as_csv.stderr
    parsed = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert parsed[0] == ["severity_text", "n"]
    assert [row[0] for row in parsed[1:]] == [row["severity_text"] for row in rows]

    streamed = connected("search", query, *DAY, "--json")
    documents = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert len(documents) == 4  # one array per snapshot


def test_dynamic_and_datetime_cells(connected: Run) -> None:
    query = (
        'print t=datetime(2024-01-02 03:04:05.5), d=dynamic({"a": [1, "x\\ty"]}), '
        "s=1d + 2h, r=2.5, b=true, e=''"
    )
    result = connected("search", query, "--no-stream", "--json")
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
    tsv = connected("search", query, "--no-stream")
    assert tsv.stdout.splitlines()[-1] == (
        '2024-01-02T03:04:05.5000000Z\t{"a":[1,"x\\\\ty"]}\t1.02:00:00\t2.5\ttrue\t'
    )


def test_stop_when(connected: Run) -> None:
    result = connected("search", COUNT, *DAY, "--stop-when", "n >= 1")
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

    partial = connected(
        "search", COUNT, *DAY, "--stop-when", "n >= 1", "--allow-partial", "--no-stream"
    )
    assert partial.returncode == 0, partial.stderr
    out = partial.stdout.splitlines()
    assert STOPPED.match(out[0]) and out[1] == "n" and int(out[2]) >= 1

    # A predicate that never holds runs to the end; == never cancels.
    never = connected("search", COUNT, *DAY, "--stop-when", "n == 0", "--no-stream")
    assert never.returncode == 0 and COMPLETE.match(never.stdout.splitlines()[0])

    missing = connected("search", COUNT, *DAY, "--stop-when", "nope > 1")
    assert missing.returncode == 2
    assert "stop_when column 'nope' is not in the result" in missing.stderr


def test_stop_cmd(connected: Run, cli_home: CliHome) -> None:
    log = cli_home.root / "calls.log"
    script = f'echo "$1 $BZRK_SNAPSHOT_TSV $BZRK_INCREMENT $BZRK_ROWS" >> {log}; exit 0'
    result = connected("search", COUNT, *DAY, "--stop-cmd", script)
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
        result = connected("search", COUNT, "--no-stream", *flags)
        assert result.returncode == 0, result.stderr
        return int(result.stdout.splitlines()[-1])

    # A fixed window: "24h ago" slides between calls, and demo rows drop off its old edge.
    now = datetime.now(UTC)
    fixed = ("--since", (now - timedelta(hours=24)).isoformat(), "--until", now.isoformat())
    day = count(*fixed)
    assert 0 < count("--since", "24h ago", "--until", "12h ago") < day
    assert count(*fixed, "--ingest-until", "2000-01-01") == 0
    assert count(*fixed, "--ingest-since", "2000-01-01") == day
    assert count("--since", "2000-01-01", "--until", "2000-01-02") == 0


def test_timeout_is_incomplete(connected: Run) -> None:
    result = connected("search", COUNT, *DAY, "--timeout", "0.001")
    assert result.returncode == 3, result.stderr
    assert result.stdout.splitlines()[-1].startswith("# Query Incomplete - timed out after 0.001s")
    allowed = connected("search", COUNT, *DAY, "--timeout", "0.001", "--allow-partial")
    assert allowed.returncode == 0


def test_stats(connected: Run) -> None:
    result = connected("search", COUNT, *DAY, "--no-stream", "--stats")
    assert result.returncode == 0
    stats = result.stdout.splitlines()[-1]
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
    assert bad_token.returncode == 1
    assert "authentication failed" in bad_token.stderr and "Traceback" not in bad_token.stderr

    for flags, message in (
        (("--json", "--csv"), "exclusive"),
        (("--desc", "x" * 80), "--desc must be shorter"),
        (("--stop-when", "n >>= 1"), "invalid stop_when"),
    ):
        usage = connected("search", COUNT, *flags)
        assert usage.returncode == 2 and message in usage.stderr


def test_empty_result_prints_only_the_header(connected: Run) -> None:
    result = connected(
        "search", "default | where body == 'no such body, ever'", *DAY, "--no-stream"
    )
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 1
    assert COMPLETE.match(result.stdout.strip()).group(1) == "0"  # type: ignore[union-attr]


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
        "--no-stream",
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
        "--no-stream",
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
