"""Ingest fixtures: a token, a pipeline and the receivers' app over the shared `catalog` fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from bzrk.storage.catalog import StorageCatalog


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
