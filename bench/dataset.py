"""The benchmark dataset: demo logs (and the spans of their traces) loaded through the real storage path.

``build(rows, data_dir)`` generates a week of demo telemetry with :func:`bzrk.demo.fastlogs.iter_log_requests`
(``rows`` log records plus the spans of their traces), maps each OTLP request with the ingest
mapping (:mod:`bzrk.ingest.otlp`) and writes it with :func:`bzrk.storage.writer.write_rows` into
a bzrk table created by :class:`bzrk.storage.catalog.StorageCatalog` — the same code the ingest
service runs. The result is cached in ``bench/data/<rows>/`` (ClickHouse store, metadata and a
manifest); a later run with the same row count reuses it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bzrk.engine.backends.chdb_backend import ChdbBackend
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.writer import write_rows

WEEK_NS = 7 * 24 * 3600 * 10**9
# A fixed anchor keeps the data identical between runs (and cacheable): the week ending here.
ANCHOR_NS = 1_764_460_800 * 10**9  # 2025-11-30T00:00:00Z
MANIFEST = "manifest.json"


@dataclass
class Dataset:
    rows: int  # log records requested
    total_rows: int  # rows in the table (logs + spans)
    start_ns: int
    end_ns: int
    load_seconds: float
    data_dir: str

    @property
    def path(self) -> Path:
        return Path(self.data_dir)


def _manifest(path: Path) -> Dataset | None:
    file = path / MANIFEST
    if not file.exists():
        return None
    return Dataset(**json.loads(file.read_text()))


def open_store(data_dir: Path) -> tuple[ChdbBackend, MetaStore, StorageCatalog]:
    backend = ChdbBackend(data_dir / "clickhouse")
    meta = MetaStore.for_data_dir(data_dir)
    meta.migrate()
    catalog = StorageCatalog(backend, meta)
    catalog.sync()
    return backend, meta, catalog


def build(
    rows: int, root: Path, log=print
) -> tuple[Dataset, ChdbBackend, MetaStore, StorageCatalog]:  # type: ignore[no-untyped-def]
    from bzrk.demo.fastlogs import iter_log_requests
    from bzrk.ingest.otlp import map_logs, map_traces

    data_dir = root / str(rows)
    cached = _manifest(data_dir)
    if cached is not None:
        backend, meta, catalog = open_store(data_dir)
        log(f"dataset: reusing {cached.total_rows:,} rows in {data_dir}")
        return cached, backend, meta, catalog
    data_dir.mkdir(parents=True, exist_ok=True)
    backend, meta, catalog = open_store(data_dir)
    target = catalog.qualified_name("default", "default")
    start_ns, end_ns = ANCHOR_NS - WEEK_NS, ANCHOR_NS
    started = time.monotonic()
    written = 0
    pending: list[dict[str, object]] = []
    now_ns = end_ns + 3600 * 10**9
    for batch in iter_log_requests(
        start_ns, end_ns, 42, records=rows, batch_records=5000, spans=True
    ):
        request = batch.decode()
        mapped = (
            map_logs(request, now_ns) if batch.signal == "logs" else map_traces(request, now_ns)
        )  # type: ignore[arg-type]
        for table_rows in mapped.rows.values():
            pending.extend(table_rows)
        if len(pending) >= 200_000:
            written += write_rows(backend, target, pending)
            pending = []
            rate = written / max(time.monotonic() - started, 1e-9)
            log(f"dataset: {written:,} rows written ({rate:,.0f} rows/s)")
    if pending:
        written += write_rows(backend, target, pending)
    dataset = Dataset(rows, written, start_ns, end_ns, time.monotonic() - started, str(data_dir))
    (data_dir / MANIFEST).write_text(json.dumps(asdict(dataset)))
    log(f"dataset: {written:,} rows in {dataset.load_seconds:.0f} s")
    return dataset, backend, meta, catalog
