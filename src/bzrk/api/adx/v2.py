"""The v2 response (``POST /v2/rest/query``): a JSON array of frames, written as events arrive.

Three layouts (adx.md §4-§5), all encoders of the one result stream:

* default: ``DataSetHeader``, one ``DataTable`` per result table (``PrimaryResult``), then
  ``@ExtendedProperties`` (QueryProperties, carrying the ``render`` visualization, known only
  at the end of the run), ``QueryCompletionInformation`` and ``DataSetCompletion``;
* ``results_v2_fragment_primary_tables``: primary tables as ``TableHeader`` /
  ``TableFragment`` (``DataAppend``) / ``TableCompletion``;
* ``results_progressive_enabled``: the same, each snapshot opening with a ``DataReplace``
  fragment per table (replace semantics), and ``TableProgress`` frames in between.

``FrameType`` is the first key and ``Rows`` the last in every frame, because the Python SDK's
streaming parser reads keys in that order. A failure after the first byte becomes an in-band
``{"OneApiErrors": [...]}`` row, a QCI row with Level 2 and ``DataSetCompletion.HasErrors``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from bzrk.api.adx.errors import RequestContext, kusto_error
from bzrk.api.adx.frames import (
    Close,
    Open,
    Rows,
    RunSummary,
    SequentialTables,
    StreamContractError,
    stats_payload,
    visualization_json,
)
from bzrk.api.adx.values import RowEncoder, dumps, encode_datetime, v2_columns
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

# Rows per JSON chunk handed to the server: bounds the text held at once for a huge batch.
ROWS_PER_CHUNK = 2_000
_SEPARATOR = "\n,"

_QCI_COLUMNS = [
    {"ColumnName": name, "ColumnType": kind}
    for name, kind in (
        ("Timestamp", "datetime"),
        ("ClientRequestId", "string"),
        ("ActivityId", "guid"),
        ("SubActivityId", "guid"),
        ("ParentActivityId", "guid"),
        ("Level", "int"),
        ("LevelName", "string"),
        ("StatusCode", "int"),
        ("StatusCodeName", "string"),
        ("EventType", "int"),
        ("EventTypeName", "string"),
        ("Payload", "string"),
    )
]
_PROPERTIES_COLUMNS = [
    {"ColumnName": "TableId", "ColumnType": "int"},
    {"ColumnName": "Key", "ColumnType": "string"},
    {"ColumnName": "Value", "ColumnType": "dynamic"},
]
_E_FAIL = -2147467259  # 0x80004005, the HRESULT Kusto reports for a failed query


def _frame(frame_type: str, **fields: Any) -> str:
    """A frame's JSON with ``FrameType`` first (and ``Rows`` last when the caller puts it last)."""
    return dumps({"FrameType": frame_type, **fields})


def _error_row(error: Error, request: RequestContext) -> str:
    return dumps({"OneApiErrors": [{"error": kusto_error(error, request)}]})


def _chunks(rows: Sequence[Sequence[Any]]) -> list[Sequence[Sequence[Any]]]:
    return [rows[i : i + ROWS_PER_CHUNK] for i in range(0, len(rows), ROWS_PER_CHUNK)] or [[]]


class _V2Writer:
    """State shared by the three layouts: ids, the run summary, the closing tables."""

    def __init__(self, request: RequestContext) -> None:
        self.request = request
        self.summary = RunSummary()
        # Kusto's ids: @ExtendedProperties 0, primary tables 1..n, QCI last.
        self.schemas: list[TableSchema] = []
        self.encoders: list[RowEncoder] = []

    def add_schema(self, schema: TableSchema) -> bool:
        if any(s.table == schema.table for s in self.schemas):
            return False
        self.schemas.append(schema)
        self.encoders.append(RowEncoder(schema.columns))
        return True

    def table_id(self, index: int) -> int:
        return index + 1

    def index_of(self, table: str) -> int | None:
        for i, schema in enumerate(self.schemas):
            if schema.table == table:
                return i
        return None

    def closing_frames(self) -> list[str]:
        """@ExtendedProperties, QueryCompletionInformation and DataSetCompletion."""
        viz = self.summary.visualization()
        viz_index = self.index_of(viz.table) if viz else None
        properties = _frame(
            "DataTable",
            TableId=0,
            TableKind="QueryProperties",
            TableName="@ExtendedProperties",
            Columns=_PROPERTIES_COLUMNS,
            Rows=[
                [
                    self.table_id(viz_index if viz_index is not None else 0),
                    "Visualization",
                    visualization_json(viz),
                ]
            ],
        )
        error = self.summary.error
        qci = _frame(
            "DataTable",
            TableId=len(self.schemas) + 1,
            TableKind="QueryCompletionInformation",
            TableName="QueryCompletionInformation",
            Columns=_QCI_COLUMNS,
            Rows=self._qci_rows(),
        )
        completion: dict[str, Any] = {"HasErrors": error is not None, "Cancelled": False}
        if error is not None:
            completion["OneApiErrors"] = [{"error": kusto_error(error, self.request)}]
        return [properties, qci, _frame("DataSetCompletion", **completion)]

    def _qci_rows(self) -> list[list[Any]]:
        now = encode_datetime(int(time.time() * TICKS_PER_SECOND))
        ids = [self.request.client_request_id, self.request.activity_id]

        def row(level: int, status: int, status_name: str, event: int, name: str, payload: Any):
            return [
                now,
                *ids,
                str(uuid.uuid4()),
                self.request.activity_id,
                level,
                _LEVEL_NAMES[level],
                status,
                status_name,
                event,
                name,
                dumps(payload),
            ]

        rows = [
            row(3, 0, "S_OK (0)", 4, "QueryInfo", {"Count": 1, "Kind": kind, "Text": text})
            for kind, text in self.summary.warnings()
        ]
        rows.append(
            row(6, 0, "S_OK (0)", 0, "QueryResourceConsumption", stats_payload(self.summary))
        )
        error = self.summary.error
        if error is None:
            rows.append(
                row(
                    4,
                    0,
                    "S_OK (0)",
                    4,
                    "QueryInfo",
                    {"Count": 1, "Text": "Query completed successfully"},
                )
            )
        else:
            rows.append(
                row(
                    2,
                    _E_FAIL,
                    "E_FAIL (0x80004005)",
                    4,
                    "QueryInfo",
                    {"error": kusto_error(error, self.request)},
                )
            )
        return rows


_LEVEL_NAMES = {1: "Critical", 2: "Error", 3: "Warning", 4: "Info", 6: "Stats"}


def _header(*, progressive: bool, fragmented: bool) -> str:
    return _frame(
        "DataSetHeader",
        IsProgressive=progressive,
        Version="v2.0",
        IsFragmented=fragmented,
        ErrorReportingPlacement="InData",
    )


async def encode_v2(events: AsyncIterator[Event], request: RequestContext) -> AsyncIterator[bytes]:
    """The default layout: whole ``DataTable`` frames, streamed row chunk by row chunk."""
    writer = _V2Writer(request)
    tables = SequentialTables()
    yield ("[" + _header(progressive=False, fragmented=False)).encode()
    open_index = -1
    first_row = True

    def steps_text(steps: list[Open | Rows | Close]) -> list[str]:
        nonlocal open_index, first_row
        out: list[str] = []
        for step in steps:
            if isinstance(step, Open):
                open_index, first_row = step.index, True
                schema = writer.schemas[step.index]
                head = _frame(
                    "DataTable",
                    TableId=writer.table_id(step.index),
                    TableKind="PrimaryResult",
                    TableName=schema.table,
                    Columns=v2_columns(schema.columns),
                    Rows=[],
                )
                out.append(_SEPARATOR + head[:-2])  # drop "]}": rows follow
            elif isinstance(step, Rows):
                encoder = writer.encoders[open_index]
                for chunk in _chunks(step.rows):
                    if chunk:
                        out.append(("" if first_row else ",") + encoder.encode_many(chunk))
                        first_row = False
            else:
                out.append("]}")
                open_index = -1
        return out

    async for event in events:
        if isinstance(event, TableSchema):
            if writer.add_schema(event):
                tables.add_schema(event)
            continue
        try:
            if isinstance(event, RowBatch):
                for text in steps_text(tables.batch(event)):
                    yield text.encode()
                continue
        except StreamContractError as exc:
            event = Error(code="Internal", message=str(exc))
        if isinstance(event, Metadata):
            writer.summary.metadata = event
            for text in steps_text(tables.drain()):
                yield text.encode()
        elif isinstance(event, Progress):
            writer.summary.progress = event
        elif isinstance(event, Done):
            writer.summary.done = event
            break
        elif isinstance(event, Error):
            writer.summary.error = event
            break
    if writer.summary.error is not None:
        error = writer.summary.error
        out = steps_text(tables.drain())
        if open_index < 0:
            # No result table to carry the error row: an empty PrimaryResult does.
            empty = TableSchema("PrimaryResult", ())
            writer.add_schema(empty)
            tables.add_schema(empty)
            out = steps_text(tables.drain())
        out.append(("" if first_row else ",") + _error_row(error, request))
        out += steps_text([Close(open_index)])
        for text in out:
            yield text.encode()
    else:
        for text in steps_text(tables.close()):
            yield text.encode()
    yield ("".join(_SEPARATOR + f for f in writer.closing_frames()) + "\n]").encode()


async def encode_v2_fragmented(
    events: AsyncIterator[Event], request: RequestContext, *, progressive: bool
) -> AsyncIterator[bytes]:
    """Fragmented (and progressive) layout: tables as header, fragments and completion."""
    writer = _V2Writer(request)
    yield ("[" + _header(progressive=progressive, fragmented=True)).encode()
    iteration: str | None = None
    # Per table, in the current snapshot: rows sent, and whether a fragment went out yet.
    counts: list[int] = []
    replaced: list[bool] = []
    last_progress = -1.0

    def fragment(index: int, rows: Sequence[Sequence[Any]]) -> list[str]:
        out = []
        for chunk in _chunks(rows):
            kind = "DataAppend" if replaced[index] or not progressive else "DataReplace"
            replaced[index] = True
            out.append(
                _SEPARATOR
                + _frame(
                    "TableFragment",
                    TableFragmentType=kind,
                    TableId=writer.table_id(index),
                    FieldCount=len(writer.schemas[index].columns),
                    Rows=[],
                )[:-2]
                + writer.encoders[index].encode_many(chunk)
                + "]}"
            )
        counts[index] += len(rows)
        return out

    async for event in events:
        if isinstance(event, TableSchema):
            if writer.add_schema(event):
                counts.append(0)
                replaced.append(False)
                yield (
                    _SEPARATOR
                    + _frame(
                        "TableHeader",
                        TableId=writer.table_id(len(writer.schemas) - 1),
                        TableKind="PrimaryResult",
                        TableName=event.table,
                        Columns=v2_columns(event.columns),
                    )
                ).encode()
        elif isinstance(event, RowBatch):
            index = writer.index_of(event.table)
            if index is None:
                writer.summary.error = Error(
                    code="Internal", message=f"rows for table {event.table!r} before its schema"
                )
                break
            if event.iteration_id != iteration:
                iteration = event.iteration_id
                counts = [0] * len(counts)
                replaced = [False] * len(replaced)
            if event.rows or (progressive and not replaced[index]):
                for text in fragment(index, event.rows):
                    yield text.encode()
        elif isinstance(event, Metadata):
            writer.summary.metadata = event
            if progressive:
                # A table with no rows in this snapshot must still be cleared.
                for index in range(len(writer.schemas)):
                    if not replaced[index]:
                        for text in fragment(index, []):
                            yield text.encode()
        elif isinstance(event, Progress):
            writer.summary.progress = event
            percent = round(min(max(event.coverage, 0.0), 1.0) * 100.0, 2)
            if progressive and percent != last_progress:
                last_progress = percent
                yield "".join(
                    _SEPARATOR
                    + _frame("TableProgress", TableId=writer.table_id(i), TableProgress=percent)
                    for i in range(len(writer.schemas))
                ).encode()
        elif isinstance(event, Done):
            writer.summary.done = event
            break
        elif isinstance(event, Error):
            writer.summary.error = event
            break
    out: list[str] = []
    error = writer.summary.error
    if error is not None and writer.schemas:
        out.append(
            _SEPARATOR
            + _frame("TableFragment", TableFragmentType="DataAppend", TableId=1, Rows=[])[:-2]
            + _error_row(error, request)
            + "]}"
        )
    if progressive and error is None and writer.schemas and last_progress != 100.0:
        out += [
            _SEPARATOR + _frame("TableProgress", TableId=writer.table_id(i), TableProgress=100.0)
            for i in range(len(writer.schemas))
        ]
    out += [
        _SEPARATOR + _frame("TableCompletion", TableId=writer.table_id(i), RowCount=counts[i])
        for i in range(len(writer.schemas))
    ]
    out += [_SEPARATOR + f for f in writer.closing_frames()]
    yield ("".join(out) + "\n]").encode()
