"""A data dir written by an older bzrk opens with today's code: same rows, same answers, today's
part layout.

The old writer is the real code of an earlier commit (``git archive`` of its ``src/``), run in
a subprocess against a fresh data dir: its catalogue creates the tables, its OTLP mapping and
writer store the records. Today's code then opens the same dir (in another subprocess: chDB
holds one store per process), answers KQL through the query service, and has moved the table
to today's layout settings.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# main when the storage layout changed (issue 21): the last layout before it.
OLD_LAYOUT_COMMIT = "9b6e33e"
# main before the codecs and the sorting key changed (issue 21, second step): the part
# settings of the first step, ZSTD(1) on every time column, ORDER BY (service, timestamp).
ZSTD_LAYOUT_COMMIT = "5c1c61c"

# Opens the store of the data dir in argv[1] with the code on PYTHONPATH, as `bzrk dev` does.
_OPEN = r"""
import sys
from pathlib import Path
from bzrk.engine.backends.chdb_backend import ChdbBackend
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog

data = Path(sys.argv[1])
backend = ChdbBackend(data / "clickhouse")
meta = MetaStore.for_data_dir(data)
meta.migrate()
catalog = StorageCatalog(backend, meta)
catalog.sync()
"""

_WRITE = (
    _OPEN
    + r"""
import time
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from bzrk.ingest.otlp import map_logs
from bzrk.storage.writer import write_arrow

now = time.time_ns()
request = ExportLogsServiceRequest()
for service in ("checkout", "cart"):
    rl = request.resource_logs.add()
    kv = rl.resource.attributes.add(key="service.name")
    kv.value.string_value = service
    scope = rl.scope_logs.add()
    for i in range(30):
        rec = scope.log_records.add(time_unix_nano=now - i * 10**9, severity_number=17 if i % 3 == 0 else 9)
        rec.severity_text = "ERROR" if i % 3 == 0 else "INFO"
        rec.body.string_value = f"{service} request {i} done"
        attr = rec.attributes.add(key="http.route")
        attr.value.string_value = f"/{service}/{i % 2}"
target = catalog.qualified_name("default", "default")
for _, table in map_logs(request, now).batches():
    write_arrow(backend, target, table)
backend.close()
meta.close()
"""
)

_READ = (
    _OPEN
    + r"""
import asyncio, json
from bzrk.engine.events import RowBatch, Error
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService

service = QueryService(backend, catalog=catalog)

async def rows(text):
    out = []
    async for event in service.execute(QueryRequest(query=text, database="default", since="1h ago", progressive=False)):
        if isinstance(event, Error):
            raise SystemExit(event.message)
        if isinstance(event, RowBatch):
            out.extend(list(r) for r in event.rows)
    return out

answers = {
    "errors": asyncio.run(rows('default | where severity_text == "ERROR" | summarize n = count() by s = tostring(resource.service.name) | order by s asc')),
    "routes": asyncio.run(rows('default | summarize n = count() by r = tostring(attributes["http.route"]) | order by r asc')),
    "raw": asyncio.run(rows('default | where body == "cart request 3 done" | project b = tostring($raw.body)')),
    "record": asyncio.run(rows('default | where body == "cart request 3 done" | project r = tostring($raw) | project has_body = r has "cart request 3 done", has_route = r has "/cart/1"')),
}
create = backend.query_arrow("SHOW CREATE TABLE bzrk_default.default", settings=None).column(0)[0].as_py()
print(json.dumps({"answers": answers, "create": create}))
backend.close()
meta.close()
"""
)


def _run(src: Path, script: str, data: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", script, str(data)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _old_source(target: Path, commit: str = OLD_LAYOUT_COMMIT) -> Path:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, "src"],
        cwd=ROOT, capture_output=True, timeout=60,
    )  # fmt: skip
    if archive.returncode != 0:
        pytest.skip(f"commit {commit} is not in this clone: {archive.stderr[:200]!r}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def _written_by_then_read_by_today(
    tmp_path: Path, commit: str = OLD_LAYOUT_COMMIT
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``tmp_path/data`` written by ``commit``'s code: what that code and today's read from it."""
    old_src = _old_source(tmp_path / "old", commit)
    data = tmp_path / "data"
    _run(old_src, _WRITE, data)
    before = json.loads(_run(old_src, _READ, data))
    after = json.loads(_run(ROOT / "src", _READ, data))
    return before, after


def test_a_data_dir_of_the_previous_layout_opens_and_answers_the_same(tmp_path: Path) -> None:
    before, after = _written_by_then_read_by_today(tmp_path)
    assert after["answers"] == before["answers"]
    assert after["answers"]["errors"] == [["cart", 10], ["checkout", 10]]
    assert after["answers"]["raw"] == [["cart request 3 done"]]
    # The old table now has today's part layout.
    from bzrk.storage.schema import LAYOUT_SETTINGS

    for name, value in LAYOUT_SETTINGS.items():
        assert f"{name} = {value}" in after["create"], after["create"]
    assert "min_rows_for_wide_part = 4000000" in before["create"]
    # The record is computed by the query now: the old table's ALIAS column is gone, and the
    # whole record reads the same.
    assert "`$raw` JSON ALIAS" in before["create"]
    assert "$raw" not in after["create"], after["create"]
    assert after["answers"]["record"] == [[True, True]]


def test_a_data_dir_of_the_zstd_layout_takes_todays_codecs_and_keeps_its_key(
    tmp_path: Path,
) -> None:
    before, after = _written_by_then_read_by_today(tmp_path, ZSTD_LAYOUT_COMMIT)
    assert after["answers"] == before["answers"]
    assert after["answers"]["errors"] == [["cart", 10], ["checkout", 10]]
    assert "`timestamp` DateTime64(7, 'UTC') CODEC(Delta(8), ZSTD(1))" in before["create"]
    assert "`timestamp` DateTime64(7, 'UTC') CODEC(Delta(8), LZ4)" in after["create"]
    assert "`duration` Nullable(Int64) CODEC(LZ4)" in after["create"], after["create"]
    # The sorting key cannot change in place: the old table keeps it (and answers the same).
    assert "ORDER BY (resource.`service.name`, timestamp)" in after["create"]
    # It takes today's fixed skip indexes (metadata only: parts written from now on carry them).
    assert "INDEX idx_duration duration TYPE minmax" not in before["create"]
    assert "INDEX idx_duration duration TYPE minmax GRANULARITY 1" in after["create"]
    # Rows written after the change go into parts with the new codecs.
    data = tmp_path / "data"
    _run(ROOT / "src", _WRITE, data)
    again = json.loads(_run(ROOT / "src", _READ, data))
    assert again["answers"]["errors"] == [["cart", 20], ["checkout", 20]]
