"""``bzrk search "<KQL>"``: progressive snapshots over gRPC, stop modes, history and exit codes.

Each complete snapshot (result iteration) is saved as an increment TSV. Where it goes:

* agent mode (``--agent`` or an AI agent's environment): the vendor's stream — every snapshot
  under ``# Increment N - at <ts> - k/n time slices complete - R rows (<size>) - <path>`` on
  stdout (``--no-stream``: the final one only);
* a terminal: the same stream with tables fitted to the terminal, a progress bar on stderr;
* a pipe or file (kubectl/gh/logcli): the final result only, in ``-o`` format (TSV by default),
  every ``#`` line on stderr.

The run ends with ``# Query Complete …``, ``# Stopped Early …`` (``--stop-when`` held, or
``--stop-cmd`` exited 0), ``# Query Incomplete …`` (timeout) or ``# Query Interrupted …``
(Ctrl-C: the last complete snapshot is printed). Exit codes (``bzrk.cli.errors``): 0 complete,
3 incomplete without ``--allow-partial``, 130 interrupted, 2 usage, 1 error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from bzrk.api.grpc._pb import query_pb2
from bzrk.cli.errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, AuthError, CliError, UsageError
from bzrk.cli.gateway import Gateway
from bzrk.cli.history import RunHistory
from bzrk.cli.output import FORMATS, Printer, agent_detected, human_size
from bzrk.cli.profiles import DatabaseOpt, EndpointOpt, ProfileOpt, TokenOpt, options, resolve
from bzrk.cli.stream import RunOutcome, Snapshot, SnapshotReader, build_request, run_query
from bzrk.engine.stop import StopPredicate, StopPredicateError, parse_stop_when

MAX_DESC_CHARS = 80
WIDE = 1_000_000  # "unlimited" console width for agent mode and pipes


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class SliceBar:
    """The progress bar on stderr (a terminal there, outside agent mode): the share of the
    window scanned, moving while a slice runs, and the slices complete."""

    def __init__(self, console: Console | None) -> None:
        self.progress = (
            Progress(
                TextColumn("[bold]searching"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[slices]} time slices"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            if console is not None
            else None
        )
        self.task = (
            self.progress.add_task("slices", total=COVERAGE_TOTAL, slices="0/?")
            if self.progress
            else None
        )

    def __enter__(self) -> SliceBar:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            # The bar's last state stays on screen: how much of the window the answer covers.
            self.progress.live.transient = False
            self.progress.stop()

    def update(self, progress: query_pb2.Progress) -> None:
        if self.progress is None or self.task is None:
            return
        stats = progress.custom_stats
        total = int(stats.get("slices_total", 0))
        done = int(stats.get("slices_done", 0))
        if "coverage_ppm" in stats:
            covered = int(stats["coverage_ppm"])
        else:  # a server without coverage figures: the slices complete
            covered = COVERAGE_TOTAL * done // total if total else 0
        if progress.short_circuit_completion:
            covered = COVERAGE_TOTAL  # the answer is whole
        self.progress.update(
            self.task, completed=covered, slices=f"{done}/{total}" if total else "0/?"
        )

    def pause(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def resume(self) -> None:
        if self.progress is not None:
            self.progress.start()


COVERAGE_TOTAL = 1_000_000  # coverage_ppm of a whole window


class SearchRun:
    """State of one search: what was printed and saved, and why it ended."""

    def __init__(
        self,
        printer: Printer,
        bar: SliceBar,
        request_info: dict[str, Any],
        stream: bool,
        stop: StopPredicate | None,
        stop_cmd: str | None,
    ) -> None:
        self.printer = printer
        self.bar = bar
        self.request_info = request_info
        self.stream = stream
        self.stop = stop
        self.stop_cmd = stop_cmd
        self.history: RunHistory | None = None
        self.reader: SnapshotReader | None = None
        self.printed: int | None = None  # number of the last snapshot printed
        self.stop_reason: str | None = None
        self.stopped_at: int | None = None

    def make_reader(self) -> SnapshotReader:
        self.reader = SnapshotReader(self.on_snapshot, self.bar.update)
        return self.reader

    def _history(self) -> RunHistory:
        if self.history is None:
            assert self.reader is not None
            self.history = RunHistory(
                self.reader.request_id or str(time.time_ns()), self.request_info
            )
        return self.history

    def on_snapshot(self, snapshot: Snapshot) -> bool:
        path = self._history().save_increment(snapshot)
        if snapshot.final:
            return False
        table = snapshot.primary
        if self.stream:
            size = path.stat().st_size if path.is_file() else 0
            self.bar.pause()
            self.printer.comment(
                f"# Increment {snapshot.number} - at {_stamp(snapshot.at)} - "
                f"{snapshot.slices_done}/{snapshot.slices_total} time slices complete - "
                f"{len(table.rows)} rows ({human_size(size)}) - {path}"
            )
            self.printer.rows(table)
            self.bar.resume()
            self.printed = snapshot.number
        if self.stop is not None:
            try:
                if self.stop.cancels(table.columns, table.rows):
                    self.stop_reason = f'predicate "{self.stop.text}" held'
                    self.stopped_at = snapshot.number
                    return True
            except StopPredicateError as exc:
                raise UsageError(str(exc)) from None
        if self.stop_cmd is not None:
            code = run_stop_cmd(self.stop_cmd, path, snapshot.number, len(table.rows))
            if code == 0:
                self.stop_reason = f'stop command "{self.stop_cmd}" exited 0'
                self.stopped_at = snapshot.number
                return True
            if code != 1:
                raise CliError(f"--stop-cmd exited {code} at increment {snapshot.number}: aborted")
        return False


def run_stop_cmd(command: str, path: Path, increment: int, rows: int) -> int:
    env = {
        **os.environ,
        "BZRK_SNAPSHOT_TSV": str(path),
        "BZRK_INCREMENT": str(increment),
        "BZRK_ROWS": str(rows),
    }
    sys.stdout.flush()
    # The command's own output goes to stderr: stdout carries the result.
    completed = subprocess.run(
        ["sh", "-c", command, "sh", str(path)], env=env, stdout=sys.stderr, check=False
    )
    return completed.returncode


def stats_lines(progress: query_pb2.Progress | None, elapsed_s: float) -> list[str]:
    if progress is None:
        return [f"# Stats - elapsed {elapsed_s:.2f}s"]
    stats = progress.custom_stats
    # A query faster than query_chunk_counters_after_ms has no chunk figures: say nothing then.
    chunks = (
        f" - chunks scanned {progress.chunks_scanned}/{progress.chunks_total}"
        f" (skipped by range {progress.chunks_skipped_range})"
        if progress.chunks_total
        else ""
    )
    return [
        f"# Stats - elapsed {elapsed_s:.2f}s - query time {progress.query_time_nanos / 1e9:.3f}s"
        f" - rows processed {progress.rows_processed}"
        f" - bytes scanned {human_size(progress.chunk_scanned_raw_body_size)}"
        f"{chunks}"
        f" - time slices {int(stats.get('slices_done', 0))}/{int(stats.get('slices_total', 0))}"
    ]


def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="The KQL query.", show_default=False)],
    since: Annotated[
        str, typer.Option("--since", help="Start of the time window (e.g. '1h ago', RFC 3339).")
    ] = "1h ago",
    until: Annotated[
        str | None, typer.Option("--until", help="End of the time window. [default: now]")
    ] = None,
    ingest_since: Annotated[
        str | None, typer.Option("--ingest-since", help="Only rows ingested since then.")
    ] = None,
    ingest_until: Annotated[
        str | None, typer.Option("--ingest-until", help="Only rows ingested until then.")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for a complete answer.", min=0.001)
    ] = 300,
    output: Annotated[
        str | None,
        typer.Option(
            "-o",
            "--output",
            help="Result format: table, tsv, csv, json (one document), jsonl (a row per line). "
            "[default: table on a terminal, else tsv]",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Same as -o json: one JSON array of row objects.")
    ] = False,
    as_jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Same as -o jsonl: one JSON object per row.")
    ] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Same as -o csv.")] = False,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="Tables: every column and every value whole (no truncation)."),
    ] = False,
    no_stream: Annotated[
        bool, typer.Option("--no-stream", help="Print only the final snapshot.")
    ] = False,
    stats: Annotated[
        bool, typer.Option("--stats", help="Print scan statistics at the end.")
    ] = False,
    stop_when: Annotated[
        str | None,
        typer.Option(
            "--stop-when",
            help="Stop at the first complete snapshot where '<ident> <op> <number>' holds "
            "(ident: rows or a column of the first row; op: >= <= > < == !=).",
        ),
    ] = None,
    stop_cmd: Annotated[
        str | None,
        typer.Option(
            "--stop-cmd",
            help="Shell command run after each complete snapshot with its TSV path as $1 "
            "(env BZRK_SNAPSHOT_TSV, BZRK_INCREMENT, BZRK_ROWS): exit 0 stop, 1 continue, "
            "other abort.",
        ),
    ] = None,
    allow_partial: Annotated[
        bool, typer.Option("--allow-partial", help="Exit 0 for an incomplete result.")
    ] = False,
    desc: Annotated[
        str | None, typer.Option("--desc", help="Why you run this query (< 80 chars, recorded).")
    ] = None,
    agent: Annotated[
        bool, typer.Option("--agent", help="Agent mode: no colour or borders, TSV output.")
    ] = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """Run a KQL query: progressive snapshots, the final result, a saved history."""
    fmt = _format(output, as_json=as_json, as_jsonl=as_jsonl, as_csv=as_csv)
    if stop_when is not None and stop_cmd is not None:
        raise UsageError("--stop-when and --stop-cmd are exclusive")
    if desc is not None and len(desc) >= MAX_DESC_CHARS:
        raise UsageError(f"--desc must be shorter than {MAX_DESC_CHARS} characters")
    if not query.strip():
        raise UsageError("the query is empty")
    predicate = None
    if stop_when is not None:
        try:
            predicate = parse_stop_when(stop_when)
        except StopPredicateError as exc:
            raise UsageError(str(exc)) from None
    connection = resolve(
        options(ctx, profile=profile, endpoint=endpoint, database=database, token=token)
    )
    agent = agent or agent_detected()
    interactive_out = sys.stdout.isatty() and not agent
    fmt = fmt or ("table" if interactive_out else "tsv")
    # The vendor's streamed layout: agent mode, and a person watching tables in a terminal.
    streamed_layout = agent or (interactive_out and fmt == "table")
    console = Console(
        file=sys.stdout,
        highlight=False,
        no_color=agent,
        width=None if interactive_out else WIDE,
        soft_wrap=not interactive_out,
    )
    err_console = Console(file=sys.stderr, highlight=False, no_color=agent)
    show_bar = sys.stderr.isatty() and not agent
    printer = Printer(
        fmt,
        console,
        err_console,
        comments_to_stdout=streamed_layout,
        width=console.width if interactive_out else None,
        wide=wide or not interactive_out,
    )
    request_info = {
        "query": query,
        "database": connection.database,
        "endpoint": connection.endpoint,
        "since": since,
        "until": until,
        "ingest_since": ingest_since,
        "ingest_until": ingest_until,
        "desc": desc,
    }
    request = build_request(query, connection.database, since, until, ingest_since, ingest_until)
    started = time.monotonic()
    stream = streamed_layout and not no_stream
    with Gateway(connection) as gateway, SliceBar(err_console if show_bar else None) as bar:
        run = SearchRun(printer, bar, request_info, stream, predicate, stop_cmd)
        source = connection.token_source
        bearer = gateway.token()
        try:
            outcome = run_query(
                connection.endpoint, bearer, request, timeout, run.make_reader(), source
            )
        except AuthError:
            if not gateway.uses_stored_login or run.history is not None:
                raise
            gateway.refresh()
            outcome = run_query(
                connection.endpoint, gateway.token(), request, timeout, run.make_reader(), source
            )
        except CliError as exc:
            if run.history is not None:
                run.history.record(status="error", error=exc.message)
            raise
    code = finish(run, outcome, timeout, not stream, allow_partial)
    if stats:
        for line in stats_lines(outcome.progress, time.monotonic() - started):
            printer.comment(line)
    if code:
        raise typer.Exit(code)


def _format(output: str | None, *, as_json: bool, as_jsonl: bool, as_csv: bool) -> str | None:
    """The one format asked for (None: the default for where stdout goes)."""
    asked = [f for f, on in (("json", as_json), ("jsonl", as_jsonl), ("csv", as_csv)) if on]
    if output is not None:
        if output not in FORMATS:
            raise UsageError(f"-o must be one of {', '.join(FORMATS)} (got {output!r})")
        asked.append(output)
    if len(set(asked)) > 1:
        raise UsageError(f"--output formats are exclusive: {', '.join(asked)}")
    return asked[0] if asked else None


def finish(
    run: SearchRun, outcome: RunOutcome, timeout: float, no_stream: bool, allow_partial: bool
) -> int:
    final = outcome.last
    history = run._history()
    path = history.save_final(final)
    size = path.stat().st_size
    rows = len(final.primary.rows) if final else 0
    printer = run.printer
    slices = f"{final.slices_done}/{final.slices_total}" if final else "0/?"
    if run.stop_reason is not None:
        status = "stopped_early"
        printer.comment(
            f"# Stopped Early - {run.stop_reason} at increment {run.stopped_at} - "
            f"{rows} rows - {path}"
        )
    elif outcome.interrupted:
        status = "interrupted"
        number = final.number if final else 0
        printer.comment(
            f"# Query Interrupted - at increment {number} - {slices} time slices complete - "
            f"{rows} rows ({human_size(size)}) - {path}"
        )
    elif outcome.complete:
        status = "complete"
        printer.comment(f"# Query Complete - {rows} rows ({human_size(size)}) - {path}")
    else:
        status = "timeout" if outcome.timed_out else "soft_budget"
        number = final.number if final else 0
        why = (
            f"timed out after {timeout:g}s"
            if outcome.timed_out
            else "stopped by the server's time budget"
        )
        printer.comment(
            f"# Query Incomplete - {why} at increment {number} - {slices} time slices complete - "
            f"{rows} rows ({human_size(size)}) - {path}"
        )
    if final is not None and (no_stream or run.printed != final.number):
        printer.rows(final.primary)
    if final is not None:
        for warning in final.warnings:
            printer.comment(f"# Warning - {warning}")
    history.record(
        status=status,
        rows=rows,
        increments=final.number if final else 0,
        stop_reason=run.stop_reason,
        request_id=outcome.request_id,
    )
    if status == "interrupted":
        return EXIT_INTERRUPTED
    if status == "complete" or allow_partial:
        return 0
    return EXIT_INCOMPLETE
