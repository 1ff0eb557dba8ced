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
