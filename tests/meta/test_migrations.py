"""The metadata schema migrates from empty on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bzrk.meta import schema
from bzrk.meta.store import (
    DEFAULT_DATABASE,
    DEFAULT_TABLE,
    Conflict,
    MetaStore,
    NotFound,
    utcnow,
)


def _check_store(store: MetaStore) -> None:
    store.migrate()
    store.migrate()  # idempotent
    assert store.current_revision() is not None
    inspector = sa.inspect(store.engine)
    assert set(schema.metadata.tables) <= set(inspector.get_table_names())
    assert [db.name for db in store.list_databases()] == [DEFAULT_DATABASE]
    assert [(t.database, t.name) for t in store.list_tables()] == [
        (DEFAULT_DATABASE, DEFAULT_TABLE)
    ]
    created = store.create_table(
        DEFAULT_DATABASE, "audit", retention_days=7, shard_fields={"trace_id": 2}
    )
    assert store.get_table(DEFAULT_DATABASE, created.id).name == "audit"
    assert store.get_table(DEFAULT_DATABASE, "audit").shard_fields == {"trace_id": 2}
    with pytest.raises(Conflict):
        store.create_table(DEFAULT_DATABASE, "audit")
    store.drop_table(DEFAULT_DATABASE, "audit")
    with pytest.raises(NotFound, match="table 'audit' not found"):
        store.get_table(DEFAULT_DATABASE, "audit")
    with pytest.raises(NotFound, match="database 'nope' not found"):
        store.get_database("nope")


def test_sqlite_from_empty(tmp_path: Path) -> None:
    store = MetaStore.for_data_dir(tmp_path)
    try:
        _check_store(store)
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        store.close()


def _find_pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    initdb, pg_ctl = _find_pg_bin("initdb"), _find_pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    # Not under pytest's tmp dir: its parents are private to root, and PostgreSQL runs as postgres.
    base = Path(tempfile.mkdtemp(prefix="bzrk-pg-"))
    data = base / "data"
    run_as: list[str] = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: run it as the postgres system user.
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL")
        run_as = ["runuser", "-u", "postgres", "--"]
        shutil.chown(base, "postgres")
        base.chmod(0o700)
    port = _free_port()
    subprocess.run(
        [*run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *run_as,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(base / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run_as, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True
        )
        time.sleep(0.1)
        shutil.rmtree(base, ignore_errors=True)


def test_postgresql_from_empty(postgres_url: str) -> None:
    store = MetaStore(postgres_url)
    try:
        _check_store(store)
    finally:
        store.close()


def _check_0003(store: MetaStore) -> None:
    """Runs and saved queries named their owner by a bare name; 0003 makes them keys, and a
    name both a user and a service principal carry cannot be attributed to either."""
    store.migrate("0002")
    now = utcnow()
    with store.engine.begin() as conn:
        for user_id, name, role in (
            ("u-alice", "alice", "member"),
            ("u-dev", "dev", "member"),
            ("u-root", "root", "admin"),
        ):
            conn.execute(
                sa.insert(schema.users).values(
                    id=user_id,
                    username=name,
                    display_name="",
                    role=role,
                    disabled=False,
                    created_at=now,
                )
            )
        for sp_id, name, role in (("s-dev", "dev", "admin"), ("s-ci", "ci", "member")):
            conn.execute(
                sa.insert(schema.service_principals).values(
                    id=sp_id, name=name, display_name="", role=role, created_at=now
                )
            )
        for run_id, owner in (("r1", "alice"), ("r2", "dev"), ("r3", "ci"), ("r4", "gone")):
            conn.execute(
                sa.insert(schema.runs).values(
                    id=run_id,
                    query="print 1",
                    database="default",
                    parameters={},
                    principal=owner,
                    surface="mcp",
                    status="complete",
                    started_at=now,
                )
            )
        conn.execute(
            sa.insert(schema.saved_queries).values(
                id="q1",
                folder="",
                name="mine",
                query="print 1",
                description="",
                owner="alice",
                created_at=now,
                updated_at=now,
            )
        )
    store.migrate("0003")
    assert store.current_revision() == "0003"
    with store.engine.connect() as conn:
        owners = dict(conn.execute(sa.select(schema.runs.c.id, schema.runs.c.principal)).all())
        saved = conn.execute(sa.select(schema.saved_queries.c.owner)).scalar()
        grants = {
            (row.principal, row.relation)
            for row in conn.execute(sa.select(schema.grants.c.principal, schema.grants.c.relation))
        }
    assert owners == {
        "r1": "user:u-alice",
        "r2": "legacy:dev",
        "r3": "sp:s-ci",
        "r4": "legacy:gone",
    }
    assert saved == "user:u-alice"
    # Members keep what a new member gets: viewer on default; admins need no tuple.
    assert grants == {("user:u-alice", "viewer"), ("user:u-dev", "viewer"), ("sp:s-ci", "viewer")}


def test_0003_rewrites_owner_names_as_principal_keys(tmp_path: Path) -> None:
    store = MetaStore.for_data_dir(tmp_path)
    try:
        _check_0003(store)
    finally:
        store.close()


def test_0003_on_postgresql(postgres_url: str) -> None:
    store = MetaStore(postgres_url)
    try:
        _check_0003(store)
    finally:
        store.close()


def test_the_metadata_file_is_private(tmp_path: Path) -> None:
    store = MetaStore.for_data_dir(tmp_path)
    store.migrate()
    store.close()
    for name in ("meta.sqlite3", "meta.sqlite3-wal", "meta.sqlite3-shm"):
        path = tmp_path / name
        if path.exists():
            assert path.stat().st_mode & 0o077 == 0, name
