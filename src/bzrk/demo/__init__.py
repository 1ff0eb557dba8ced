"""Deterministic, realistic OTLP demo data for a small microservice system.

``generate`` yields logs, traces and metrics of a ten-service shop as serialized OTLP export
requests; ``iter_log_requests`` is the fast log-only path for benchmarks; ``load_demo_once``
(in ``bzrk.demo.loader``) sends the demo through the real ingest path.
"""

from bzrk.demo.fastlogs import iter_log_requests
from bzrk.demo.generator import ALL_SIGNALS, DemoBatch, generate
from bzrk.demo.topology import SERVICE_NAMES, Incident, diurnal_factor, incident_window

__all__ = [
    "ALL_SIGNALS",
    "SERVICE_NAMES",
    "DemoBatch",
    "Incident",
    "diurnal_factor",
    "generate",
    "incident_window",
    "iter_log_requests",
]
