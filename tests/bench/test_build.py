"""The benchmark's dataset builder end to end, on a tiny dataset (the same code ``make bench`` runs).

The builder maps its seed through the ingest service's own mapping; when that mapping changed
shape (logs went column-wise into Arrow) the builder broke and ``make bench-quick`` failed on a
clean clone. This builds a few thousand rows through it, in a subprocess (chDB holds one store
per process), and checks what landed in the store and the Parquet copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _build(data: Path, rows: int, seed_logs: int) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.dataset", "--rows", str(rows), "--data", str(data),
         "--seed-logs", str(seed_logs), "--metric-interval-s", "3600"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    data = tmp_path_factory.mktemp("bench-data")
    return data, _build(data, rows=3000, seed_logs=1000)


def test_a_tiny_dataset_builds_through_the_ingest_mapping_and_is_reused(
    built: tuple[Path, dict],
) -> None:
    data, manifest = built
    assert manifest["replicas"] == 3
    # Exactly the requested log records (the last replica is sampled to the target, within a
    # few rows), plus the spans of the sampled traces.
    assert abs(manifest["rows"] - 3000) <= 30
    assert manifest["total_rows"] > manifest["rows"]
    assert manifest["stored"]["logs"] == manifest["rows"]
    stored = manifest["stored"]
    assert stored["spans"] + stored["points"] == manifest["total_rows"] - manifest["rows"]
    assert stored["points"] == manifest["metric_points"] > 0
    # The OTel exporter schema holds the same records, split as the exporter splits them.
    assert (stored["otel_logs"], stored["otel_traces"], stored["otel_sum_points"]) == (
        stored["logs"], stored["spans"], stored["sum_points"],
    )  # fmt: skip
    copy = pq.read_table(Path(manifest["data_dir"]) / "logs.parquet")
    assert copy.num_rows == manifest["total_rows"]
    assert set(copy.column("service_name").to_pylist()) - {None}
    # A second run finds the cache instead of building again.
    again = _build(data, rows=3000, seed_logs=1000)
    assert again["load_seconds"] == manifest["load_seconds"]


def test_show_sql_times_the_services_sql_with_its_settings(built: tuple[Path, dict]) -> None:
    """``bench.show_sql --time`` runs the generated SQL with the settings the service sent
    (hourly_histogram failed with NOT_AN_AGGREGATE without prefer_column_name_to_alias), and a
    run reads the path registry's facts itself instead of asking them inside its SQL."""
    data, _ = built
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.show_sql", "--rows", "3000", "--data", str(data),
         "--query", "hourly_histogram", "--query", "metric_rate", "--time", "--runs", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("generated / hand") == 2
    metric = out.stdout[out.stdout.index("== metric_rate") :]
    generated = metric.split("-- generated:\n")[1:]
    # The registry read, then the query: the strings-only pod name is ClickHouse's cast.
    assert generated[0].startswith("SELECT bag, json_path, json_type FROM")
    assert "$paths" not in generated[1]
    assert "CAST(`resource`.`k8s`.`pod`.`name` AS String)" in generated[1]


def test_every_suite_query_runs_on_the_stored_layout(built: tuple[Path, dict]) -> None:
    """Each suite query's KQL and its hand-written SQL on bzrk's table run on the tiny dataset
    (the SQL spells stored columns: when the ids became bytes, the run stopped at its first
    query that named ``trace_id``), with a trace id of the dataset."""
    data, _ = built
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.show_sql", "--rows", "3000", "--data", str(data),
         "--time", "--runs", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    from bench.suite import SUITE

    assert out.stdout.count("generated / hand") == len(SUITE)
    assert "{TRACE}" not in out.stdout
