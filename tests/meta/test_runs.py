from pathlib import Path

import pytest

from bzrk.meta.runs import RunStore
from bzrk.meta.store import MetaStore, NotFound, new_id


def test_run_round_trip(tmp_path: Path) -> None:
    store = MetaStore.for_data_dir(tmp_path)
    store.migrate()
    runs = RunStore(store)
    run_id = new_id()
    runs.start(
        run_id,
        query="print 1",
        database="default",
        parameters={"since": "1h ago"},
        principal="sp:dev",
        surface="mcp",
    )
    assert runs.get(run_id).status == "running"
    runs.finish(
        run_id,
        status="complete",
        progress={"rows_processed": 1},
        result={"columns": ["print_0"], "rows": [[1]]},
    )
    record = runs.get(run_id)
    assert record.status == "complete"
    assert record.result == {"columns": ["print_0"], "rows": [[1]]}
    assert record.duration_ms is not None and record.duration_ms >= 0
    assert [r.id for r in runs.list_recent("sp:dev")] == [run_id]
    with pytest.raises(NotFound, match="run 'nope' not found"):
        runs.get("nope")
    store.close()
