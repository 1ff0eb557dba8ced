"""Storage metrics, read from ClickHouse's system tables when the query listener is scraped.

Per bzrk table (``database``, ``table`` labels): active parts, rows, bytes on disk and
uncompressed, merges running, and the ingest lag — how far the newest stored event trails now,
from the parts' min-max index (``system.parts.max_time``, second precision), so no table data is
read. The tables are the catalogue's; a scrape costs one metadata query and two small system
table queries, run in the scrape's worker thread (``bzrk.server.health``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bzrk.engine.backends.base import Backend
from bzrk.engine.errors import EngineError
from bzrk.metrics import registry
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.naming import quote_string

log = logging.getLogger(__name__)

_LABELS = ["database", "table"]


def _parts_sql(prefix: str) -> str:
    return (
        "SELECT database, table, count() AS parts, toInt64(sum(rows)) AS rows,"
        " toInt64(sum(bytes_on_disk)) AS bytes, toInt64(sum(data_uncompressed_bytes)) AS raw,"
        " toInt64(toUnixTimestamp(max(max_time))) AS newest"
        f" FROM system.parts WHERE active AND startsWith(database, {quote_string(prefix)})"
        " GROUP BY database, table"
    )


def _merges_sql(prefix: str) -> str:
    return (
        "SELECT database, table, count() AS merges FROM system.merges"
        f" WHERE startsWith(database, {quote_string(prefix)}) GROUP BY database, table"
    )


class StorageCollector(Collector):
    """The storage families; bound to the process's catalogue once the query service starts."""

    def __init__(self) -> None:
        self._catalog: StorageCatalog | None = None
        self._lock = threading.Lock()

    def bind(self, catalog: StorageCatalog) -> None:
        with self._lock:
            self._catalog = catalog

    def describe(self) -> Iterator[Any]:
        return iter(self._families())

    def collect(self) -> Iterator[Any]:
        families = self._families()
        with self._lock:
            catalog = self._catalog
        if catalog is None:
            return iter(families)
        try:
            self._fill(catalog, catalog.backend, families)
        except (EngineError, OSError):
            log.warning("storage metrics unavailable", exc_info=True)
        return iter(families)

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        return [
            GaugeMetricFamily("bzrk_storage_parts", "Active data parts.", labels=_LABELS),
            GaugeMetricFamily("bzrk_storage_rows", "Rows stored.", labels=_LABELS),
            GaugeMetricFamily(
                "bzrk_storage_bytes", "Bytes on disk (compressed) of active parts.", labels=_LABELS
            ),
            GaugeMetricFamily(
                "bzrk_storage_uncompressed_bytes",
                "Uncompressed bytes of active parts.",
                labels=_LABELS,
            ),
            GaugeMetricFamily(
                "bzrk_storage_merges_running", "Background merges running now.", labels=_LABELS
            ),
            GaugeMetricFamily(
                "bzrk_storage_ingest_lag_seconds",
                "How far the newest stored event trails now (0 when the newest is in the future).",
                labels=_LABELS,
            ),
        ]

    @staticmethod
    def _fill(catalog: StorageCatalog, backend: Backend, families: list[GaugeMetricFamily]) -> None:
        parts, rows, size, raw, merges, lag = families
        prefix = catalog.naming.prefix
        tables = {
            (catalog.naming.database(db.name), name): (db.name, name)
            for db in catalog.list_databases()
            for name in db.tables
        }
        running = {
            (r["database"], r["table"]): int(r["merges"])
            for r in backend.query_arrow(_merges_sql(prefix)).to_pylist()
        }
        now = time.time()
        seen = set()
        for r in backend.query_arrow(_parts_sql(prefix)).to_pylist():
            key = (r["database"], r["table"])
            if key not in tables:
                continue  # ClickHouse tables of a table's own (path registries), not bzrk tables
            seen.add(key)
            labels = list(tables[key])
            parts.add_metric(labels, int(r["parts"]))
            rows.add_metric(labels, int(r["rows"]))
            size.add_metric(labels, int(r["bytes"]))
            raw.add_metric(labels, int(r["raw"]))
            merges.add_metric(labels, running.get(key, 0))
            lag.add_metric(labels, max(0.0, now - int(r["newest"])))
        for key, labels in tables.items():
            if key not in seen:  # an empty table: no parts, nothing to lag behind
                for family in (parts, rows, size, raw, merges):
                    family.add_metric(list(labels), 0)


STORAGE = StorageCollector()
registry("query").register(STORAGE)
