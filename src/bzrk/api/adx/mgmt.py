"""Management commands (``.show ...``) answered from the :class:`SchemaProvider`.

Each command is a pattern plus a handler that returns one result table; the app encodes it
as v1 (``/v1/rest/mgmt``, ``/v1/rest/query``) or v2 like any query result. Column orders are
Kusto's, since Grafana reads ``.show databases`` by position (adx.md §9.1).

Access is ADX's: every listing (``.show databases``, ``.show [databases] schema``) holds only
the databases the caller may query, and a command naming one the caller may not query is
refused with ``AccessDenied`` (403) — for an unknown database too, so a refusal does not tell
whether it exists. The decision is :func:`bzrk.auth.permissions.authorize`'s.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import bzrk
from bzrk.api.access import ACCESS_DENIED, refusal_now
from bzrk.api.adx.errors import AdxError
from bzrk.api.adx.request import strip_comments
from bzrk.api.adx.values import kusto_type
from bzrk.auth import permissions
from bzrk.auth.internal import Principal
from bzrk.engine.events import (
    TICKS_PER_SECOND,
    Column,
    Done,
    Event,
    Metadata,
    RowBatch,
    TableSchema,
)
from bzrk.engine.request import DatabaseInfo, SchemaProvider, TableInfo
from bzrk.server.context import AppContext

_ITERATION = "command"
_BUILD_TIME = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class CommandTable:
    columns: tuple[Column, ...]
    rows: list[list[Any]]

    def events(self, name: str = "Table_0") -> list[Event]:
        return [
            TableSchema(name, self.columns),
            RowBatch(name, _ITERATION, self.rows, True),
            Metadata(_ITERATION),
            Done(),
        ]


def _columns(*spec: str) -> tuple[Column, ...]:
    out = []
    for item in spec:
        name, kind = item.split(":")
        out.append(Column(name, kind))  # type: ignore[arg-type]
    return tuple(out)


SHOW_DATABASES_COLUMNS = _columns(
    "DatabaseName:string",
    "PersistentStorage:string",
    "Version:string",
    "IsCurrent:bool",
    "DatabaseAccessMode:string",
    "PrettyName:string",
    "ReservedSlot1:bool",
    "DatabaseId:guid",
    "InTransitionTo:string",
    "SuspensionState:string",
)
SCHEMA_TABLE_COLUMNS = _columns(
    "DatabaseName:string",
    "TableName:string",
    "ColumnName:string",
    "ColumnType:string",
    "IsDefaultTable:bool",
    "IsDefaultColumn:bool",
    "PrettyName:string",
    "Version:string",
    "Folder:string",
    "DocString:string",
)
SCHEMA_JSON_COLUMNS = _columns("DatabaseSchema:string")
SHOW_TABLES_COLUMNS = _columns(
    "TableName:string", "DatabaseName:string", "Folder:string", "DocString:string"
)
TABLE_SCHEMA_COLUMNS = _columns(
    "TableName:string",
    "Schema:string",
    "DatabaseName:string",
    "Folder:string",
    "DocString:string",
)
SHOW_FUNCTIONS_COLUMNS = _columns(
    "Name:string", "Parameters:string", "Body:string", "Folder:string", "DocString:string"
)
SHOW_VERSION_COLUMNS = _columns(
    "BuildVersion:string",
    "BuildTime:datetime",
    "ServiceType:string",
    "ProductVersion:string",
    "ServiceOffering:string",
)

# A name as Kusto writes it: bare, quoted, or bracketed-quoted (['my-db']).
_NAME = r"""(?:\[\s*'[^']*'\s*\]|\[\s*"[^"]*"\s*\]|'[^']*'|"[^"]*"|[\w$.\-]+)"""
_NAMES = rf"\(\s*{_NAME}(?:\s*,\s*{_NAME})*\s*\)"
_WITH = r"(?:\s+with\s*\([^)]*\))?"


def _unquote(name: str) -> str:
    name = name.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1].strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]
    return name


def _names(group: str | None) -> list[str] | None:
    if not group:
        return None
    return [_unquote(n) for n in re.findall(_NAME, group.strip()[1:-1])]


@dataclass(frozen=True, slots=True)
class CommandContext:
    schema: SchemaProvider
    principal: Principal
    db: str  # the request's database ("" allowed for commands)
    app: AppContext  # for the access check (metadata store, audit log)
    surface: str = "adx"  # which surface asked, for the audit log (bzrk.api.commands)

    def check(self, database: str) -> None:
        """Refuse (``AccessDenied``) a command on a database the caller may not query."""
        denied = refusal_now(self.app, self.principal, database, surface=self.surface)
        if denied is not None:
            raise AdxError(ACCESS_DENIED, denied.message)

    def databases(self) -> list[DatabaseInfo]:
        """The databases the caller may see: what every listing holds."""
        return permissions.visible(self.app.meta, self.principal, self.schema.list_databases())


Handler = Callable[[CommandContext, "re.Match[str]"], CommandTable]


def find_database(schema: SchemaProvider, name: str) -> DatabaseInfo | None:
    """The database called ``name`` (or with that id); case-insensitive as a fallback."""
    databases = schema.list_databases()
    for db in databases:
        if name in (db.name, db.id):
            return db
    for db in databases:
        if db.name.lower() == name.lower():
            return db
    return None


def _find_database(ctx: CommandContext, name: str) -> DatabaseInfo:
    db = find_database(ctx.schema, name)
    ctx.check(db.name if db is not None else name)
    if db is None:
        raise AdxError("DatabaseNotFound", f"database '{name}' not found")
    return db


def _current_database(ctx: CommandContext, command: str) -> DatabaseInfo:
    if not ctx.db:
        raise AdxError("BadRequest", f"'{command}' needs a database: set 'db' in the request")
    return _find_database(ctx, ctx.db)


def _guid(text: str) -> str:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bzrk:database:{text}"))


def _show_databases(ctx: CommandContext, match: re.Match[str]) -> CommandTable:
    rows = [
        [db.name, "", "v1.0", db.name == ctx.db, "ReadWrite", "", False, _guid(db.id), "", ""]
        for db in ctx.databases()
    ]
    return CommandTable(SHOW_DATABASES_COLUMNS, rows)


def _selected(ctx: CommandContext, names: list[str] | None) -> list[DatabaseInfo]:
    if names is None:
        return ctx.databases()
    return [_find_database(ctx, name) for name in names]


def _table_json(table: TableInfo) -> dict[str, Any]:
    return {
        "Name": table.name,
        "EntityType": "Table",
        "DocString": "",
        "Folder": "",
        "OrderedColumns": [
            {
                "Name": name,
                "Type": kusto_type(kind).clr_type,
                "CslType": kusto_type(kind).column_type,
                "DocString": "",
            }
            for name, kind in table.columns
        ],
    }


def schema_json(ctx: CommandContext, databases: Sequence[DatabaseInfo]) -> dict[str, Any]:
    """The ``.show databases schema as json`` document monaco-kusto and Grafana read."""
    out: dict[str, Any] = {}
    for db in databases:
        tables = ctx.schema.list_tables(db.name)
        out[db.name] = {
            "Name": db.name,
            "Tables": {t.name: _table_json(t) for t in tables},
            "ExternalTables": {},
            "MaterializedViews": {},
            "Functions": {},
            "EntityGroups": {},
            "Graphs": {},
            "StoredQueryResults": {},
            "MajorVersion": 1,
            "MinorVersion": 0,
            "DatabaseAccessMode": "ReadWrite",
        }
    return {"Plugins": [], "Databases": out}


def _schema(ctx: CommandContext, databases: list[DatabaseInfo], form: str | None) -> CommandTable:
    if form and form.lower() == "json":
        text = json.dumps(schema_json(ctx, databases), separators=(",", ":"))
        return CommandTable(SCHEMA_JSON_COLUMNS, [[text]])
    rows: list[list[Any]] = []
    if form and form.lower() == "csl":
        for db in databases:
            for table in ctx.schema.list_tables(db.name):
                rows.append([table.name, _csl_schema(table), db.name, "", ""])
        return CommandTable(TABLE_SCHEMA_COLUMNS, rows)
    for db in databases:
        rows.append([db.name, "", "", "", False, False, "", "v1.0", "", ""])
        for table in ctx.schema.list_tables(db.name):
            rows.append([db.name, table.name, "", "", False, False, "", "", "", ""])
            for name, kind in table.columns:
                clr = kusto_type(kind).clr_type
                rows.append([db.name, table.name, name, clr, False, False, "", "", "", ""])
    return CommandTable(SCHEMA_TABLE_COLUMNS, rows)


def _show_databases_schema(ctx: CommandContext, match: re.Match[str]) -> CommandTable:
    return _schema(ctx, _selected(ctx, _names(match["names"])), match["form"])


def _show_database_schema(ctx: CommandContext, match: re.Match[str]) -> CommandTable:
    form = match["form"] or ("csl" if match["csl"] else None)
    return _schema(ctx, [_find_database(ctx, _unquote(match["name"]))], form)


def _show_tables(ctx: CommandContext, match: re.Match[str]) -> CommandTable:
    db = _current_database(ctx, ".show tables")
    wanted = _names(match["names"])
    tables = ctx.schema.list_tables(db.name)
    if wanted is not None:
        tables = [t for t in tables if t.name in wanted]
    return CommandTable(SHOW_TABLES_COLUMNS, [[t.name, db.name, "", ""] for t in tables])


def _csl_schema(table: TableInfo) -> str:
    return ",".join(
        f"{_csl_name(name)}:{kusto_type(kind).column_type}" for name, kind in table.columns
    )


def _csl_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][\w]*", name) else f"['{name}']"


def _show_table_schema(ctx: CommandContext, match: re.Match[str]) -> CommandTable:
    db = _current_database(ctx, ".show table")
    name = _unquote(match["name"])
    table = next((t for t in ctx.schema.list_tables(db.name) if t.name == name), None)
    if table is None:
        raise AdxError("TableNotFound", f"table '{name}' not found in database '{db.name}'")
    if match["csl"]:
        schema = _csl_schema(table)
    else:
        schema = json.dumps(
            {
                "Name": table.name,
                "OrderedColumns": _table_json(table)["OrderedColumns"],
                "Folder": "",
                "DocString": "",
            },
            separators=(",", ":"),
        )
    return CommandTable(TABLE_SCHEMA_COLUMNS, [[table.name, schema, db.name, "", ""]])


def _show_functions(ctx: CommandContext, match: re.Match[str]) -> CommandTable:
    # bzrk has no stored functions yet: the table is empty but well-formed.
    return CommandTable(SHOW_FUNCTIONS_COLUMNS, [])


def _show_version(ctx: CommandContext, match: re.Match[str]) -> CommandTable:
    build = int(_BUILD_TIME.timestamp()) * TICKS_PER_SECOND
    version = bzrk.__version__
    return CommandTable(
        SHOW_VERSION_COLUMNS, [[version, build, "Engine", f"bzrk {version}", "bzrk"]]
    )


# The one command table: pattern (matched whole, case-insensitive) → handler.
COMMANDS: tuple[tuple[re.Pattern[str], Handler], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE | re.DOTALL), handler)
    for pattern, handler in (
        (r"\.show\s+databases", _show_databases),
        (rf"\.show\s+(?P<names>)?schema(?:\s+as\s+(?P<form>json))?{_WITH}", _show_databases_schema),
        (
            rf"\.show\s+databases(?:\s*(?P<names>{_NAMES}))?\s+schema"
            rf"(?:\s+as\s+(?P<form>json|csl))?{_WITH}",
            _show_databases_schema,
        ),
        (
            rf"\.show\s+database\s+(?P<name>{_NAME})\s+(?:(?P<csl>cslschema)|schema"
            rf"(?:\s+as\s+(?P<form>json|csl))?){_WITH}",
            _show_database_schema,
        ),
        (rf"\.show\s+tables(?:\s*(?P<names>{_NAMES}))?", _show_tables),
        (
            rf"\.show\s+table\s+(?P<name>{_NAME})\s+(?:(?P<csl>cslschema)|schema(?:\s+as\s+json)?)",
            _show_table_schema,
        ),
        (r"\.show\s+functions", _show_functions),
        (r"\.show\s+version", _show_version),
    )
)


def run_command(ctx: CommandContext, csl: str) -> CommandTable:
    """Run one management command; raises :class:`AdxError` for unknown or refused ones."""
    text = strip_comments(csl).rstrip(";").strip()
    for pattern, handler in COMMANDS:
        match = pattern.fullmatch(text)
        if match:
            return handler(ctx, match)
    words = " ".join(text.split()[:3])
    raise AdxError(
        "UnknownCommand",
        f"unknown or unsupported management command '{words}'; supported: "
        ".show databases, .show databases schema [as json], .show database X schema [as json], "
        ".show schema [as json], "
        ".show tables, .show table T schema [as json], .show table T cslschema, "
        ".show functions, .show version",
    )
