"""The ClickHouse shape of a bzrk table: columns, skip indexes, sorting key and TTL as records.

One bzrk table holds every signal (log records, spans, metric data points), one row each, with
the column names of the Berserk OTel mapping. DDL is rendered from the records below; nothing
else in bzrk spells column types. ``COLUMNS`` and ``writer.ROW_FIELDS`` must change together.

Choices (measured in ``tests/storage/test_pruning.py``, see ``docs/storage.md``):

* ``PARTITION BY toDate(timestamp)``: whole days drop out of a time window before any index.
* ``ORDER BY (<highest-weighted shard field>, metric_name, span_name, timestamp)``: with
  Berserk's default shard fields that is ``resource.service.name``, a typed path of the
  ``resource`` JSON column, so a one-service one-hour window reads a few contiguous key ranges;
  ``metric_name`` (NULL on logs and spans) keeps each metric's points together within a
  service, and ``span_name`` (NULL on logs and points) its spans apart from its log records,
  which the ``duration`` min-max index then skips for a span-only query.
* The other shard fields get ``bloom_filter`` skip indexes, so ``==``/``in`` on them skips
  granules, as Berserk's per-chunk shard pruning does.
* ``body`` gets a ``text`` (inverted) index over ``lower(body)`` as an index *expression*, not a
  ``preprocessor``: a preprocessor makes ``hasToken(body, …)`` answer differently with and
  without the index (engine-choice §6.3). With the expression form the engine writes
  ``hasToken(lower(body), lower(term))`` for KQL ``has`` and gets the same answer either way.
* ``$raw`` casts the row's fields to one ``JSON`` object: the whole record at zero storage
  cost, absent (null) fields omitted. It is not a column of the ClickHouse table (an ``ALIAS``
  column costs every query ~0.5 ms of analysis, used or not): the catalogue hands its
  expression (:data:`COMPUTED`) to the compiler, which reads it in the column's place.
* The OTel ids (``trace_id``, ``span_id``, ``parent_span_id``: hex text in the record) are
  stored as their bytes (``trace_id_bytes``, ``FixedString(16)``, LZ4), and as text
  (``trace_id_text``) only when a value is not canonical lowercase hex of that width (free-text
  ingest can write anything). Random bytes read 2.5× faster than ZSTD'd hex and take fewer bytes
  on disk (docs/storage.md, *Ids as bytes*). A query reads the field through
  :data:`COMPUTED` (the bytes as lowercase hex, else the text: the value as written), and the
  bloom filter indexes that expression, so ``trace_id == …`` still skips granules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bzrk.engine.kql_text import DATETIME_TEXT, TIMESPAN_TEXT
from bzrk.storage.naming import quote_identifier, quote_string

# How a column stores a field the record does not have (the KQL meaning of that is null,
# issue 20; the compiler reads it through ``TableSource.absent``, engine/catalog_resolver.py):
ABSENT_NULL = "null"  # NULL in a Nullable column (or a Nullable typed path of a bag)
ABSENT_EMPTY_ARRAY = "[]"  # an empty array: an Array column holds no NULL
ABSENT_EMPTY_BAG = "{}"  # an empty JSON object: a bag without the key, or no bag at all
NEVER_ABSENT = "never"  # every row has it (timestamps are filled at ingest)


def _absence(ch_type: str) -> str:
    if ch_type.startswith("JSON"):
        return ABSENT_EMPTY_BAG
    if ch_type.startswith("Array("):
        return ABSENT_EMPTY_ARRAY
    if "Nullable(" in ch_type:
        return ABSENT_NULL
    return NEVER_ABSENT


@dataclass(frozen=True, slots=True)
class Column:
    """One stored column. ``kql_type`` is what ``getschema`` reports; ``absent`` says how a
    record without the field is stored (one of the ``ABSENT_*`` / ``NEVER_ABSENT`` values;
    by default derived from ``ch_type``)."""

    name: str
    ch_type: str
    kql_type: str
    codec: str | None = None
    alias: str | None = None  # computed on read by the query (COMPUTED), not stored
    doc: str = ""
    absent: str = ""

    def __post_init__(self) -> None:
        if not self.absent:
            object.__setattr__(self, "absent", _absence(self.ch_type))

    def ddl(self) -> str:
        text = f"{quote_identifier(self.name)} {self.ch_type}"
        if self.codec:
            text += f" CODEC({self.codec})"
        return text


@dataclass(frozen=True, slots=True)
class SkipIndex:
    """A data-skipping index over an expression (already valid ClickHouse SQL)."""

    name: str
    expression: str
    type: str
    granularity: int | None = 1  # None: the index type's own default (text indexes)

    def ddl(self) -> str:
        text = f"INDEX {quote_identifier(self.name)} {self.expression} TYPE {self.type}"
        return text if self.granularity is None else f"{text} GRANULARITY {self.granularity}"


_DT = "DateTime64(7, 'UTC')"
_NDT = f"Nullable({_DT})"
_STR = "Nullable(String)"
_LCSTR = "LowCardinality(Nullable(String))"
_ZSTD = "ZSTD(1)"
# Columns nearly every query reads (the time window, durations) decompress faster with LZ4 than
# with ZSTD(1), for a few per cent more bytes (docs/storage.md, *Codecs, sorting key…*). Ids and
# text keep ZSTD(1): LZ4 doubles them on disk for a smaller gain.
_LZ4 = "LZ4"

# The OTel ids, by width in bytes: each is stored as two columns (see the module docstring).
HEX_IDS: dict[str, int] = {"trace_id": 16, "span_id": 8, "parent_span_id": 8}


def id_bytes_column(name: str) -> str:
    """The stored column of an id's bytes (a canonical hex value)."""
    return f"{name}_bytes"


def id_text_column(name: str) -> str:
    """The stored column of an id's text (a value that is not canonical hex)."""
    return f"{name}_text"


def hex_id_expression(name: str) -> str:
    """The id ``name`` as written: its bytes as lowercase hex, else its text (null when neither)."""
    # Not ``coalesce(…)``: ClickHouse's bloom filter does not serve ``coalesce(…) = 'x'``
    # (it does ``IN``), and it serves ``if(…) = 'x'`` (tests/storage/test_pruning.py).
    stored, text = quote_identifier(id_bytes_column(name)), quote_identifier(id_text_column(name))
    return f"if(isNull({stored}), {text}, lower(hex({stored})))"


def _stored(column: Column) -> tuple[Column, ...]:
    """The ClickHouse columns that store a record field."""
    width = HEX_IDS.get(column.name)
    if width is None:
        return (column,)
    return (
        Column(id_bytes_column(column.name), f"Nullable(FixedString({width}))", "", _LZ4),
        Column(id_text_column(column.name), _STR, "", _ZSTD),
    )


# Typed paths of the bags: stored as real sub-columns; the first is part of the sorting key.
# Nullable, so a record without the attribute reads NULL (absent), not '' (a value); the
# sorting key then needs ``allow_nullable_key``.
RESOURCE_TYPED_PATHS = (("service.name", "LowCardinality(Nullable(String))"),)


def _json_type(typed_paths: tuple[tuple[str, str], ...]) -> str:
    if not typed_paths:
        return "JSON"
    hints = ", ".join(f"{quote_identifier(path)} {ch_type}" for path, ch_type in typed_paths)
    return f"JSON({hints})"


# The record's fields as KQL reads them and as writers hand them over (the Arrow schema of
# inserts, bzrk.storage.writer.ROW_FIELDS); ``$raw`` follows. A field with an ``alias`` is
# stored otherwise (:data:`STORED_COLUMNS`) and read through :data:`COMPUTED`.
FIELDS: tuple[Column, ...] = (
    Column("timestamp", _DT, "datetime", "Delta, LZ4", doc="event time; spans: end_time"),
    Column("ingest_time", _DT, "datetime", "Delta, ZSTD(1)", doc="arrival time"),
    Column("observed_time", _NDT, "datetime", _ZSTD, doc="logs: when the collector saw it"),
    Column("body", _STR, "string", _ZSTD, doc="log body (non-string bodies as JSON text)"),
    Column("severity_text", _LCSTR, "string"),
    Column("severity_number", "Nullable(UInt8)", "int"),
    Column("trace_id", _STR, "string", alias=hex_id_expression("trace_id"), doc="hex"),
    Column("span_id", _STR, "string", alias=hex_id_expression("span_id"), doc="hex"),
    Column(
        "parent_span_id",
        _STR,
        "string",
        alias=hex_id_expression("parent_span_id"),
        doc="hex; null for root spans",
    ),
    Column("span_name", _LCSTR, "string"),
    Column("span_kind", _LCSTR, "string", doc="INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER"),
    Column("start_time", _NDT, "datetime", _LZ4),
    Column("end_time", _NDT, "datetime", _LZ4),
    Column("duration", "Nullable(Int64)", "timespan", _LZ4, doc="100 ns ticks"),
    Column("status_code", _LCSTR, "string", doc="OK, ERROR; null when UNSET (the OTLP default)"),
    Column("status_message", _STR, "string", _ZSTD),
    Column("trace_state", _STR, "string", _ZSTD),
    Column("flags", "Nullable(UInt32)", "int"),
    Column("sampled", "Nullable(Bool)", "bool", doc="trace flags bit 0"),
    Column("events", "Array(JSON)", "dynamic", doc="span events: name, timestamp, attributes"),
    Column("links", "Array(JSON)", "dynamic", doc="span links: trace_id, span_id, attributes"),
    Column("metric_name", _LCSTR, "string"),
    Column("metric_type", _LCSTR, "string", doc="gauge, sum, histogram, exp_histogram, summary"),
    Column("metric_unit", _LCSTR, "string"),
    Column("metric_description", _STR, "string", _ZSTD),
    Column("metric_hash", "Nullable(UInt64)", "long", doc="one id per time series"),
    Column("value", "Nullable(Float64)", "real", doc="gauge and sum points"),
    Column("sum", "Nullable(Float64)", "real"),
    Column("count", "Nullable(UInt64)", "long"),
    Column("min", "Nullable(Float64)", "real"),
    Column("max", "Nullable(Float64)", "real"),
    Column("bucket_counts", "Array(UInt64)", "dynamic"),
    Column("explicit_bounds", "Array(Float64)", "dynamic"),
    Column("scale", "Nullable(Int32)", "int", doc="exponential histogram"),
    Column("zero_count", "Nullable(UInt64)", "long"),
    Column("positive_offset", "Nullable(Int32)", "int"),
    Column("positive_bucket_counts", "Array(UInt64)", "dynamic"),
    Column("negative_offset", "Nullable(Int32)", "int"),
    Column("negative_bucket_counts", "Array(UInt64)", "dynamic"),
    Column("quantiles", "Array(Float64)", "dynamic", doc="summary: quantile levels"),
    Column("quantile_values", "Array(Float64)", "dynamic", doc="summary: values per level"),
    Column("aggregation_temporality", _LCSTR, "string", doc="DELTA or CUMULATIVE"),
    Column("is_monotonic", "Nullable(Bool)", "bool"),
    Column("scope_name", _LCSTR, "string"),
    Column("scope_version", _LCSTR, "string"),
    Column("dropped_attributes_count", "Nullable(UInt32)", "int"),
    Column("dropped_events_count", "Nullable(UInt32)", "int"),
    Column("dropped_links_count", "Nullable(UInt32)", "int"),
    Column("dropped_resource_attributes_count", "Nullable(UInt32)", "int"),
    Column("dropped_scope_attributes_count", "Nullable(UInt32)", "int"),
    Column("resource", _json_type(RESOURCE_TYPED_PATHS), "dynamic", doc="resource attributes"),
    Column("scope", "JSON", "dynamic", doc="instrumentation scope attributes"),
    Column("attributes", "JSON", "dynamic", doc="record / span / point attributes"),
)

# The columns of the ClickHouse table.
STORED_COLUMNS: tuple[Column, ...] = tuple(s for c in FIELDS for s in _stored(c))

# Fields the $raw alias leaves out: ingest bookkeeping, not part of the original record.
_RAW_EXCLUDED = frozenset({"ingest_time"})


def field_sql(column: Column) -> str:
    """The ClickHouse expression of a record field: its column, or what it is computed from."""
    return column.alias or quote_identifier(column.name)


def _raw_field(column: Column) -> tuple[str, str]:
    """A field's value in $raw and its type there. Berserk omits empty and default fields: a
    null, an empty bag and an empty array are left out (a log record has no `events`)."""
    sql = field_sql(column)
    if column.ch_type.startswith("JSON"):
        # the bags' typed-path hints are dropped in the target type: $raw is an untyped JSON
        return sql, "JSON"
    if column.ch_type.startswith("Array("):
        return f"if(empty({sql}), CAST(NULL, 'Dynamic'), CAST({sql}, 'Dynamic'))", "Dynamic"
    if "DateTime64" in column.ch_type:
        # as KQL writes a datetime in a dynamic value: "2026-12-07T21:32:46.8124735Z"
        return DATETIME_TEXT.format(sql), "Nullable(String)"
    if column.kql_type == "timespan":
        # as KQL writes a timespan in a dynamic value ("00:00:01.5000000" for 1.5 s)
        return TIMESPAN_TEXT.format(sql), "Nullable(String)"
    return sql, column.ch_type


def _raw_alias() -> str:
    fields = [(c.name, *_raw_field(c)) for c in FIELDS if c.name not in _RAW_EXCLUDED]
    values = ", ".join(sql for _, sql, _ in fields)
    shape = ", ".join(f"{quote_identifier(name)} {ch_type}" for name, _, ch_type in fields)
    record = f"CAST(tuple({values}), {quote_string(f'Tuple({shape})')})"
    return f"CAST({record}, 'JSON')"


RAW_COLUMN = Column(
    "$raw", "JSON", "dynamic", alias=_raw_alias(), doc="the whole record", absent=NEVER_ABSENT
)

COLUMNS: tuple[Column, ...] = (*FIELDS, RAW_COLUMN)
COLUMNS_BY_NAME = {c.name: c for c in COLUMNS}

# Columns of the KQL schema that the ClickHouse table does not have: name -> the expression over
# the stored columns a query reads in their place (``TableSource.computed``), of the column's type.
# The expression is the one the skip indexes are over, character for character.
COMPUTED: dict[str, str] = {c.name: c.alias for c in COLUMNS if c.alias is not None}

# Computed columns whose distinct non-null values are those of stored columns, which share
# none, and which are all NULL exactly when the column is: an id's bytes (canonical hex) and
# its text (any other value). ``dcount`` of the id is then the sum of theirs, and ``isnull``
# reads their null maps, without formatting each row's bytes as hex (docs/storage.md).
DISTINCT_PARTS: dict[str, tuple[str, ...]] = {
    name: (id_bytes_column(name), id_text_column(name)) for name in HEX_IDS
}

# How each column and each declared typed path of a bag stores absence: what the catalogue
# tells the compiler (``ResolvedTable.absent``). Paths are ``bag.key`` with the key whole.
ABSENCE: dict[str, str] = {
    **{c.name: c.absent for c in COLUMNS},
    **{f"resource.{path}": _absence(ch_type) for path, ch_type in RESOURCE_TYPED_PATHS},
}


# The bloom filters older versions kept on the ids' text columns (render_id_additions drops them).
_FORMER_ID_INDEXES = ("idx_trace_id", "idx_span_id")

# The skip indexes of every table, whatever its shard fields.
FIXED_INDEXES: tuple[SkipIndex, ...] = (
    SkipIndex("idx_body_text", "lower(body)", "text(tokenizer = splitByNonAlpha)", None),
    # Over the fields as queries read them (``hex_id_expression``), which the analyzer matches.
    SkipIndex("idx_trace", hex_id_expression("trace_id"), "bloom_filter(0.001)"),
    SkipIndex("idx_span", hex_id_expression("span_id"), "bloom_filter(0.001)"),
    # NULL on log records and metric points: a granule of those has no min-max and is skipped
    # by ``duration IS NOT NULL``; on spans it also skips by ``duration > …`` (slow spans).
    SkipIndex("idx_duration", "duration", "minmax"),
)


# Berserk's default shard set for new tables (TBL): field -> weight. Order breaks weight ties
# when choosing the sorting-key field, so the service comes first.
DEFAULT_SHARD_FIELDS: dict[str, int] = {
    "resource.service.name": 10,
    "metric_name": 10,
    "trace_id": 2,
    "span_id": 1,
    "severity_text": 1,
    "resource.service.namespace": 1,
    "resource.k8s.deployment.name": 5,
}


# The top-level column that follows the sort field in the sorting key (see
# ``TableLayout.sorting_key``); its bloom filter stays, as tables created before it joined the
# key (which keep their key) need it.
SERIES_KEY = "metric_name"
# The column that follows it: spans by operation, apart from log records (``sorting_key``).
OPERATION_KEY = "span_name"


class SchemaError(ValueError):
    """A table definition bzrk cannot store (unknown shard field, bad retention)."""


def field_expression(path: str) -> str:
    """ClickHouse expression of a top-level column or a bag path (``resource.service.name``).

    Bag paths keep the attribute key whole (``resource.`service.name```), since OTel keys carry
    dots. A typed path is used as is; other JSON paths are read as String.
    """
    if path in COLUMNS_BY_NAME:
        return field_sql(COLUMNS_BY_NAME[path])
    bag, _, key = path.partition(".")
    if bag not in ("resource", "attributes", "scope") or not key:
        raise SchemaError(
            f"unknown field '{path}': use a column name or resource./attributes./scope. paths"
        )
    typed = dict(RESOURCE_TYPED_PATHS) if bag == "resource" else {}
    sub = f"{quote_identifier(bag)}.{quote_identifier(key)}"
    return sub if key in typed else f"{sub}.:String"


def is_sortable(path: str) -> bool:
    """Whether ``path`` may lead the sorting key: a low-cardinality typed path of a bag."""
    bag, _, key = path.partition(".")
    return bag == "resource" and key in dict(RESOURCE_TYPED_PATHS)


@dataclass(frozen=True, slots=True)
class TableLayout:
    """Everything table-specific in the DDL: shard fields and retention."""

    shard_fields: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_SHARD_FIELDS))
    retention_days: int | None = None

    def __post_init__(self) -> None:
        if self.retention_days is not None and self.retention_days <= 0:
            raise SchemaError("retention_days must be a positive number of days")
        for path, weight in self.shard_fields.items():
            field_expression(path)
            if not isinstance(weight, int) or weight <= 0:
                raise SchemaError(f"shard field '{path}' needs a positive integer weight")

    @property
    def sort_field(self) -> str | None:
        ranked = sorted(self.shard_fields.items(), key=lambda item: -item[1])
        return next((path for path, _ in ranked if is_sortable(path)), None)

    def sorting_key(self) -> tuple[str, ...]:
        """``(<sort field>, metric_name, span_name, timestamp)``; without the sort field or
        ``metric_name`` when the shard fields lack it.

        ``metric_name`` (when a shard field) comes before the time: log records and spans have
        none (NULL), so each metric's points follow together, and a query of one metric reads
        its own granules instead of every granule of the service (the suite's metric rate: 1.9×
        faster, docs/storage.md). ``span_name`` (NULL on log records and metric points) then
        puts a service's spans, by operation, apart from its log records, which stay in time
        order: a granule holds spans or log records, so a span-only query (``isnotnull(duration)``
        through the ``duration`` min-max index, ``span_name == …``) reads the spans' granules
        only, and each column compresses better (−9 % on disk, docs/storage.md).
        """
        lead = self.sort_field
        key = [field_expression(lead)] if lead else []
        if SERIES_KEY in self.shard_fields and lead != SERIES_KEY:
            key.append(quote_identifier(SERIES_KEY))
        return (*key, quote_identifier(OPERATION_KEY), "timestamp")

    def skip_indexes(self, sorted_by: str | None = "") -> tuple[SkipIndex, ...]:
        """The table's skip indexes; ``sorted_by`` is the field leading a sorting key made
        earlier (default: this layout's own ``sort_field``), which needs no bloom filter."""
        indexes = list(FIXED_INDEXES)
        covered = {"trace_id", "span_id", self.sort_field if sorted_by == "" else sorted_by}
        for position, path in enumerate(self.shard_fields):
            if path in covered:
                continue
            indexes.append(
                SkipIndex(f"idx_shard_{position}", field_expression(path), "bloom_filter(0.01)")
            )
        return tuple(indexes)

    def ttl(self) -> str | None:
        if self.retention_days is None:
            return None
        return f"toDateTime(timestamp) + INTERVAL {int(self.retention_days)} DAY DELETE"


# Settings of the part layout, applied to tables of older bzrk versions too (``ALTER TABLE …
# MODIFY SETTING`` at start-up: metadata only, existing parts follow as they merge).
#
# * An ingest batch (≤ 50,000 rows by default) is written as a "compact" part: one data file
#   instead of ~300 for a wide part with JSON sub-columns, which halves the fsync cost of an
#   insert. A part is wide once it has both 100,000 rows and 10 MiB (uncompressed), so merges
#   (and large inserts) write wide parts, whose columns and JSON sub-columns are read alone:
#   the suite's scans ran 1.3–4× faster over wide parts than over compact ones (docs/storage.md).
#   The earlier thresholds (4 M rows, 256 MiB) kept a day partition compact forever.
# * A partition whose every part is older than an hour is merged into one part, so the few
#   uneven parts a finished day keeps (which the merge selector leaves alone) do not cost
#   every later scan.
LAYOUT_SETTINGS: dict[str, int | str] = {
    "min_bytes_for_wide_part": 10 * 1024 * 1024,
    "min_rows_for_wide_part": 100_000,
    "min_age_to_force_merge_seconds": 3600,
    "min_age_to_force_merge_on_partition_only": 1,
}

# Settings of every INSERT into a bzrk table. A bag arrives as JSON text, and ClickHouse's JSON
# type guesses a type for each value as schema inference does: by default a string that reads as
# a date or a time ("2024-01-01", "2024-01-01 10:00:00") is stored as a `Date` / `DateTime`. An
# OTel string attribute is a string whatever it spells: stored as a date it no longer equals its
# own text (`attributes.build_date == "2024-01-01"` matched nothing) and reads back reformatted.
# Numbers and booleans keep their JSON types; strings are never read as numbers (ClickHouse's
# default, `input_format_json_try_infer_numbers_from_strings = 0`).
INSERT_SETTINGS: dict[str, int] = {
    "input_format_try_infer_dates": 0,
    "input_format_try_infer_datetimes": 0,
}

# Durable acknowledgement: a part's files and directory are fsync'd before INSERT returns.
TABLE_SETTINGS: dict[str, int | str] = {
    "fsync_after_insert": 1,
    "fsync_part_directory": 1,
    "index_granularity": 8192,
    **LAYOUT_SETTINGS,
    "allow_nullable_key": 1,
}


def render_create_table(qualified_name: str, layout: TableLayout) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for one bzrk table.

    >>> "PARTITION BY toDate(timestamp)" in render_create_table("`d`.`t`", TableLayout())
    True
    """
    body = ",\n  ".join(
        [*(c.ddl() for c in STORED_COLUMNS), *(i.ddl() for i in layout.skip_indexes())]
    )
    parts = [
        f"CREATE TABLE IF NOT EXISTS {qualified_name} (\n  {body}\n)",
        "ENGINE = MergeTree",
        "PARTITION BY toDate(timestamp)",
        f"ORDER BY ({', '.join(layout.sorting_key())})",
    ]
    ttl = layout.ttl()
    if ttl:
        parts.append(f"TTL {ttl}")
    settings = ", ".join(f"{k} = {v}" for k, v in TABLE_SETTINGS.items())
    parts.append(f"SETTINGS {settings}")
    return "\n".join(parts)


def render_layout_settings(qualified_name: str) -> str:
    """``ALTER TABLE`` that brings a table of any bzrk version to :data:`LAYOUT_SETTINGS`."""
    settings = ", ".join(f"{k} = {v}" for k, v in LAYOUT_SETTINGS.items())
    return f"ALTER TABLE {qualified_name} MODIFY SETTING {settings}"


def render_computed_drops(qualified_name: str) -> str:
    """``ALTER TABLE`` that removes the ``ALIAS`` column older bzrk versions stored ``$raw`` as
    (the compiler now reads :data:`COMPUTED` in its place). Metadata only: an alias has no
    data."""
    return f"ALTER TABLE {qualified_name} DROP COLUMN IF EXISTS {quote_identifier(RAW_COLUMN.name)}"


def render_id_renames(qualified_name: str) -> str:
    """``ALTER TABLE`` that keeps the text of the ids a table of an older bzrk stored as hex
    text (``trace_id``) as the text columns of today's layout (``trace_id_text``): a rename,
    so metadata only; its bloom filter follows it (and is dropped by
    :func:`render_id_additions`). Nothing happens to a table that has no such column."""
    renames = ", ".join(
        f"RENAME COLUMN IF EXISTS {quote_identifier(name)} TO "
        f"{quote_identifier(id_text_column(name))}"
        for name in HEX_IDS
    )
    return f"ALTER TABLE {qualified_name} {renames}"


def render_id_additions(qualified_name: str) -> str:
    """``ALTER TABLE`` that adds the bytes columns of the ids (NULL in existing parts, which
    read their text) and drops the bloom filters older versions kept on the ids' text."""
    added = [
        f"ADD COLUMN IF NOT EXISTS {_stored(COLUMNS_BY_NAME[name])[0].ddl()}" for name in HEX_IDS
    ]
    dropped = [f"DROP INDEX IF EXISTS {quote_identifier(index)}" for index in _FORMER_ID_INDEXES]
    return f"ALTER TABLE {qualified_name} {', '.join([*added, *dropped])}"


def render_codec_changes(qualified_name: str) -> str:
    """``ALTER TABLE`` that gives a table of any bzrk version today's column codecs.

    Metadata only (no mutation): parts written from then on (inserts, merges) use the new
    codecs, existing parts keep theirs until they are merged. Every stored column with a
    declared codec is listed, so the statement is the same whatever version made the table.
    """
    changes = ", ".join(
        f"MODIFY COLUMN {quote_identifier(c.name)} CODEC({c.codec})"
        for c in STORED_COLUMNS
        if c.codec
    )
    return f"ALTER TABLE {qualified_name} {changes}"


def render_index_additions(qualified_name: str) -> str:
    """``ALTER TABLE`` that gives a table of any bzrk version every index of
    :data:`FIXED_INDEXES` it lacks. Metadata only: parts written from then on (inserts, merges)
    carry the index, and a query uses it on the parts that have it."""
    added = ", ".join(
        f"ADD {index.ddl().replace('INDEX ', 'INDEX IF NOT EXISTS ', 1)}" for index in FIXED_INDEXES
    )
    return f"ALTER TABLE {qualified_name} {added}"


def render_ttl_change(qualified_name: str, layout: TableLayout) -> str:
    """``ALTER TABLE`` that applies ``layout``'s retention to an existing table."""
    ttl = layout.ttl()
    if ttl is None:
        return f"ALTER TABLE {qualified_name} REMOVE TTL"
    return f"ALTER TABLE {qualified_name} MODIFY TTL {ttl}"
