"""Fixtures of the dialect suites: a real ``bzrk dev --demo`` of the module's own, and what the
demo generator sent to it (regenerated here, so that answers are known)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bzrk.testing import DevServer

from .demo_facts import DemoFacts, iso
from .surfaces import Server, Window, run_http


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevServer, Server]]:
    dev = DevServer(tmp_path_factory.mktemp("dialect-demo"), demo=True)
    dev.start()
    try:
        yield dev, Server(dev.credentials, tmp_path_factory.mktemp("dialect-cli-home"))
    finally:
        dev.stop()


@pytest.fixture(scope="module")
def facts(demo_server: tuple[DevServer, Server]) -> DemoFacts:
    dev, _ = demo_server
    return DemoFacts(Path(dev.data_dir))


@pytest.fixture(scope="module")
def windows(facts: DemoFacts) -> dict[str, Window]:
    return {
        "demo": Window(iso(facts.start_ns - facts.start_ns % 10**9), iso(facts.end_ns + 10**9)),
        "incident": Window(iso(facts.incident.start_ns), iso(facts.incident.end_ns)),
        "none": Window(None, None),
    }


@pytest.fixture(scope="module")
def tokens(
    demo_server: tuple[DevServer, Server], facts: DemoFacts, windows: dict[str, Window]
) -> dict[str, str]:
    _, server = demo_server
    found = run_http(
        server,
        'default | where metric_name == "shop.payments" | summarize by metric_hash | take 1',
        windows["demo"],
    )
    values = dict(facts.tokens())
    values["{metric_hash}"] = (
        str(found.primary.rows[0][0]) if found.error_code is None and found.primary.rows else "0"
    )
    return values
