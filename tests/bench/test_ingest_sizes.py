"""The ingest benchmark's bytes on disk: as the load left them, once merges settle, merged.

``bench/ingest_throughput.py`` reports the issue-21 figure (bytes per record) once the server's
background merges have settled; right after a short load it varies with how far they got.
This writes a store with several small parts (in a subprocess: chDB holds one store per
process) and reads the three sizes the way the benchmark does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.ingest_throughput import table_bytes
from bzrk.storage.schema import TableLayout, render_create_table

_PARTS = 6
_ROWS = 2_000


def test_settled_bytes_lie_between_the_loads_parts_and_one_merged_part(tmp_path: Path) -> None:
    ddl = render_create_table("bzrk_default.default", TableLayout())
    insert = (
        "INSERT INTO bzrk_default.default (timestamp, ingest_time, body) "
        f"SELECT now64(7), now64(7), concat('request ', toString(number)) FROM numbers({_ROWS})"
    )
    script = (
        "import chdb, sys\n"
        "c = chdb.connect(sys.argv[1])\n"
        "c.query('CREATE DATABASE IF NOT EXISTS bzrk_default')\n"
        "c.query(sys.argv[2])\n"
        "c.query('SYSTEM STOP MERGES bzrk_default.default')\n"
        f"for _ in range({_PARTS}): c.query(sys.argv[3])\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "clickhouse"), ddl, insert],
        check=True,
        capture_output=True,
        timeout=120,
    )
    rows, at_stop, settled, merged = table_bytes(tmp_path, settle_s=30)
    assert rows == _PARTS * _ROWS
    assert merged <= settled <= at_stop
    assert merged < at_stop  # six parts' overhead is more than one part's
