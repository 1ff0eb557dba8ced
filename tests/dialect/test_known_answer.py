"""Known-answer checks of Berserk's semantics over a crafted OTLP dataset (``known_answer.py``).

The dataset goes through the real ingest path (OTLP/HTTP protobuf, and one trace through the
OpenTelemetry SDK's gRPC exporter) into a ``bzrk dev`` of this module's own; each entry of
``known_answer.yaml`` is one query with its exact answer and where that answer comes from. What
fails today is listed in ``xfail.yaml`` (section ``known_answer``), as strict xfails.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bzrk.testing import DevServer

from .corpus import KNOWN_ANSWER, gaps, load, params, record
from .demo_facts import iso
from .expect import check
from .known_answer import (
    ROUTED_TABLE,
    TRACE_A,
    TRACE_B,
    Dataset,
    hour_start,
    send,
    send_sdk_trace,
)
from .surfaces import RUNNERS, Server, Window, cli_env, cli_profile, run_http

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dialect")]

CHECKS = load(KNOWN_ANSWER)
GAPS = gaps("known_answer")
EXPECTED_ROWS = 38


@pytest.fixture(scope="module")
def ka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Dataset]]:
    dev = DevServer(tmp_path_factory.mktemp("dialect-ka"))
    dev.start()
    try:
        server = Server(dev.credentials, tmp_path_factory.mktemp("dialect-ka-cli"))
        cli_profile(server)
        created = subprocess.run(
            [sys.executable, "-m", "bzrk", "table", "create", ROUTED_TABLE],
            env=cli_env(server), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        dataset = Dataset(hour_start())
        send(dev.credentials["otlp_http"], dev.credentials["ingest_token"], dataset)
        send_sdk_trace(dev.credentials["otlp_grpc"], dev.credentials["ingest_token"], dataset)
        yield server, dataset
    finally:
        dev.stop()


def _window(dataset: Dataset) -> Window:
    return Window(iso(dataset.t0), iso(dataset.at(3600)))


def _tokens(dataset: Dataset) -> dict[str, str]:
    return {
        "{t0}": iso(dataset.t0),
        "{t480}": iso(dataset.at(480)),
        "{t490}": iso(dataset.at(490)),
        "{trace_a}": TRACE_A,
        "{trace_b}": TRACE_B,
    }


def _substitute(value: Any, tokens: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, text in tokens.items():
            value = value.replace(key, text)
        return value
    if isinstance(value, list):
        return [_substitute(v, tokens) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, tokens) for k, v in value.items()}
    return value


def test_the_dataset_arrived_whole(ka: tuple[Server, Dataset]) -> None:
    """Every record was acknowledged and is queryable (the checks below rely on it)."""
    server, dataset = ka
    spans = run_http(
        server, "default | where resource.service.name == 'ka-sdk' | count", _window(dataset)
    )
    assert spans.primary.rows == [[2]], "the SDK exporter's spans are missing"
    assert len(CHECKS["checks"]) >= 60


def test_every_known_gap_names_a_check() -> None:
    ids = {e["id"] for e in CHECKS["checks"]}
    assert not set(GAPS) - ids, f"xfail.yaml names unknown checks: {sorted(set(GAPS) - ids)}"


@pytest.mark.parametrize("entry", params(CHECKS["checks"], GAPS))
def test_known_answer(entry: dict[str, Any], ka: tuple[Server, Dataset]) -> None:
    server, dataset = ka
    tokens = _tokens(dataset)
    text = _substitute(entry["query"], tokens)
    window = Window(None, None) if entry.get("window") == "none" else _window(dataset)
    started = time.monotonic()
    result = RUNNERS[entry.get("surface", "http")](server, text, window)
    problems = check(_substitute(entry["expect"], tokens), result, {}, None)
    record(entry["id"], text, problems, time.monotonic() - started)
    assert not problems, f"{entry['id']} [{entry['basis']}]: {text}\n" + "\n".join(problems)
