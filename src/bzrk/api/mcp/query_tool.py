"""The ``query`` tool: one KQL run through the query executor, answered with its last snapshot.

It builds a :class:`~bzrk.engine.request.QueryRequest` for surface ``mcp``, folds the event
stream (:mod:`bzrk.api.mcp.results`), and while the run goes, sends request-scoped
notifications: coverage progress when the caller gave a ``progressToken``, and a few sampled
snapshot messages when it asked for ``info``/``debug`` logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from bzrk.api.commands import command_events, is_command
from bzrk.api.mcp.protocol import logs_enabled
from bzrk.api.mcp.results import Snapshot, SnapshotFolder, percent, table_json, table_text
from bzrk.api.mcp.tooling import Tool, ToolCall, ToolError, ToolOutcome, obj
from bzrk.engine.events import Done, Error, Location, Metadata, Progress
from bzrk.engine.request import QueryRequest, ResultLimits
from bzrk.engine.stop import StopPredicateError, parse_stop_when

DEFAULT_SINCE = "1h ago"
DEFAULT_MAX_ROWS = 100
MAX_MAX_ROWS = 1000
# Slack past timeout_ms before this surface stops waiting for the engine itself.
ENGINE_GRACE_S = 5.0
PROGRESS_INTERVAL_S = 0.25
COVERAGE_MARKS = (0.25, 0.5, 0.75)
MAX_SAMPLED_SNAPSHOTS = 6
PREVIEW_ROWS = 3

DESCRIPTION = """Run a KQL query against one bzrk database over a time window and return its result.

Field names are not guessable: before writing a query, call list_databases, list_tables and
discover_fields (and get_docs for the KQL dialect, e.g. topic "kql" or "otel-fields"). Every
query is time-bounded by since/until (default: the last hour).

The wait is timeout_ms (default 10 s; the server's cap applies, 300 s unless configured; a
larger value is an error). At the deadline the last complete snapshot comes back as an honest
partial (status "soft_budget", with coverage): narrow since, add a filter, pass stop_when, or
raise timeout_ms. stop_when ("<rows|column> <op> <number>", op one of >= <= > < == !=) ends the
scan as soon as a complete snapshot proves it (status "stopped_early"); "rows >= 1" answers
"does a match exist?". Only status "complete" means the whole window was scanned. Each run is
saved; its run_id can be read back with get_run."""

INPUT_SCHEMA = obj(
    {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "KQL text, e.g. \"default | where severity_text == 'ERROR' | count\".",
        },
        "database": {
            "type": "string",
            "minLength": 1,
            "description": 'Database name (see list_databases); usually "default".',
        },
        "since": {
            "type": "string",
            "description": 'Window start: "1h ago", "2d ago", "today", "yesterday", a date '
            'or RFC 3339. Default "1h ago".',
        },
        "until": {
            "type": "string",
            "description": "Window end (exclusive), same forms as since. Default now.",
        },
        "stop_when": {
            "type": "string",
            "description": "Stop early once a complete snapshot satisfies '<rows|column> <op> "
            '<number>\', e.g. "rows >= 1" or "n >= 50".',
        },
        "timeout_ms": {
            "type": "integer",
            "minimum": 1,
            "description": "How long to wait before answering with a partial result "
            "(default 10000; above the server cap is an error).",
        },
        "max_rows": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_MAX_ROWS,
            "description": f"Rows of each table to return (default {DEFAULT_MAX_ROWS}); the "
            "result says when more exist.",
        },
    },
    ("query", "database"),
)

_COLUMN = obj({"name": {"type": "string"}, "type": {"type": "string"}}, ("name", "type"))
_TABLE = obj(
    {
        "name": {"type": "string"},
        "columns": {"type": "array", "items": _COLUMN},
        "rows": {"type": "array", "items": {"type": "array"}},
        "row_count": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"},
    },
    ("name", "columns", "rows", "row_count", "truncated"),
)
_LOCATION = obj(
    {"line": {"type": "integer"}, "column": {"type": "integer"}, "offset": {"type": "integer"}},
    ("line", "column"),
)

OUTPUT_SCHEMA = obj(
    {
        "run_id": {"type": ["string", "null"]},
        "status": {"enum": ["complete", "stopped_early", "soft_budget"]},
        "partial": {"type": "boolean"},
        "coverage": {"type": "number", "minimum": 0, "maximum": 1},
        "stop_reason": {"type": ["string", "null"]},
        "database": {"type": "string"},
        "since": {"type": "string"},
        "until": {"type": ["string", "null"]},
        "table": {"type": "string"},
        "columns": {"type": "array", "items": _COLUMN},
        "rows": {"type": "array", "items": {"type": "array"}},
        "row_count": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"},
        "other_tables": {"type": "array", "items": _TABLE},
        "warnings": {
            "type": "array",
            "items": obj(
                {
                    "kind": {"type": "string"},
                    "message": {"type": "string"},
                    "location": {"anyOf": [_LOCATION, {"type": "null"}]},
                },
                ("kind", "message"),
            ),
        },
        "partial_failures": {
            "type": "array",
            "items": obj(
                {"message": {"type": "string"}, "segment_count": {"type": "integer"}},
                ("message",),
            ),
        },
        "visualization": {
            "anyOf": [
                obj(
                    {
                        "type": {"type": "string"},
                        "properties": {"type": "object"},
                        "table": {"type": "string"},
                    },
                    ("type",),
                ),
                {"type": "null"},
            ]
        },
        "notes": {"type": "array", "items": {"type": "string"}},
    },
    (
        "run_id",
        "status",
        "partial",
        "coverage",
        "columns",
        "rows",
        "row_count",
        "truncated",
        "warnings",
        "visualization",
    ),
)


def location_json(location: Location | None) -> dict[str, int] | None:
    if location is None:
        return None
    return {
        "line": location.start_line,
        "column": location.start_column,
        "offset": location.start_byte,
    }


def check_stop_when(text: str) -> None:
    """Refuse a malformed predicate before the run starts (the engine applies it)."""
    try:
        parse_stop_when(text)
    except StopPredicateError as exc:
        raise ToolError(f'{exc} (e.g. "rows >= 1")', code="InvalidStopWhen") from None


class Reporter:
    """Request-scoped notifications for one run: throttled progress and sampled snapshots."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.token = call.envelope.progress_token
        self.logs = logs_enabled(call.envelope.log_level, "info")
        self.last_percent = 0.0
        self.last_sent = 0.0
        self.sampled = 0
        self.next_mark = 0

    async def progress(self, coverage: float, rows: int | None, *, final: bool = False) -> None:
        if self.token is None:
            return
        percent = round(max(0.0, min(1.0, coverage)) * 100, 1)
        now = time.monotonic()
        if percent <= self.last_percent:
            return
        if not final and now - self.last_sent < PROGRESS_INTERVAL_S and percent < 100:
            return
        self.last_percent, self.last_sent = percent, now
        message = f"{percent:g}% of the time window scanned"
        if rows is not None:
            message += f", {rows:,} result rows so far"
        await self.call.notify(
            "notifications/progress",
            {"progressToken": self.token, "progress": percent, "total": 100, "message": message},
        )

    async def snapshot(self, snapshot: Snapshot, coverage: float, event: str) -> None:
        if not self.logs or self.sampled >= MAX_SAMPLED_SNAPSHOTS:
            return
        if event == "snapshot":
            first = snapshot.number == 1
            crossed = (
                self.next_mark < len(COVERAGE_MARKS) and coverage >= COVERAGE_MARKS[self.next_mark]
            )
            if not first and not crossed:
                return
            while (
                self.next_mark < len(COVERAGE_MARKS) and coverage >= COVERAGE_MARKS[self.next_mark]
            ):
                self.next_mark += 1
        self.sampled += 1
        primary = snapshot.primary()
        data: dict[str, Any] = {
            "event": event,
            "snapshot": snapshot.number,
            "coverage": round(coverage, 4),
            "rows": snapshot.row_count(),
        }
        if primary is not None:
            preview = table_json(primary, PREVIEW_ROWS)
            data["columns"] = [c["name"] for c in preview["columns"]]
            data["preview"] = preview["rows"]
        await self.call.notify(
            "notifications/message", {"level": "info", "logger": "bzrk.query", "data": data}
        )


async def run_query(call: ToolCall) -> ToolOutcome:
    args = call.arguments
    settings = call.app.settings
    timeout_ms = args.get("timeout_ms", settings.query_default_timeout_ms)
    if timeout_ms > settings.query_max_timeout_ms:
        raise ToolError(
            f"timeout_ms {timeout_ms} is above this server's cap of "
            f"{settings.query_max_timeout_ms} ms; pass a smaller value (or narrow since)",
            code="TimeoutAboveCap",
        )
    stop_when = args.get("stop_when")
    if stop_when is not None:
        check_stop_when(stop_when)
    await call.check_database(args["database"])
    executor = call.app.executor
    if executor is None:
        raise ToolError("this server has no query executor", code="Unavailable")
    since = args.get("since") or DEFAULT_SINCE
    request = QueryRequest(
        query=args["query"],
        database=args["database"],
        since=since,
        until=args.get("until"),
        timeout_ms=timeout_ms,
        stop_when=stop_when,
        limits=ResultLimits(max_rows=settings.query_max_result_rows),
        principal=call.principal_key,
        surface="mcp",
        client_request_id=str(call.envelope.id),
    )
    folder = SnapshotFolder()
    reporter = Reporter(call)
    error: Error | None = None
    engine_overran = False
    events = (
        command_events(call.app, call.principal, request.database, request.query, surface="mcp")
        if call.principal is not None and is_command(request.query)
        else executor.execute(request)
    )
    try:
        async with asyncio.timeout(timeout_ms / 1000 + ENGINE_GRACE_S):
            # A snapshot is reported with the coverage of the Progress that follows it.
            pending: Snapshot | None = None
            async for event in events:
                completed = folder.feed(event)
                if isinstance(event, Error):
                    error = event
                    break
                if isinstance(event, Progress):
                    await reporter.progress(event.coverage, _rows(folder))
                    if pending is not None:
                        await reporter.snapshot(pending, event.coverage, "snapshot")
                        pending = None
                elif completed is not None:
                    if pending is not None:
                        await reporter.snapshot(pending, _coverage(folder), "snapshot")
                    pending = completed
                elif isinstance(event, Done):
                    if pending is not None:
                        await reporter.snapshot(pending, event.coverage, "snapshot")
                    break
    except TimeoutError:
        engine_overran = True
    finally:
        # Closing the iterator is how a run is cancelled (client gone, deadline, or done).
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()

    if error is not None:
        raise ToolError(
            error.message + (f" (run {error.run_id})" if error.run_id else ""),
            code=error.code,
            location=location_json(error.location),
        )
    done = folder.done
    notes: list[str] = []
    if done is None and not engine_overran:
        raise ToolError("the query ended without a result; try again", code="Internal")
    if done is None:
        coverage = _coverage(folder)
        done = Done(status="soft_budget", coverage=coverage, stop_reason="surface_deadline")
        notes.append(
            "the engine did not finish within timeout_ms; this is the last complete snapshot"
        )
    answer = folder.answer()
    if done.status != "complete":
        await reporter.snapshot(answer, done.coverage, "stop")
    await reporter.progress(done.coverage, answer.row_count(), final=True)
    return render(args, since, done, answer, notes)


def _coverage(folder: SnapshotFolder) -> float:
    return folder.progress.coverage if folder.progress is not None else 0.0


def _rows(folder: SnapshotFolder) -> int | None:
    return folder.complete.row_count() if folder.complete is not None else None


def render(
    args: dict[str, Any], since: str, done: Done, answer: Snapshot, notes: list[str]
) -> ToolOutcome:
    max_rows = args.get("max_rows", DEFAULT_MAX_ROWS)
    tables = [table_json(t, max_rows) for t in answer.tables.values()]
    primary = (
        tables[0]
        if tables
        else {
            "name": "PrimaryResult",
            "columns": [],
            "rows": [],
            "row_count": 0,
            "truncated": False,
        }
    )
    meta: Metadata | None = answer.metadata
    warnings = [
        {"kind": w.kind, "message": w.message, "location": location_json(w.location)}
        for w in (meta.warnings if meta else ())
    ]
    failures = [
        {"message": f.message, "segment_count": f.segment_count}
        for f in (meta.partial_failures if meta else ())
    ]
    viz = meta.visualization if meta else None
    coverage = max(0.0, min(1.0, done.coverage))
    partial = done.status != "complete" or coverage < 1.0
    for table in tables:
        if table["truncated"]:
            notes.append(
                f"table {table['name']}: showing {len(table['rows'])} of {table['row_count']} rows; "
                "summarize, project fewer columns, or raise max_rows to see more"
            )
    if done.status == "soft_budget":
        notes.append(
            f"partial result at the deadline ({percent(coverage)} of the window scanned): narrow since, "
            "add a filter, pass stop_when, or raise timeout_ms"
        )
    elif done.status == "stopped_early":
        notes.append(
            f"stopped early by stop_when after {percent(coverage)} of the window: a lower bound, "
            "not a total"
        )
    structured = {
        "run_id": done.run_id,
        "status": done.status,
        "partial": partial,
        "coverage": coverage,
        "stop_reason": done.stop_reason,
        "database": args["database"],
        "since": since,
        "until": args.get("until"),
        "table": primary["name"],
        "columns": primary["columns"],
        "rows": primary["rows"],
        "row_count": primary["row_count"],
        "truncated": primary["truncated"],
        "other_tables": tables[1:],
        "warnings": warnings,
        "partial_failures": failures,
        "visualization": (
            {"type": viz.type, "properties": dict(viz.properties), "table": viz.table}
            if viz
            else None
        ),
        "notes": notes,
    }
    head = (
        f"status: {done.status} · coverage {percent(coverage)} · run_id {done.run_id or '-'} · "
        f"{primary['row_count']} row(s)"
    )
    parts = [head, "", table_text(primary)]
    for table in tables[1:]:
        parts += ["", f"table {table['name']} ({table['row_count']} row(s)):", table_text(table)]
    if warnings:
        parts += ["", "warnings:"] + [f"- {w['kind']}: {w['message']}" for w in warnings]
    if failures:
        parts += ["", "partial failures:"] + [f"- {f['message']}" for f in failures]
    if viz:
        parts += ["", f"visualization: {viz.type}"]
    if notes:
        parts += ["", "notes:"] + [f"- {n}" for n in notes]
    return ToolOutcome(structured, "\n".join(parts))


QUERY_TOOL = Tool(
    name="query",
    title="Run a KQL query",
    description=DESCRIPTION,
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    handler=run_query,
    streams=True,
)
