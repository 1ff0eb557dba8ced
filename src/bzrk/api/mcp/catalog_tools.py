"""The discovery tools: ``list_databases``, ``list_tables``, ``discover_fields``, ``get_run``, ``get_docs``.

Schema questions go through the :class:`~bzrk.engine.request.SchemaProvider` the composition
registers as ``ctx.components["schema"]``; without one, databases and tables come from the
metadata store and field discovery reports itself unavailable. Runs are read from the
metadata store's ``runs`` table; docs are package data under ``docs/``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from importlib import resources
from typing import Any

import sqlalchemy as sa

from bzrk.api.access import queryable, visible_databases
from bzrk.api.mcp.tooling import Tool, ToolCall, ToolError, ToolOutcome, obj
from bzrk.engine.request import DatabaseInfo, FieldInfo, SchemaProvider, TableInfo
from bzrk.engine.timewindow import TimeExpressionError, now_ticks, parse_instant
from bzrk.meta import schema as meta_schema
from bzrk.meta.store import MetaStore

log = logging.getLogger(__name__)

SCHEMA_FIRST = "Field names are not guessable: use this before writing a query."
MAX_RUN_RESULT_BYTES = 200_000
MAX_FIELDS = 1000


class MetaSchemaProvider:
    """Databases and tables from the metadata store; no field statistics (storage owns those)."""

    def __init__(self, meta: MetaStore) -> None:
        self.meta = meta

    def list_databases(self) -> list[DatabaseInfo]:
        tables = self.meta.list_tables()
        return [
            DatabaseInfo(
                d.id, d.name, tuple(sorted(t.name for t in tables if t.database_id == d.id))
            )
            for d in self.meta.list_databases()
        ]

    def list_tables(self, database: str) -> list[TableInfo]:
        db = self.meta.get_database(database)
        return [
            TableInfo(t.id, db.name, t.name, (), t.retention_days)
            for t in self.meta.list_tables(db.name)
        ]

    def discover_fields(self, database: str, table: str, **_: Any) -> list[FieldInfo]:
        raise ToolError(
            "field discovery is not available on this server yet; use a query such as "
            f"'{table} | take 5' over a short window to see the columns",
            code="Unavailable",
        )


def schema_provider(call: ToolCall) -> SchemaProvider:
    provider = call.app.components.get("schema")
    return provider if provider is not None else MetaSchemaProvider(call.app.meta)


async def _blocking(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a provider call in a thread; its failures become tool errors the model can act on."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except ToolError:
        raise
    except LookupError as exc:
        raise ToolError(str(exc).strip("'\"") or "not found", code="NotFound") from None
    except Exception as exc:
        # Domain errors of the metadata store and the storage catalogue read well as they are.
        if type(exc).__name__ in ("NotFound", "StorageError", "InvalidName", "SchemaError"):
            code = "NotFound" if type(exc).__name__ == "NotFound" else type(exc).__name__
            raise ToolError(str(exc), code=code) from None
        log.exception("schema provider failed")
        raise ToolError(f"schema lookup failed: {exc}", code="Internal") from None


# ---- list_databases ---------------------------------------------------------------------


async def list_databases(call: ToolCall) -> ToolOutcome:
    listed = await _blocking(schema_provider(call).list_databases)
    databases = sorted(
        await visible_databases(call.app, call.principal, listed), key=lambda d: d.name
    )
    items = [{"name": d.name, "id": d.id, "tables": list(d.tables)} for d in databases]
    lines = [f"{len(items)} database(s):"] + [
        f"- {d['name']}" + (f" (tables: {', '.join(d['tables'])})" if d["tables"] else "")
        for d in items
    ]
    lines.append("Next: list_tables(database) and discover_fields(database, table).")
    return ToolOutcome({"databases": items}, "\n".join(lines))


LIST_DATABASES = Tool(
    name="list_databases",
    title="List databases",
    description="List the databases you may query, with their tables. Start here: " + SCHEMA_FIRST,
    input_schema={"type": "object", "additionalProperties": False},
    output_schema=obj(
        {
            "databases": {
                "type": "array",
                "items": obj(
                    {
                        "name": {"type": "string"},
                        "id": {"type": "string"},
                        "tables": {"type": "array", "items": {"type": "string"}},
                    },
                    ("name", "id", "tables"),
                ),
            }
        },
        ("databases",),
    ),
    handler=list_databases,
)

# ---- list_tables ------------------------------------------------------------------------


async def list_tables(call: ToolCall) -> ToolOutcome:
    database = call.arguments["database"]
    await call.check_database(database)
    tables = sorted(
        await _blocking(schema_provider(call).list_tables, database), key=lambda t: t.name
    )
    items = [
        {
            "name": t.name,
            "id": t.id,
            "columns": [{"name": n, "type": ty} for n, ty in t.columns],
            "retention_days": t.retention_days,
        }
        for t in tables
    ]
    lines = [f"database {database}: {len(items)} table(s)"]
    for t in items:
        cols = ", ".join(f"{c['name']}:{c['type']}" for c in t["columns"])
        lines.append(f"- {t['name']}" + (f" — {cols}" if cols else ""))
    lines.append(
        "Bags (resource, attributes, scope) hold most fields: discover_fields lists their paths."
    )
    return ToolOutcome({"database": database, "tables": items}, "\n".join(lines))


LIST_TABLES = Tool(
    name="list_tables",
    title="List tables",
    description="List the tables of one database with their top-level columns and types. "
    + SCHEMA_FIRST,
    input_schema=obj(
        {"database": {"type": "string", "minLength": 1, "description": "Database name."}},
        ("database",),
    ),
    output_schema=obj(
        {
            "database": {"type": "string"},
            "tables": {
                "type": "array",
                "items": obj(
                    {
                        "name": {"type": "string"},
                        "id": {"type": "string"},
                        "columns": {
                            "type": "array",
                            "items": obj(
                                {"name": {"type": "string"}, "type": {"type": "string"}},
                                ("name", "type"),
                            ),
                        },
                        "retention_days": {"type": ["integer", "null"]},
                    },
                    ("name", "id", "columns"),
                ),
            },
        },
        ("database", "tables"),
    ),
    handler=list_tables,
)

# ---- discover_fields --------------------------------------------------------------------


async def discover_fields(call: ToolCall) -> ToolOutcome:
    args = call.arguments
    await call.check_database(args["database"])
    now = now_ticks()
    try:
        since_ticks = parse_instant(args.get("since") or "1h ago", now_ticks=now)
        until_ticks = parse_instant(args["until"], now_ticks=now) if args.get("until") else None
    except TimeExpressionError as exc:
        raise ToolError(str(exc), code="InvalidTime") from None
    limit = args.get("limit", 200)
    fields: list[FieldInfo] = await _blocking(
        schema_provider(call).discover_fields,
        args["database"],
        args["table"],
        since_ticks=since_ticks,
        until_ticks=until_ticks,
        name_filter=args.get("name_filter"),
        limit=limit,
    )
    items = [
        {
            "path": f.path,
            "type": f.type,
            "frequency": f.frequency,
            "cardinality": f.cardinality,
            "samples": list(f.samples),
        }
        for f in fields[:MAX_FIELDS]
    ]
    lines = [
        f"{args['database']}.{args['table']}: {len(items)} field(s) seen since "
        f"{args.get('since') or '1h ago'} (path  type  frequency  samples)"
    ]
    for f in items:
        samples = ", ".join(s if len(s) <= 60 else s[:59] + "…" for s in f["samples"][:3])
        lines.append(f"- {f['path']}  {f['type']}  {f['frequency']:.0%}  {samples}")
    if not items:
        lines.append("(no fields: widen since, or check the table with list_tables)")
    lines.append(
        "Use paths as written, e.g. resource.service.name or attributes['http.route'] in KQL."
    )
    structured = {
        "database": args["database"],
        "table": args["table"],
        "since": args.get("since") or "1h ago",
        "until": args.get("until"),
        "fields": items,
    }
    return ToolOutcome(structured, "\n".join(lines))


DISCOVER_FIELDS = Tool(
    name="discover_fields",
    title="Discover fields",
    description="List the field paths actually present in a table over a time window "
    "(top-level columns and paths inside resource/attributes/scope bags), with type, share "
    "of rows holding them, cardinality and sample values. " + SCHEMA_FIRST,
    input_schema=obj(
        {
            "database": {"type": "string", "minLength": 1},
            "table": {"type": "string", "minLength": 1},
            "since": {
                "type": "string",
                "description": 'Window start (default "1h ago"); same forms as query.',
            },
            "until": {"type": "string", "description": "Window end (default now)."},
            "name_filter": {
                "type": "string",
                "description": "Only paths containing this text (case-insensitive); "
                "'*' wildcards allowed.",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_FIELDS},
        },
        ("database", "table"),
    ),
    output_schema=obj(
        {
            "database": {"type": "string"},
            "table": {"type": "string"},
            "since": {"type": "string"},
            "until": {"type": ["string", "null"]},
            "fields": {
                "type": "array",
                "items": obj(
                    {
                        "path": {"type": "string"},
                        "type": {"type": "string"},
                        "frequency": {"type": "number"},
                        "cardinality": {"type": ["integer", "null"]},
                        "samples": {"type": "array", "items": {"type": "string"}},
                    },
                    ("path", "type", "frequency", "samples"),
                ),
            },
        },
        ("database", "table", "fields"),
    ),
    handler=discover_fields,
)

# ---- get_run ----------------------------------------------------------------------------


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _read_run(meta: MetaStore, run_id: str) -> dict[str, Any] | None:
    runs = meta_schema.runs
    with meta.engine.connect() as conn:
        row = conn.execute(sa.select(runs).where(runs.c.id == run_id)).mappings().first()
    return dict(row) if row is not None else None


async def get_run(call: ToolCall) -> ToolOutcome:
    run_id = call.arguments["run_id"]
    row = await asyncio.to_thread(_read_run, call.app.meta, run_id)
    # Owners by principal key (a user and a service principal may share a name); admins see
    # every run. A run's result stays readable only while its database is.
    visible = (
        row is not None
        and (
            row["principal"] == call.principal_key
            or (call.principal is not None and call.principal.is_admin)
        )
        and (await queryable(call.app, call.principal))(row["database"])
    )
    if row is None or not visible:
        # Someone else's run looks exactly like a missing one.
        raise ToolError(f"no run {run_id!r}", code="NotFound")
    result = row["result"]
    notes: list[str] = []
    if result is not None and len(json.dumps(result, default=str)) > MAX_RUN_RESULT_BYTES:
        result = None
        notes.append("the saved result is too large to return here; re-run the query to see it")
    structured = {
        "run_id": row["id"],
        "query": row["query"],
        "database": row["database"],
        "parameters": row["parameters"] or {},
        "principal": row["principal"],
        "surface": row["surface"],
        "status": row["status"],
        "started_at": _iso(row["started_at"]),
        "finished_at": _iso(row["finished_at"]),
        "progress": row["progress"],
        "result": result,
        "error": row["error"],
        "notes": notes,
    }
    lines = [
        f"run {row['id']}: {row['status']} (surface {row['surface'] or '-'}, "
        f"started {structured['started_at']}, finished {structured['finished_at'] or '-'})",
        f"database: {row['database']}",
        "query:",
        row["query"],
    ]
    if row["parameters"]:
        lines.append(f"parameters: {json.dumps(row['parameters'], default=str)}")
    if row["error"]:
        lines.append(f"error: {json.dumps(row['error'], default=str)}")
    if result is not None:
        lines += ["result:", json.dumps(result, default=str)[:20_000]]
    lines += notes
    return ToolOutcome(structured, "\n".join(lines))


GET_RUN = Tool(
    name="get_run",
    title="Get a saved run",
    description="Read back a saved query run by its run_id (from the query tool): query text, "
    "parameters, status, timings, final progress and the saved result.",
    input_schema=obj({"run_id": {"type": "string", "minLength": 1}}, ("run_id",)),
    output_schema=obj(
        {
            "run_id": {"type": "string"},
            "query": {"type": "string"},
            "database": {"type": "string"},
            "parameters": {"type": "object"},
            "principal": {"type": "string"},
            "surface": {"type": "string"},
            "status": {"type": "string"},
            "started_at": {"type": ["string", "null"]},
            "finished_at": {"type": ["string", "null"]},
            "progress": {"type": ["object", "null"]},
            "result": {"type": ["object", "array", "null"]},
            "error": {"type": ["object", "string", "null"]},
            "notes": {"type": "array", "items": {"type": "string"}},
        },
        ("run_id", "query", "database", "status", "started_at"),
    ),
    handler=get_run,
)

# ---- get_docs ---------------------------------------------------------------------------


def doc_topics() -> dict[str, str]:
    """Topic name -> Markdown text, from the package's ``docs/*.md``."""
    folder = resources.files("bzrk.api.mcp").joinpath("docs")
    return {
        entry.name[: -len(".md")]: entry.read_text(encoding="utf-8")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".md")
    }


DOCS = doc_topics()


def _summary(text: str) -> str:
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            return line.strip()
    return ""


async def get_docs(call: ToolCall) -> ToolOutcome:
    topic = call.arguments.get("topic")
    if topic is None:
        topics = [{"topic": name, "summary": _summary(text)} for name, text in DOCS.items()]
        text = "Reference topics (call get_docs with one):\n" + "\n".join(
            f"- {t['topic']}: {t['summary']}" for t in topics
        )
        return ToolOutcome({"topic": None, "topics": topics, "text": text}, text)
    text = DOCS[topic]
    return ToolOutcome({"topic": topic, "topics": [], "text": text}, text)


GET_DOCS = Tool(
    name="get_docs",
    title="Read bzrk reference docs",
    description="Bundled reference for bzrk's KQL dialect and query semantics. Topics: "
    + ", ".join(DOCS)
    + ". Without a topic: the list of topics.",
    input_schema=obj({"topic": {"enum": list(DOCS), "description": "Which reference page."}}),
    output_schema=obj(
        {
            "topic": {"type": ["string", "null"]},
            "topics": {
                "type": "array",
                "items": obj(
                    {"topic": {"type": "string"}, "summary": {"type": "string"}},
                    ("topic", "summary"),
                ),
            },
            "text": {"type": "string"},
        },
        ("topic", "topics", "text"),
    ),
    handler=get_docs,
)

__all__ = [
    "DISCOVER_FIELDS",
    "GET_DOCS",
    "GET_RUN",
    "LIST_DATABASES",
    "LIST_TABLES",
    "MetaSchemaProvider",
]
