"""The Prometheus registry of each bzrk listener, so each ``/metrics`` serves its own families.

``bzrk dev`` runs every service in one process, and prometheus_client's default registry would
show every family on every port. Instead each service has a registry of its own (``gateway``,
``query``, ``ui``), each with the process, platform and GC collectors; the ingest listeners
serve the default registry, where ``bzrk.ingest.metrics`` registers its families. The families
themselves are declared beside the code that records them and listed in ``docs/metrics.md``
(a test keeps the two equal).
"""

from __future__ import annotations

import threading

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

# `*_created` series are OpenMetrics timestamps; in the text format they only add noise.
disable_created_metrics()

# Which registry a listener serves, by service name.
INGEST = "ingest"
SERVICES = ("gateway", "query", "ingest", "ui")
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Seconds: from a 1 ms print to a 5-minute scan (query_max_timeout_ms).
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)

_registries: dict[str, CollectorRegistry] = {}
_lock = threading.Lock()


def registry(service: str) -> CollectorRegistry:
    """The registry the ``service``'s listeners serve (created, with process collectors, once)."""
    if service == INGEST:
        return REGISTRY
    if service not in SERVICES:
        raise ValueError(f"unknown service {service!r}")
    with _lock:
        found = _registries.get(service)
        if found is None:
            found = CollectorRegistry(auto_describe=True)
            ProcessCollector(registry=found)
            PlatformCollector(registry=found)
            GCCollector(registry=found)
            _registries[service] = found
        return found


def render(service: str) -> bytes:
    """The text exposition of ``service``'s registry (blocking: collectors may query ClickHouse)."""
    return generate_latest(registry(service))
