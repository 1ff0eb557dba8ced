"""``/metrics`` on each listener: its own families, documented, and moving when queries run.

The end-to-end part runs real clients (grpcio, the Kusto SDK's REST shape over httpx) through
the gateway of a real ``bzrk dev --demo`` and reads the counters before and after.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bzrk.metrics import registry
from bzrk.testing import DevServer
from tests.api.grpc.helpers import gateway_frames

DOCS = Path(__file__).resolve().parents[2] / "docs"
FAMILY = re.compile(r"`(bzrk_[a-z_]+)`")


def _documented() -> set[str]:
    return set(FAMILY.findall((DOCS / "metrics.md").read_text()))


def _declared() -> set[str]:
    """Every bzrk family the code registers, as exposed (counters with their ``_total``)."""
    import bzrk.engine.metrics
    import bzrk.gateway.metrics
    import bzrk.ingest.metrics
    import bzrk.server.storage_metrics  # noqa: F401

    names = set()
    for service in ("gateway", "query", "ingest"):
        for family in registry(service).collect():
            if family.name.startswith("bzrk_"):
                names.add(family.name + ("_total" if family.type == "counter" else ""))
    return names


def test_every_family_is_documented_and_every_documented_family_exists() -> None:
    declared, documented = _declared(), _documented()
    assert declared - documented == set(), "undocumented in docs/metrics.md"
    assert documented - declared == set(), "documented but not registered"


def test_the_dashboard_charts_every_family_and_only_real_ones() -> None:
    dashboard = json.loads((DOCS / "grafana" / "bzrk-service-metrics.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = {
        re.sub(r"_(bucket|sum|count)$", "", name)
        for expr in exprs
        for name in re.findall(r"\b(bzrk_[a-z_]+)", expr)
    }
    assert used - _documented() == set()
    assert _documented() - used == set(), "families no panel shows"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) and dashboard["uid"] == "bzrk-service-metrics"


def test_each_registry_holds_only_its_own_families() -> None:
    _declared()
    prefixes = {"gateway": "bzrk_gateway_", "query": ("bzrk_quer", "bzrk_storage_")}
    for service, prefix in prefixes.items():
        names = [f.name for f in registry(service).collect() if f.name.startswith("bzrk_")]
        assert names and all(n.startswith(prefix) for n in names), (service, names)
    ingest = [f.name for f in registry("ingest").collect() if f.name.startswith("bzrk_")]
    assert ingest and all(n.startswith("bzrk_ingest_") for n in ingest)


# --- end to end ----------------------------------------------------------------------------------

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    answer = httpx.get(url + "/metrics", timeout=30)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= have)


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def adx_query(gateway: str, token: str | None, csl: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.post(
        gateway + "/v2/rest/query", json={"db": "default", "csl": csl}, headers=headers, timeout=120
    )


@pytest.mark.e2e
def test_queries_move_the_query_gateway_and_storage_counters(dev_server: DevServer) -> None:
    creds = dev_server.credentials
    gateway, query, token = creds["gateway"], creds["query"], creds["token"]
    before_q, before_g = scrape(query), scrape(gateway)

    frames = gateway_frames(
        creds, "default | where severity_text == 'INFO' | take 5", since="1d ago"
    )
    assert frames[-1].WhichOneof("payload") == "done"
    assert adx_query(gateway, token, "print x = ").status_code == 400  # a ParseError
    assert adx_query(gateway, "bzrk_sp_bogus", "print 1").status_code == 401
    assert adx_query(gateway, None, "print 1").status_code == 401

    after_q, after_g = scrape(query), scrape(gateway)

    def moved(after: Samples, before: Samples, name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved(after_q, before_q, "bzrk_queries_total", surface="grpc", status="complete") == 1
    assert moved(after_q, before_q, "bzrk_queries_total", surface="adx", status="error") == 1
    assert (
        moved(after_q, before_q, "bzrk_query_errors_total", surface="adx", code="ParseError") == 1
    )
    assert moved(after_q, before_q, "bzrk_query_short_circuits_total", surface="grpc") == 1
    assert moved(after_q, before_q, "bzrk_query_snapshots_total", surface="grpc") >= 1
    assert moved(after_q, before_q, "bzrk_query_scanned_rows_total", surface="grpc") > 0
    assert moved(after_q, before_q, "bzrk_query_scanned_bytes_total", surface="grpc") > 0
    assert moved(after_q, before_q, "bzrk_query_duration_seconds_count", surface="grpc") == 1
    assert moved(after_q, before_q, "bzrk_query_queue_wait_seconds_count", surface="grpc") == 1
    assert value(after_q, "bzrk_query_slots") >= 1

    assert moved(after_g, before_g, "bzrk_gateway_grpc_calls_total", code="OK") == 1
    assert moved(after_g, before_g, "bzrk_gateway_requests_total", route="/v2/rest/query") == 3
    assert (
        moved(
            after_g, before_g, "bzrk_gateway_requests_total", route="/v2/rest/query", status="401"
        )
        == 2
    )
    for reason in ("invalid_credentials", "missing_credentials"):
        refused = moved(
            after_g,
            before_g,
            "bzrk_gateway_auth_refusals_total",
            route="/v2/rest/query",
            reason=reason,
        )
        assert refused == 1, reason
    assert (
        moved(after_g, before_g, "bzrk_gateway_forward_duration_seconds_count", route="/api/grpc")
        == 1
    )

    # Storage, from ClickHouse's system tables: the demo data is there, and recent.
    labels = {"database": "default", "table": "default"}
    assert value(after_q, "bzrk_storage_rows", **labels) > 100_000
    assert value(after_q, "bzrk_storage_parts", **labels) >= 1
    assert value(after_q, "bzrk_storage_bytes", **labels) > 0
    assert 0 <= value(after_q, "bzrk_storage_ingest_lag_seconds", **labels) < 3 * 3600


@pytest.mark.e2e
def test_each_listener_serves_its_own_families(dev_server: DevServer) -> None:
    creds = dev_server.credentials
    adx_query(creds["gateway"], creds["token"], "print 1")  # so the gateway has counted one
    expected: dict[str, Iterable[str]] = {
        "gateway": ("bzrk_gateway_",),
        "query": ("bzrk_quer", "bzrk_storage_"),
        "otlp_http": ("bzrk_ingest_",),
        "loki": ("bzrk_ingest_",),
        "ui": (),
    }
    for listener, prefixes in expected.items():
        found = {n for n in names(scrape(creds[listener])) if n.startswith("bzrk_")}
        assert all(n.startswith(tuple(prefixes)) for n in found), (listener, found)
        assert "process_resident_memory_bytes" in names(scrape(creds[listener]))
        if prefixes:
            assert found, listener
