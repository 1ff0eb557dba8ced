"""The conformance corpora through the engine: pass counts may only go up.

The floors sit a few cases under the counts last reached (a handful of cases pick an arbitrary
row, as Kusto does); a regression fails here.
The whole run takes about ten seconds on chDB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bzrk.engine.conformance.runner import load_cases, run_corpus

FLOORS = {
    "docs-emulator.jsonl": 766,
    "docs-tables.jsonl": 654,
    "loco.jsonl": 457,
}


@pytest.mark.parametrize("corpus", sorted(FLOORS))
def test_conformance_floor(chdb_backend, shared_dir: Path, corpus: str) -> None:  # type: ignore[no-untyped-def]
    path = shared_dir / "kql-conformance" / corpus
    if not path.exists():
        pytest.skip(f"no corpus at {path} (set BZRK_SHARED_DIR)")
    outcomes = run_corpus(chdb_backend, load_cases(path))
    passed = sum(o.status == "pass" for o in outcomes)
    assert passed >= FLOORS[corpus], f"{corpus}: {passed} pass, floor {FLOORS[corpus]}"
    # Nothing may be left running after the run (the cases run through the query service,
    # whose queries carry their run's id).
    leftover = chdb_backend.query_arrow(
        "SELECT count() AS n FROM system.processes WHERE query LIKE '%bzrk_qid:%'"
        " AND query NOT LIKE '%system.processes%'"
    )
    assert leftover.column("n").to_pylist() == [0]
