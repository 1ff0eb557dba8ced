"""``bzrk search "<KQL>"``: progressive snapshots over gRPC, stop modes, history and exit codes.

Each complete snapshot (result iteration) is saved as an increment TSV and, when streaming,
printed under ``# Increment N - at <ts> - k/n time slices complete - R rows (<size>) - <path>``.
The run ends with ``# Query Complete …``, ``# Stopped Early …`` (``--stop-when`` held, or
``--stop-cmd`` exited 0) or ``# Query Incomplete …`` (timeout). Exit codes: 0 complete,
3 incomplete without ``--allow-partial``, 2 usage, 1 error.
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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bzrk.api.grpc._pb import query_pb2
from bzrk.cli.errors import EXIT_INCOMPLETE, AuthError, CliError, UsageError
from bzrk.cli.gateway import Gateway
from bzrk.cli.history import RunHistory
from bzrk.cli.output import Printer, agent_detected, human_size
from bzrk.cli.profiles import DatabaseOpt, EndpointOpt, ProfileOpt, TokenOpt, options, resolve
from bzrk.cli.stream import RunOutcome, Snapshot, SnapshotReader, build_request, run_query
from bzrk.engine.stop import StopPredicate, StopPredicateError, parse_stop_when

MAX_DESC_CHARS = 80
WIDE = 1_000_000  # "unlimited" console width for agent mode and pipes


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class SliceBar:
    """The progress bar on stderr (interactive human mode only)."""

    def __init__(self, console: Console | None) -> None:
        self.progress = (
            Progress(
                TextColumn("[bold]searching"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("time slices"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            if console is not None
            else None
        )
        self.task = self.progress.add_task("slices", total=None) if self.progress else None

    def __enter__(self) -> SliceBar:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            # The bar's last state stays on screen: how many slices the answer covers.
            self.progress.live.transient = False
            self.progress.stop()

    def update(self, progress: query_pb2.Progress) -> None:
        if self.progress is None or self.task is None:
            return
        total = int(progress.custom_stats.get("slices_total", 0)) or None
        done = int(progress.custom_stats.get("slices_done", 0))
        self.progress.update(self.task, total=total, completed=done)

    def pause(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def resume(self) -> None:
        if self.progress is not None:
            self.progress.start()


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
        if snapshot.final_slices:
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
    as_json: Annotated[
        bool, typer.Option("--json", help="Rows as a JSON array per snapshot.")
    ] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Rows as CSV.")] = False,
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
    """Run a KQL query and stream its progressive snapshots."""
    if as_json and as_csv:
        raise UsageError("--json and --csv are exclusive")
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
    fmt = "json" if as_json else "csv" if as_csv else "table" if interactive_out else "tsv"
    console = Console(
        file=sys.stdout,
        highlight=False,
        no_color=agent,
        width=None if interactive_out else WIDE,
        soft_wrap=not interactive_out,
    )
    err_console = Console(file=sys.stderr, highlight=False, no_color=agent)
    show_bar = fmt == "table" and sys.stderr.isatty() and not agent
    printer = Printer(fmt, console, err_console)
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
    with Gateway(connection) as gateway, SliceBar(err_console if show_bar else None) as bar:
        run = SearchRun(printer, bar, request_info, not no_stream, predicate, stop_cmd)
        bearer = gateway.token()
        try:
            outcome = run_query(connection.endpoint, bearer, request, timeout, run.make_reader())
        except AuthError:
            if not gateway.uses_stored_login or run.history is not None:
                raise
            gateway.refresh()
            outcome = run_query(
                connection.endpoint, gateway.token(), request, timeout, run.make_reader()
            )
        except CliError as exc:
            if run.history is not None:
                run.history.record(status="error", error=exc.message)
            raise
    code = finish(run, outcome, timeout, no_stream, allow_partial)
    if stats:
        for line in stats_lines(outcome.progress, time.monotonic() - started):
            printer.comment(line)
    if code:
        raise typer.Exit(code)


def finish(
    run: SearchRun, outcome: RunOutcome, timeout: float, no_stream: bool, allow_partial: bool
) -> int:
    final = outcome.last
    history = run._history()
    path = history.save_final(final)
    size = path.stat().st_size
    rows = len(final.primary.rows) if final else 0
    printer = run.printer
    if run.stop_reason is not None:
        status = "stopped_early"
        printer.comment(
            f"# Stopped Early - {run.stop_reason} at increment {run.stopped_at} - "
            f"{rows} rows - {path}"
        )
    elif final is not None and final.final_slices and not outcome.timed_out:
        status = "complete"
        printer.comment(f"# Query Complete - {rows} rows ({human_size(size)}) - {path}")
    else:
        status = "timeout" if outcome.timed_out else "soft_budget"
        number = final.number if final else 0
        slices = f"{final.slices_done}/{final.slices_total}" if final else "0/?"
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
    if status == "complete" or allow_partial:
        return 0
    return EXIT_INCOMPLETE
