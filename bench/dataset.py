"""The benchmark dataset: a seed of demo telemetry through the real ingest mapping, scaled columnar.

``build(rows, data_dir)`` makes ``rows`` log records over one week (plus the spans of their traces)
in a bzrk table created by :class:`bzrk.storage.catalog.StorageCatalog`, in two steps:

1. **Seed (generated).** :func:`bzrk.demo.fastlogs.iter_log_requests` simulates ``seed`` log
   records (default ``min(rows, max(100 000, rows / 100))``) over the whole week — diurnal curve,
   the incident with its error spike and its ≤ 5 ``deadlock`` lines, the spans of every trace —
   as OTLP protobuf requests; each is decoded and mapped by :mod:`bzrk.ingest.otlp`
   (``map_logs``/``map_traces``) into the Arrow tables the ingest service inserts
   (``Mapped.batches()``), exactly as the ingest service does.
2. **Scale (replicated).** The seed is replayed ``ceil(rows / seed)`` times in Arrow/numpy. Replica
   0 is the seed itself; every other replica gets, per trace: a fresh trace id and fresh span ids
   (the seed's XOR a per-replica random mask, so parent links and log → span links stay intact),
   a time shift of up to ±20 minutes (kept inside the week, so the diurnal curve holds), and a
   latency factor (log-normal, σ 0.2) that stretches the trace's spans, its log times and the
   ``duration_ms`` attribute together. Replicas drop the seed's ``deadlock`` log lines, so the
   rare term stays as rare as the generator makes it. Bodies, resources and other attribute
   values repeat the seed's (user/order ids included); span-event timestamps inside ``events``
   are not shifted; ``ingest_time`` is the row's time plus 0.2–3 s.

Every batch goes in through :func:`bzrk.storage.writer.write_arrow` — the same INSERT (with
``fsync_after_insert``) that :func:`~bzrk.storage.writer.write_rows` makes after its row → Arrow
step — one day at a time so that inserts land in one partition each. The store is cached in
``bench/data/<rows>/`` (ClickHouse store, metadata and a manifest); a later run with the same
row count reuses it.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bzrk.engine.backends.chdb_backend import ChdbBackend
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.writer import ROW_FIELDS, rows_to_arrow, write_arrow

WEEK_NS = 7 * 24 * 3600 * 10**9
DAY_NS = 24 * 3600 * 10**9
# A fixed anchor keeps the data identical between runs (and cacheable): the week ending here.
ANCHOR_NS = 1_764_460_800 * 10**9  # 2025-11-30T00:00:00Z
MANIFEST = "manifest.json"
# What the cache holds; a cache of another version is built again. 2: metric points, the OTel
# exporter schema's tables, merged partitions.
VERSION = 4  # 3: span_name in the sorting key, the duration min-max index; 4: ids as bytes
# One point per metric series every this many seconds over the week (the demo's own metrics,
# mapped by the OTLP mapping; metric volume does not grow with log volume).
METRIC_INTERVAL_S = 300
PARQUET = "logs.parquet"
SEED_MIN = 100_000
SHIFT_NS = 20 * 60 * 10**9
SPAN_SAMPLE = 0.1
WRITERS = 2
INSERT_ROWS = 400_000  # rows per INSERT: large parts, bounded memory (~1 kB per row in Arrow)
_TIME_COLUMNS = ("timestamp", "observed_time", "start_time", "end_time")
_DURATION_MS = r'^(?P<pre>.*"duration_ms":)(?P<num>-?[0-9.]+(?:[eE][-+]?[0-9]+)?)(?P<post>.*)$'

Log = Callable[[str], None]


@dataclass
class Dataset:
    rows: int  # log records requested
    total_rows: int  # rows in the table (logs + spans)
    start_ns: int
    end_ns: int
    load_seconds: float
    data_dir: str
    seed_logs: int = 0  # log records generated through the demo generator and ingest mapping
    seed_rows: int = 0  # rows (logs + spans) of that seed
    replicas: int = 1
    seed_seconds: float = 0.0
    span_sample: float = 1.0  # share of traces whose spans are stored
    metric_points: int = 0  # sum points of the demo's metrics (not replicated)
    version: int = 0  # VERSION of the builder that made it; another version is rebuilt

    @property
    def path(self) -> Path:
        return Path(self.data_dir)


def _manifest(path: Path) -> Dataset | None:
    file = path / MANIFEST
    if not file.exists():
        return None
    fields = json.loads(file.read_text())
    if fields.get("version") != VERSION:
        return None
    return Dataset(**fields)


def open_store(data_dir: Path) -> tuple[ChdbBackend, MetaStore, StorageCatalog]:
    backend = ChdbBackend(data_dir / "clickhouse")
    meta = MetaStore.for_data_dir(data_dir)
    meta.migrate()
    catalog = StorageCatalog(backend, meta)
    catalog.sync()
    return backend, meta, catalog


# -- the seed ----------------------------------------------------------------------------------
_TYPES = dict(ROW_FIELDS)


def _conform(tables: list[pa.Table]) -> pa.Table:
    """One table from per-request tables whose column sets differ (absent → default or null)."""
    names = [n for n, _ in ROW_FIELDS if any(n in t.column_names for t in tables)]
    fixed = []
    for t in tables:
        columns = []
        for name in names:
            if name in t.column_names:
                columns.append(t.column(name))
            else:
                sample = rows_to_arrow([{name: None}]).column(name)[0].as_py()  # the default
                columns.append(pa.array([sample] * t.num_rows, type=_TYPES[name]))
        fixed.append(pa.Table.from_arrays(columns, names=names))
    return pa.concat_tables(fixed).combine_chunks()


def _seed(records: int, start_ns: int, end_ns: int, log: Log) -> dict[str, pa.Table]:
    from bzrk.demo.fastlogs import iter_log_requests
    from bzrk.ingest.otlp import map_logs, map_traces

    now_ns = end_ns + 3600 * 10**9
    parts: dict[str, list[pa.Table]] = {"logs": [], "traces": []}
    started = time.monotonic()
    done = 0
    for batch in iter_log_requests(
        start_ns, end_ns, 42, records=records, batch_records=5000, spans=True
    ):
        request = batch.decode()
        mapper = map_logs if batch.signal == "logs" else map_traces
        mapped = mapper(request, now_ns)  # type: ignore[operator]
        # What the ingest pipeline writes: row-mapped signals as rows_to_arrow makes them,
        # column-mapped logs as the mapper's own Arrow tables.
        parts[batch.signal].extend(table for _, table in mapped.batches())
        if batch.signal == "logs":
            done += batch.records
            if done % 50_000 < batch.records:
                log(
                    f"dataset: seed {done:,}/{records:,} log records mapped "
                    f"({time.monotonic() - started:.0f} s)"
                )
    return {signal: _conform(tables) for signal, tables in parts.items() if tables}


# -- scaling -----------------------------------------------------------------------------------
_NIBBLE = np.full(256, 0, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _xor_hex(column: pa.Array, mask: np.ndarray) -> pa.Array:
    """Fixed-width hex ids XOR a nibble mask (nulls stay null): a bijection, so links survive."""
    width = len(mask)
    filled = pc.fill_null(column, "0" * width)
    lengths = pc.utf8_length(filled).to_numpy(zero_copy_only=False)
    if len(lengths) and (lengths.min() != width or lengths.max() != width):
        raise ValueError(f"ids are not {width} hex digits")
    data = filled.combine_chunks() if isinstance(filled, pa.ChunkedArray) else filled
    n = len(data)
    offsets = np.frombuffer(data.buffers()[1], dtype=np.int32)[data.offset : data.offset + n + 1]
    raw = np.frombuffer(data.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    out = _HEX[_NIBBLE[raw.reshape(n, width)] ^ mask].tobytes()
    fresh = pa.StringArray.from_buffers(
        n, pa.py_buffer(np.arange(0, (n + 1) * width, width, dtype=np.int32).tobytes()),
        pa.py_buffer(out),
    )  # fmt: skip
    if column.null_count:
        return pc.if_else(pc.is_null(column), pa.scalar(None, pa.string()), fresh)
    return fresh


def _ns(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Nanoseconds as int64 (nulls as 0) from a timestamp column."""
    return pc.fill_null(column.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)


def _timestamps(ns: np.ndarray, nulls: pa.Array | None) -> pa.Array:
    arr = pa.array(ns, type=pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
    if nulls is not None:
        return pc.if_else(nulls, pa.scalar(None, arr.type), arr)
    return arr


class _Scaler:
    """Replicas of the seed, one day at a time, as described in the module docstring."""

    def __init__(
        self, seed: dict[str, pa.Table], start_ns: int, end_ns: int, span_sample: float
    ) -> None:
        self.start_ns, self.end_ns = start_ns, end_ns
        self.span_sample = span_sample
        # One trace index over both signals, so a trace's logs and spans move together.
        ids = pa.chunked_array([seed[s].column("trace_id") for s in seed]).combine_chunks()
        encoded = pc.dictionary_encode(ids)
        index = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        self.traces = len(encoded.dictionary) + 1  # the last slot: rows without a trace
        index[index < 0] = self.traces - 1
        self.seed: dict[str, pa.Table] = {}
        self.trace_of: dict[str, np.ndarray] = {}
        lo = np.full(self.traces, np.iinfo(np.int64).max)
        hi = np.full(self.traces, np.iinfo(np.int64).min)
        at = 0
        for signal, table in seed.items():
            trace = index[at : at + table.num_rows]
            at += table.num_rows
            times = _ns(table.column("timestamp"))
            starts = (
                _ns(table.column("start_time")) if "start_time" in table.column_names else times
            )
            np.minimum.at(lo, trace, np.minimum(times, np.where(starts > 0, starts, times)))
            np.maximum.at(hi, trace, times)
            order = np.argsort(times, kind="stable")
            self.seed[signal] = table.take(order)
            self.trace_of[signal] = trace[order]
        self.trace_lo, self.trace_hi = lo, hi
        deadlock = pc.match_substring(
            pc.fill_null(self.seed["logs"].column("body"), ""), "deadlock", ignore_case=True
        )
        self.deadlock = deadlock.to_numpy(zero_copy_only=False)

    def day_slices(self, signal: str) -> list[tuple[int, int]]:
        times = _ns(self.seed[signal].column("timestamp"))
        bounds = np.searchsorted(times, np.arange(self.start_ns, self.end_ns + DAY_NS, DAY_NS))
        return [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]

    def plan(self, replica: int) -> tuple[np.ndarray, ...]:
        """Per trace: time shift, latency factor; and this replica's id masks."""
        rng = np.random.default_rng(replica)
        shift = rng.integers(-SHIFT_NS, SHIFT_NS, self.traces)
        # Keep each trace inside the week: flip the shift, else leave the trace in place.
        out = (self.trace_lo + shift < self.start_ns) | (self.trace_hi + shift >= self.end_ns)
        shift[out] = -shift[out]
        out = (self.trace_lo + shift < self.start_ns) | (self.trace_hi + shift >= self.end_ns)
        shift[out] = 0
        factor = np.exp(rng.normal(0.0, 0.2, self.traces))
        factor[-1] = 1.0  # rows without a trace: no span structure to stretch
        trace_mask = rng.integers(0, 16, 32, dtype=np.uint8)
        span_mask = rng.integers(0, 16, 16, dtype=np.uint8)
        sampled = rng.random(self.traces) < self.span_sample
        return shift, factor, trace_mask, span_mask, sampled

    def replica(self, signal: str, lo: int, hi: int, replica: int, plan: tuple) -> pa.Table:
        table = self.seed[signal].slice(lo, hi - lo)
        shift, factor, trace_mask, span_mask, sampled = plan
        trace = self.trace_of[signal][lo:hi]
        if signal == "traces" and self.span_sample < 1:
            keep = sampled[trace]
            table, trace = table.filter(pa.array(keep)), trace[keep]
        if replica == 0:
            return self._ingest_time(table, _ns(table.column("timestamp")), replica)
        if signal == "logs":
            keep = ~self.deadlock[lo:hi]
            table, trace = table.filter(pa.array(keep)), trace[keep]
        t_shift, t_factor, t_lo = shift[trace], factor[trace], self.trace_lo[trace]
        t_lo = np.where(trace == self.traces - 1, 0, t_lo)

        def moved(ns: np.ndarray) -> np.ndarray:
            stretched = t_lo + np.rint((ns - t_lo) * t_factor).astype(np.int64)
            return np.where(trace == self.traces - 1, ns, stretched) + t_shift

        columns = {name: table.column(name) for name in table.column_names}
        for name in _TIME_COLUMNS:
            if name in columns:
                col = columns[name]
                nulls = pc.is_null(col) if col.null_count else None
                columns[name] = _timestamps(moved(_ns(col)), nulls)
        if "duration" in columns:
            col = columns["duration"]
            ticks = np.rint(pc.fill_null(col, 0).to_numpy(zero_copy_only=False) * t_factor)
            nulls = pc.is_null(col) if col.null_count else None
            dur = pa.array(ticks.astype(np.int64))
            columns["duration"] = pc.if_else(nulls, pa.scalar(None, pa.int64()), dur) if nulls is not None else dur  # fmt: skip
        if "attributes" in columns:
            columns["attributes"] = _scale_duration_ms(columns["attributes"], t_factor)
        columns["trace_id"] = _xor_hex(columns["trace_id"].combine_chunks(), trace_mask)
        for name in ("span_id", "parent_span_id"):
            if name in columns:
                columns[name] = _xor_hex(columns[name].combine_chunks(), span_mask)
        table = pa.Table.from_arrays(list(columns.values()), names=list(columns))
        return self._ingest_time(table, _ns(table.column("timestamp")), replica)

    @staticmethod
    def _ingest_time(table: pa.Table, times: np.ndarray, replica: int) -> pa.Table:
        rng = np.random.default_rng(10_000 + replica)
        delay = rng.integers(200_000_000, 3_000_000_000, len(times))
        at = table.column_names.index("ingest_time")
        return table.set_column(at, "ingest_time", _timestamps(times + delay, None))


def _scale_duration_ms(attributes: pa.ChunkedArray, factor: np.ndarray) -> pa.Array:
    """``"duration_ms":x`` inside the attribute JSON text becomes ``x * factor`` (3 decimals)."""
    attrs = attributes.combine_chunks()
    parts = pc.extract_regex(pc.fill_null(attrs, ""), _DURATION_MS)
    found = pc.is_valid(parts)
    if not pc.any(found).as_py():
        return attrs
    num = pc.cast(pc.fill_null(pc.struct_field(parts, "num"), "0"), pa.float64())
    scaled = pc.round(pc.multiply(num, pa.array(factor)), 3)
    rebuilt = pc.binary_join_element_wise(
        pc.struct_field(parts, "pre"), pc.cast(scaled, pa.string()), pc.struct_field(parts, "post"), ""
    )  # fmt: skip
    return pc.if_else(found, rebuilt, attrs)


class _ParquetCopy:
    """The rows of every INSERT, also written to Parquet for the DuckDB peers.

    Bags stay the JSON text the INSERT carried (flat dotted keys, as OTLP attributes come);
    ``service_name`` is ``resource.service.name`` as a plain column for the hand-written DuckDB SQL.
    """

    # Also what the OTel exporter schema's tables are loaded from (bench/otel_schema.py).
    SCHEMA = pa.schema(
        [
            ("timestamp", pa.timestamp("ns", tz="UTC")),
            ("severity_text", pa.string()),
            ("service_name", pa.string()),
            ("body", pa.string()),
            ("trace_id", pa.string()),
            ("span_id", pa.string()),
            ("span_name", pa.string()),
            ("duration", pa.int64()),
            ("resource", pa.string()),
            ("attributes", pa.string()),
            *(
                (name, _TYPES[name])
                for name in (
                    "severity_number",
                    "flags",
                    "parent_span_id",
                    "span_kind",
                    "status_code",
                    "status_message",
                    "start_time",
                    "scope_name",
                    "scope_version",
                    "scope",
                    "metric_name",
                    "metric_type",
                    "metric_unit",
                    "value",
                    "metric_hash",
                    "aggregation_temporality",
                    "is_monotonic",
                )
            ),
        ]
    )

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        self.path = path
        self.tmp = path.with_suffix(".tmp")
        self.writer = pq.ParquetWriter(self.tmp, self.SCHEMA, compression="zstd")
        self.services: dict[str, str | None] = {}

    def _service(self, resource: pa.ChunkedArray) -> pa.Array:
        encoded = pc.dictionary_encode(resource.combine_chunks())
        names = []
        for text in encoded.dictionary.to_pylist():
            if text not in self.services:
                self.services[text] = json.loads(text).get("service.name") if text else None
            names.append(self.services[text])
        return pa.array(names, type=pa.string()).take(encoded.indices)

    def write(self, batch: pa.Table) -> None:
        columns = []
        for field in self.SCHEMA:
            if field.name == "service_name":
                columns.append(self._service(batch.column("resource")))
            elif field.name in batch.column_names:
                columns.append(batch.column(field.name).cast(field.type))
            else:
                columns.append(pa.nulls(batch.num_rows, field.type))
        self.writer.write_table(pa.Table.from_arrays(columns, schema=self.SCHEMA))

    def close(self) -> None:
        self.writer.close()
        self.tmp.rename(self.path)


def _batches(tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """Group tables into INSERTs of about ``INSERT_ROWS`` rows."""
    pending: list[pa.Table] = []
    size = 0
    for table in tables:
        pending.append(table)
        size += table.num_rows
        if size >= INSERT_ROWS:
            yield pa.concat_tables(pending)
            pending, size = [], 0
    if pending:
        yield pa.concat_tables(pending)


def _metrics(start_ns: int, end_ns: int, interval_s: int) -> list[pa.Table]:
    """The demo's sum-metric points over the week, through the OTLP metrics mapping."""
    from bzrk.demo.generator import generate
    from bzrk.ingest.otlp import map_metrics

    tables = []
    for batch in generate(
        start_ns, end_ns, 42, signals=("metrics",), metric_interval_s=interval_s,
        batch_records=20_000,
    ):  # fmt: skip
        mapped = map_metrics(batch.decode(), end_ns + 3600 * 10**9)  # type: ignore[arg-type]
        # Sum points only (counters, up-down counters): the OTel exporter schema's
        # otel_metrics_sum holds them too, so every suite query has the same rows on both.
        tables.extend(
            table.filter(pc.equal(table.column("metric_type"), "sum"))
            for _, table in mapped.batches()
        )
    return tables


def _settle(backend: ChdbBackend, target: str, parquet: Path, log: Log) -> None:
    """Load the OTel exporter schema from the Parquet copy and merge every table's partitions.

    The suite reads a settled store, as a week of ingest leaves it once background merges
    have run: one part per day in every table, bzrk's and the exporter schema's alike.
    """
    from bench import otel_schema

    started = time.monotonic()
    for statement in (*otel_schema.DDL, *otel_schema.load(str(parquet.resolve()))):
        backend.execute(statement)
    log(f"dataset: OTel exporter schema loaded in {time.monotonic() - started:.0f} s")
    started = time.monotonic()
    for statement in (f"OPTIMIZE TABLE {target} FINAL", *otel_schema.optimize()):
        backend.execute(statement)
    log(f"dataset: partitions merged in {time.monotonic() - started:.0f} s")


def build(
    rows: int,
    root: Path,
    log: Log = print,
    seed_logs: int | None = None,
    span_sample: float = SPAN_SAMPLE,
    metric_interval_s: int = METRIC_INTERVAL_S,
) -> tuple[Dataset, ChdbBackend, MetaStore, StorageCatalog]:
    data_dir = root / (str(rows) if span_sample == SPAN_SAMPLE else f"{rows}-spans{span_sample:g}")
    cached = _manifest(data_dir)
    if cached is not None:
        backend, meta, catalog = open_store(data_dir)
        log(f"dataset: reusing {cached.total_rows:,} rows in {data_dir}")
        return cached, backend, meta, catalog
    if data_dir.exists():  # a cache of another builder version, or a build that stopped
        log(f"dataset: removing {data_dir} (not built by this version)")
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    backend, meta, catalog = open_store(data_dir)
    target = catalog.qualified_name("default", "default")
    start_ns, end_ns = ANCHOR_NS - WEEK_NS, ANCHOR_NS
    started = time.monotonic()
    seed_count = min(rows, seed_logs or max(SEED_MIN, rows // 100))
    seed = _seed(seed_count, start_ns, end_ns, log)
    seed_seconds = time.monotonic() - started
    seed_rows = sum(t.num_rows for t in seed.values())
    replicas = math.ceil(rows / seed_count)
    log(
        f"dataset: seed of {seed_count:,} log records ({seed_rows:,} rows with spans) in "
        f"{seed_seconds:.0f} s; scaling ×{replicas}"
    )
    scaler = _Scaler(seed, start_ns, end_ns, span_sample)
    plans = [scaler.plan(r) for r in range(replicas)]
    # Replicas 1.. lose the seed's deadlock lines; the last one is a uniform sample of what is
    # still missing to reach ``rows`` log records, spread over the days like the seed.
    deadlocks = int(scaler.deadlock.sum())
    full = seed_count + (replicas - 2) * (seed_count - deadlocks) if replicas > 1 else rows
    last_share = (rows - full) / max(seed_count - deadlocks, 1) if replicas > 1 else 1.0
    written = logs_written = 0
    slices = {s: scaler.day_slices(s) for s in scaler.seed}
    pool = ThreadPoolExecutor(WRITERS, thread_name_prefix="bench-writer")
    parquet = _ParquetCopy(data_dir / PARQUET)
    pending: deque[Future[int]] = deque()
    for day in range(len(slices["logs"])):
        for signal in scaler.seed:

            def tables(signal: str = signal, day: int = day) -> Iterator[pa.Table]:
                for r in range(replicas):
                    table = scaler.replica(signal, *slices[signal][day], r, plans[r])
                    if signal == "logs" and r == replicas - 1 and r > 0:
                        rng = np.random.default_rng(day)
                        keep = rng.random(table.num_rows) < last_share
                        table = table.filter(pa.array(keep))
                    yield table

            for batch in _batches(tables()):
                # INSERTs parse JSON single-threaded: one writer per core.
                while len(pending) >= WRITERS:
                    written += pending.popleft().result()
                pending.append(pool.submit(write_arrow, backend, target, batch))
                parquet.write(batch)
                if signal == "logs":
                    logs_written += batch.num_rows
        rate = written / max(time.monotonic() - started - seed_seconds, 1e-9)
        log(
            f"dataset: day {day + 1}/7 — {written:,} rows written "
            f"({logs_written:,} logs; {rate:,.0f} rows/s)"
        )
    while pending:
        written += pending.popleft().result()
    pool.shutdown()
    points = _batches(iter(_metrics(start_ns, end_ns, metric_interval_s)))
    metric_points = 0
    for batch in points:
        metric_points += write_arrow(backend, target, batch)
        parquet.write(batch)
    written += metric_points
    log(f"dataset: {metric_points:,} metric points written")
    parquet.close()
    _settle(backend, target, data_dir / PARQUET, log)
    dataset = Dataset(
        rows=logs_written, total_rows=written, start_ns=start_ns, end_ns=end_ns,
        load_seconds=time.monotonic() - started, data_dir=str(data_dir), seed_logs=seed_count,
        seed_rows=seed_rows, replicas=replicas, seed_seconds=seed_seconds, span_sample=span_sample,
        metric_points=metric_points, version=VERSION,
    )  # fmt: skip
    (data_dir / MANIFEST).write_text(json.dumps(asdict(dataset)))
    log(f"dataset: {written:,} rows ({logs_written:,} logs) in {dataset.load_seconds:.0f} s")
    return dataset, backend, meta, catalog


def main() -> None:
    """``python -m bench.dataset --rows N --data DIR``: build (or reuse) a dataset, print its manifest."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--rows", type=int, required=True, help="log records")
    parser.add_argument("--data", type=Path, required=True, help="cache directory")
    parser.add_argument("--seed-logs", type=int, default=None)
    parser.add_argument("--span-sample", type=float, default=SPAN_SAMPLE)
    parser.add_argument("--metric-interval-s", type=int, default=METRIC_INTERVAL_S)
    args = parser.parse_args()
    dataset, backend, meta, catalog = build(
        args.rows, args.data, lambda message: None, args.seed_logs, args.span_sample,
        args.metric_interval_s,
    )  # fmt: skip
    table = catalog.qualified_name("default", "default")
    stored = backend.query_arrow(
        "SELECT countIf(span_name IS NULL AND metric_name IS NULL) AS logs, "
        "countIf(span_name IS NOT NULL) AS spans, countIf(metric_name IS NOT NULL) AS points, "
        "(SELECT count() FROM otel.otel_logs) AS otel_logs, "
        "(SELECT count() FROM otel.otel_traces) AS otel_traces, "
        "(SELECT count() FROM otel.otel_metrics_sum) AS otel_sum_points, "
        f"countIf(metric_type = 'sum') AS sum_points FROM {table}",
        settings=None,
    ).to_pylist()[0]
    backend.close()
    meta.close()
    print(json.dumps({**asdict(dataset), "stored": stored}))


if __name__ == "__main__":
    main()
