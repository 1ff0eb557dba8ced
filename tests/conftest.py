"""Shared fixtures.

chDB opens one store per process: ``chdb_backend`` is one store per test process (per xdist
worker), and ``ch_database`` gives each test its own ClickHouse database inside it.
``dev_server`` is one real ``bzrk dev`` subprocess per test session, with demo data.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bzrk.engine.conformance import shared_dir
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.naming import TableNaming

# The real-engine corpora and specs live beside the repo in ../shared (never copied into it);
# BZRK_SHARED_DIR points elsewhere (e.g. from a git worktree).
SHARED = shared_dir(Path(__file__).resolve().parents[1])


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return SHARED


@pytest.fixture(scope="session")
def chdb_backend(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from bzrk.engine.backends.chdb_backend import ChdbBackend

    backend = ChdbBackend(tmp_path_factory.mktemp("chdb-store"))
    yield backend
    backend.close()


@pytest.fixture
def ch_database(chdb_backend) -> Iterator[str]:  # type: ignore[no-untyped-def]
    name = f"t_{uuid.uuid4().hex[:12]}"
    chdb_backend.execute(f"CREATE DATABASE {name}")
    yield name
    chdb_backend.execute(f"DROP DATABASE IF EXISTS {name} SYNC")


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from bzrk.testing import DevServer

    # Every progressive slice runs: the surfaces' tests follow the four snapshots of a day.
    # By default the 1/8 slice of a query projected to answer within 500 ms is skipped, a
    # decision that depends on timing (tests/engine/test_progressive_window.py covers it).
    server = DevServer(
        tmp_path_factory.mktemp("dev-data"),
        demo=True,
        extra_env={"BZRK_QUERY_PROGRESSIVE_DIRECT_BELOW_MS": "0"},
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def meta(tmp_path: Path) -> Iterator[MetaStore]:
    """A migrated metadata store of this test's own."""
    store = MetaStore.for_data_dir(tmp_path)
    store.migrate()
    yield store
    store.close()


@pytest.fixture
def catalog(chdb_backend, meta: MetaStore) -> Iterator[StorageCatalog]:  # type: ignore[no-untyped-def]
    """A storage catalogue over the process's chDB store, in ClickHouse databases of its own."""
    naming = TableNaming(prefix=f"t{uuid.uuid4().hex[:10]}_")
    cat = StorageCatalog(chdb_backend, meta, naming)
    cat.sync()
    yield cat
    for db in meta.list_databases():
        chdb_backend.execute(f"DROP DATABASE IF EXISTS `{naming.database(db.name)}` SYNC")


# The dialect suites' pass rates at the end of the run (runs in the xdist controller).
from tests.dialect.report import pytest_terminal_summary  # noqa: E402, F401
