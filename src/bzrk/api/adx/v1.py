"""The v1 response (``/v1/rest/query``, ``/v1/rest/mgmt``): ``{"Tables": [...]}``, streamed.

Queries answer ``Table_0..Table_{n-1}`` (the result tables), the ``@ExtendedProperties``
table, a ``QueryStatus`` table and, last, the table of contents that names them (Python
renames tables from it; Grafana reads ``Tables[0]`` only). Management commands answer their
tables alone, with no table of contents. Columns carry both ``DataType`` and ``ColumnType``
(adx.md §7). A failure after the first byte becomes an ``{"Exceptions": [...]}`` row in the
open table and a top-level ``"Exceptions"`` list, which Grafana reports.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

from bzrk.api.adx.errors import RequestContext
from bzrk.api.adx.frames import (
    Close,
    Open,
    Rows,
    RunSummary,
    SequentialTables,
    StreamContractError,
    visualization_json,
)
from bzrk.api.adx.v2 import ROWS_PER_CHUNK
from bzrk.api.adx.values import RowEncoder, dumps, encode_datetime, v1_columns
from bzrk.engine.events import (
    TICKS_PER_SECOND,
    Done,
    Error,
    Event,
    Metadata,
    Progress,
    RowBatch,
    TableSchema,
)

_STATUS_COLUMNS = [
    {"ColumnName": name, "DataType": data_type, "ColumnType": kind}
    for name, data_type, kind in (
        ("Timestamp", "DateTime", "datetime"),
        ("Severity", "Int32", "int"),
        ("SeverityName", "String", "string"),
        ("StatusCode", "Int32", "int"),
        ("StatusDescription", "String", "string"),
        ("Count", "Int32", "int"),
        ("RequestId", "Guid", "guid"),
        ("ActivityId", "Guid", "guid"),
        ("SubActivityId", "Guid", "guid"),
        ("ClientActivityId", "String", "string"),
    )
]
_TOC_COLUMNS = [
    {"ColumnName": name, "DataType": data_type, "ColumnType": kind}
    for name, data_type, kind in (
        ("Ordinal", "Int64", "long"),
        ("Kind", "String", "string"),
        ("Name", "String", "string"),
        ("Id", "String", "string"),
        ("PrettyName", "String", "string"),
    )
]
_VALUE_COLUMNS = [{"ColumnName": "Value", "DataType": "String", "ColumnType": "string"}]
_SEVERITY = {2: "Error", 3: "Warning", 4: "Info"}


async def encode_v1(
    events: AsyncIterator[Event], request: RequestContext, *, command: bool = False
) -> AsyncIterator[bytes]:
    """Encode a run as v1 tables; ``command`` selects the management-command layout."""
    tables = SequentialTables()
    encoders: list[RowEncoder] = []
    summary = RunSummary()
    state = {"open": -1, "first_row": True}
    bool_data_type = "Boolean" if command else "SByte"

    def steps_text(steps: list[Open | Rows | Close]) -> list[str]:
        out: list[str] = []
        for step in steps:
            if isinstance(step, Open):
                state["open"], state["first_row"] = step.index, True
                schema = tables.schemas[step.index]
                head = dumps(
                    {
                        "TableName": f"Table_{step.index}",
                        "Columns": v1_columns(schema.columns, bool_data_type=bool_data_type),
                        "Rows": [],
                    }
                )
                out.append(("" if step.index == 0 else ",") + head[:-2])
            elif isinstance(step, Rows):
                encoder = encoders[state["open"]]
                for i in range(0, len(step.rows), ROWS_PER_CHUNK):
                    chunk = step.rows[i : i + ROWS_PER_CHUNK]
                    out.append(("" if state["first_row"] else ",") + encoder.encode_many(chunk))
                    state["first_row"] = False
            else:
                out.append("]}")
                state["open"] = -1
        return out

    yield b'{"Tables":['
    async for event in events:
        if isinstance(event, TableSchema):
            if all(s.table != event.table for s in tables.schemas):
                tables.add_schema(event)
                encoders.append(RowEncoder(event.columns))
            continue
        if isinstance(event, RowBatch):
            try:
                for text in steps_text(tables.batch(event)):
                    yield text.encode()
                continue
            except StreamContractError as exc:
                event = Error(code="Internal", message=str(exc))
        if isinstance(event, Metadata):
            summary.metadata = event
            for text in steps_text(tables.drain()):
                yield text.encode()
        elif isinstance(event, Progress):
            summary.progress = event
        elif isinstance(event, Done):
            summary.done = event
            break
        elif isinstance(event, Error):
            summary.error = event
            break

    out: list[str] = []
    error = summary.error
    if error is not None:
        out += steps_text(tables.drain())
        if state["open"] < 0:
            empty = TableSchema("PrimaryResult", ())
            tables.add_schema(empty)
            encoders.append(RowEncoder(()))
            out += steps_text(tables.drain())
        out.append(("" if state["first_row"] else ",") + dumps({"Exceptions": [error.message]}))
        out += steps_text([Close(state["open"])])
    else:
        out += steps_text(tables.close())
    if not command:
        out.append(_side_tables(len(tables.schemas), tables, summary, request))
    out.append("]")
    if error is not None:
        out.append(',"Exceptions":' + dumps([error.message]))
    out.append("}")
    yield "".join(out).encode()


def _side_tables(
    count: int, tables: SequentialTables, summary: RunSummary, request: RequestContext
) -> str:
    """``@ExtendedProperties``, ``QueryStatus`` and the table of contents."""
    now = encode_datetime(int(time.time() * TICKS_PER_SECOND))
    prefix = "," if count else ""
    status_rows = [
        [
            now,
            3,
            "Warning",
            0,
            text,
            1,
            request.activity_id,
            request.activity_id,
            str(uuid.uuid4()),
            request.client_request_id,
        ]
        for _, text in summary.warnings()
    ]
    if summary.error is None:
        status_rows.append(
            [
                now,
                4,
                "Info",
                0,
                "Query completed successfully",
                1,
                request.activity_id,
                request.activity_id,
                str(uuid.uuid4()),
                request.client_request_id,
            ]
        )
    else:
        status_rows.append(
            [
                now,
                2,
                "Error",
                -2147467259,
                summary.error.message,
                1,
                request.activity_id,
                request.activity_id,
                str(uuid.uuid4()),
                request.client_request_id,
            ]
        )
    properties = {
        "TableName": f"Table_{count}",
        "Columns": _VALUE_COLUMNS,
        "Rows": [[visualization_json(summary.visualization())]],
    }
    status = {"TableName": f"Table_{count + 1}", "Columns": _STATUS_COLUMNS, "Rows": status_rows}
    toc_rows = [
        [i, "QueryResult", schema.table, str(uuid.uuid4()), ""]
        for i, schema in enumerate(tables.schemas)
    ]
    toc_rows.append([count, "QueryProperties", "@ExtendedProperties", str(uuid.uuid4()), ""])
    toc_rows.append([count + 1, "QueryStatus", "QueryStatus", str(uuid.uuid4()), ""])
    toc = {"TableName": f"Table_{count + 2}", "Columns": _TOC_COLUMNS, "Rows": toc_rows}
    return prefix + ",".join(dumps(t) for t in (properties, status, toc))
