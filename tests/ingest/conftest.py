"""Fixtures: a metadata store and a storage catalogue over the session's chDB store."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.naming import TableNaming


@pytest.fixture
def meta(tmp_path: Path) -> Iterator[MetaStore]:
    store = MetaStore.for_data_dir(tmp_path)
    store.migrate()
    yield store
    store.close()


@pytest.fixture
def catalog(chdb_backend, meta: MetaStore) -> Iterator[StorageCatalog]:  # type: ignore[no-untyped-def]
    # A unique ClickHouse database prefix per test keeps tests apart inside one chDB store.
    naming = TableNaming(prefix=f"t{uuid.uuid4().hex[:10]}_")
    cat = StorageCatalog(chdb_backend, meta, naming)
    cat.sync()
    yield cat
    for db in meta.list_databases():
        chdb_backend.execute(f"DROP DATABASE IF EXISTS `{naming.database(db.name)}` SYNC")


@pytest.fixture
def ingest_token(catalog: StorageCatalog) -> str:
    from bzrk.auth.accounts import create_ingest_token

    return create_ingest_token(catalog.meta, "test", "default", "default").value


@pytest.fixture
def pipeline(catalog: StorageCatalog):  # type: ignore[no-untyped-def]
    from bzrk.ingest.batcher import Batching
    from bzrk.ingest.pipeline import IngestPipeline

    return IngestPipeline(
        catalog,
        catalog.meta,
        batching=Batching(max_rows=10_000, max_wait_s=0.02),
        max_inflight_bytes=64 * 1024 * 1024,
        max_body_bytes=4 * 1024 * 1024,
    )


@pytest.fixture
def ingest_app(pipeline):  # type: ignore[no-untyped-def]
    from starlette.applications import Starlette

    from bzrk.ingest.http import create_loki_routes, otlp_routes

    return Starlette(routes=[*otlp_routes(pipeline), *create_loki_routes(pipeline)])


def query(catalog: StorageCatalog, sql: str) -> list[dict]:
    """Run SQL with ``{t}`` replaced by the default table's qualified name."""
    return catalog.backend.query_arrow(
        sql.format(t=catalog.qualified_name("default", "default"))
    ).to_pylist()


def read_store(data_dir: Path, sql: str) -> list[dict]:
    """Run SQL against a stopped dev server's chDB store, in a subprocess (one store per process)."""
    import json
    import subprocess
    import sys

    script = (
        "import chdb, sys\n"
        "conn = chdb.connect(sys.argv[1])\n"
        "print(conn.query(sys.argv[2], 'JSONEachRow'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(data_dir / "clickhouse"), sql],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]
