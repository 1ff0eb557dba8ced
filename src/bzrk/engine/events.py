"""The one result-stream model: every query surface is an encoder of these events.

A query run yields, in order::

    TableSchema*            one per result table, before any batch of that table
    ( RowBatch* Metadata )+ one or more snapshots ("result iterations"); each snapshot is a
                            whole answer so far, named by ``iteration_id``; a new id means
                            "discard every table's rows"; exactly one Metadata closes it
    Progress*               interleaved anywhere; cumulative, the latest supersedes the rest
    Done | Error            exactly one, last

Cell values inside ``RowBatch.rows`` are plain Python values typed by the column's KQL type:

============  ===============================================================
KQL type      Python value
============  ===============================================================
bool          ``bool``
int, long     ``int``
real          ``float`` (``nan``/``inf`` allowed)
decimal       ``decimal.Decimal``
string        ``str`` (KQL has no null string: encoders may send ``""`` for None)
datetime      ``int``: 100 ns ticks since the Unix epoch (UTC)
timespan      ``int``: 100 ns ticks
guid          ``str`` (canonical lower-case 8-4-4-4-12)
dynamic       a JSON value: ``dict`` / ``list`` / ``str`` / ``int`` / ``float`` / ``bool`` / None
============  ===============================================================

``None`` is null for every type. Encoders never look at anything but these events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

KqlTypeName = Literal[
    "bool", "int", "long", "real", "decimal", "string", "datetime", "timespan", "guid", "dynamic"
]
KQL_TYPE_NAMES: tuple[KqlTypeName, ...] = (
    "bool",
    "int",
    "long",
    "real",
    "decimal",
    "string",
    "datetime",
    "timespan",
    "guid",
    "dynamic",
)

RunStatus = Literal["complete", "stopped_early", "soft_budget"]

PRIMARY_RESULT = "PrimaryResult"

# Ticks are .NET/KQL 100 ns units; datetimes count them from the Unix epoch here.
TICKS_PER_SECOND = 10_000_000
TICKS_PER_MILLISECOND = 10_000
NANOS_PER_TICK = 100


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: KqlTypeName


@dataclass(frozen=True, slots=True)
class Location:
    """Where in the query text a problem is: half-open byte range plus 1-based line/column."""

    start_byte: int
    end_byte: int
    start_line: int
    start_column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class TableSchema:
    table: str
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class RowBatch:
    table: str
    iteration_id: str
    rows: Sequence[Sequence[Any]]
    iteration_complete: bool


@dataclass(frozen=True, slots=True)
class BinProgress:
    first_bin_start: int  # unix nanoseconds
    bin_span: int  # nanoseconds
    completion_percentages: bytes  # one byte (0-100) per bin
    overall_done: int
    overall_total: int


@dataclass(frozen=True, slots=True)
class Progress:
    """Cumulative counters of what the engine really did. Unknown figures stay zero."""

    rows_processed: int = 0
    chunks_total: int = 0
    chunks_scanned: int = 0
    chunks_skipped_range: int = 0
    chunks_skipped_bloom: int = 0
    chunks_skipped_shard: int = 0
    chunk_scanned_raw_body_size: int = 0
    chunk_scanned_compressed_size: int = 0
    chunk_skipped_compressed_size: int = 0
    query_time_nanos: int = 0
    queue_wait_nanos: int | None = None
    merge_time_nanos: int = 0
    merge_count: int = 0
    snapshot_build_time_nanos: int = 0
    snapshot_build_count: int = 0
    planning_segments_done: int = 0
    planning_segments_total: int = 0
    bin_progress: BinProgress | None = None
    # Fraction (0.0-1.0) of the query's time window scanned: the completed slices, plus the
    # share of the running slice ClickHouse has read (engine/progress.py).
    coverage: float = 0.0
    slices_done: int = 0
    slices_total: int = 0
    custom_stats: dict[str, int] = field(default_factory=dict)
    # The run stopped scheduling work because a snapshot already held the whole answer (a
    # `take N` with N rows, the newest rows of a bare table): Berserk's short_circuit_completion.
    short_circuit: bool = False


@dataclass(frozen=True, slots=True)
class QueryWarning:
    kind: str  # e.g. "ResultTruncated", "SummarizeMemoryLimit"
    message: str
    operator_id: int = 0
    branch_index: int | None = None
    location: Location | None = None
    details: str = ""  # JSON text


@dataclass(frozen=True, slots=True)
class Visualization:
    """What ``render`` asked for: the visualization kind and its properties."""

    type: str
    properties: dict[str, str] = field(default_factory=dict)
    table: str = PRIMARY_RESULT


@dataclass(frozen=True, slots=True)
class PartialFailure:
    message: str
    segment_count: int = 0


@dataclass(frozen=True, slots=True)
class Metadata:
    """Closes one snapshot; replaces the previous snapshot's metadata whole."""

    iteration_id: str
    warnings: tuple[QueryWarning, ...] = ()
    visualization: Visualization | None = None
    partial_failures: tuple[PartialFailure, ...] = ()


@dataclass(frozen=True, slots=True)
class Done:
    status: RunStatus = "complete"
    coverage: float = 1.0
    run_id: str | None = None
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Error:
    code: str
    message: str
    title: str = ""
    location: Location | None = None
    details: str = ""  # JSON text
    run_id: str | None = None


Event = TableSchema | RowBatch | Progress | Metadata | Done | Error
