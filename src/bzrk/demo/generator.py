"""The public generator: time-ordered OTLP export requests for a time range, deterministic by seed.

``generate`` walks the range minute by minute: traces (with their logs) arrive as a Poisson
process following the diurnal curve, background logs and metric ticks are added, and records are
cut into requests of ``batch_records`` once no later minute can produce an earlier record.
``bzrk.demo.fastlogs.iter_log_requests`` is the benchmark's fast path.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bzrk.demo import wire
from bzrk.demo.background import BackgroundLogs
from bzrk.demo.metrics import MetricsSimulator
from bzrk.demo.spanbuilder import Record
from bzrk.demo.topology import MINUTE_NS, NS, Topology, diurnal_factor
from bzrk.demo.traces import TraceSimulator

Signal = Literal["logs", "traces", "metrics"]
ALL_SIGNALS: tuple[Signal, ...] = ("logs", "traces", "metrics")
PATHS = {"logs": "/v1/logs", "traces": "/v1/traces", "metrics": "/v1/metrics"}
# Sampled traces per minute at the afternoon peak for scale 1.0 (the daily mean is about half).
PEAK_TRACES_PER_MINUTE = 14.0
DEADLOCKS = 5


@dataclass(frozen=True, slots=True)
class DemoBatch:
    """One OTLP export request, serialized, with what it holds."""

    signal: Signal
    payload: bytes
    records: int
    first_ns: int
    last_ns: int

    @property
    def path(self) -> str:
        return PATHS[self.signal]

    def decode(
        self,
    ) -> ExportLogsServiceRequest | ExportTraceServiceRequest | ExportMetricsServiceRequest:
        if self.signal == "logs":
            return ExportLogsServiceRequest.FromString(self.payload)
        if self.signal == "traces":
            return ExportTraceServiceRequest.FromString(self.payload)
        return ExportMetricsServiceRequest.FromString(self.payload)


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def _encode(signal: Signal, records: list[Record]) -> DemoBatch:
    groups: dict[tuple[int, bytes], tuple[bytes, bytes, list[bytes]]] = {}
    for _, pod, scope, encoded in records:
        key = (id(pod), scope)
        group = groups.get(key)
        if group is None:
            group = groups[key] = (pod.resource, scope, [])
        group[2].append(encoded)
    payload = (
        wire.logs_request(groups.values())
        if signal == "logs"
        else wire.traces_request(groups.values())
    )
    return DemoBatch(signal, payload, len(records), records[0][0], records[-1][0])


def _deadlock_slots(topology: Topology, seed: int) -> list[int]:
    inc = topology.incident
    rng = random.Random(f"bzrk-demo-deadlocks:{seed}")
    span = inc.end_ns - inc.start_ns
    return sorted(inc.start_ns + int(span * (0.1 + 0.75 * rng.random())) for _ in range(DEADLOCKS))


class _Cutter:
    """Holds records of one signal and cuts them into requests once they can no longer be preceded."""

    def __init__(self, signal: Signal, batch_records: int) -> None:
        self.signal = signal
        self.batch = batch_records
        self.pending: list[Record] = []

    def add(self, records: Iterable[Record]) -> None:
        self.pending.extend(records)

    def cut(self, before_ns: int | None) -> Iterator[DemoBatch]:
        """Yield full requests of records earlier than ``before_ns`` (everything if None)."""
        if before_ns is not None and len(self.pending) < self.batch:
            return
        self.pending.sort(key=lambda r: r[0])
        ready = len(self.pending)
        if before_ns is not None:
            ready = next((i for i, r in enumerate(self.pending) if r[0] >= before_ns), ready)
            ready -= ready % self.batch
        for i in range(0, ready, self.batch):
            yield _encode(self.signal, self.pending[i : i + self.batch])
        del self.pending[:ready]


def _minutes(start_ns: int, end_ns: int) -> range:
    return range(start_ns - start_ns % MINUTE_NS, end_ns, MINUTE_NS)


def _covered(minute: int, start_ns: int, end_ns: int) -> tuple[int, int]:
    return max(minute, start_ns), min(minute + MINUTE_NS, end_ns)


def _traces_in_minute(
    sim: TraceSimulator, rng: random.Random, minute: int, count: int, start_ns: int, end_ns: int
) -> None:
    lo, hi = _covered(minute, start_ns, end_ns)
    starts = sorted(lo + int(rng.random() * (hi - lo)) for _ in range(count))
    for t0 in starts:
        n_spans, n_logs = len(sim.spans), len(sim.logs)
        if sim.trace(t0) >= end_ns:
            # A trace must lie wholly inside the range; drop one that would run past its end.
            del sim.spans[n_spans:]
            del sim.logs[n_logs:]


def generate(
    start_ns: int,
    end_ns: int,
    seed: int = 42,
    scale: float = 1.0,
    *,
    signals: Iterable[Signal] = ALL_SIGNALS,
    batch_records: int = 2000,
    metric_interval_s: int = 60,
) -> Iterator[DemoBatch]:
    """Yield the shop's telemetry in ``[start_ns, end_ns)`` as OTLP requests, in time order per signal.

    ``scale`` multiplies the trace rate (1.0 ≈ 10 k traces, 70 k spans and 45 k logs per day);
    metrics do not depend on it (one point per series every ``metric_interval_s``).
    """
    if end_ns <= start_ns:
        raise ValueError("end_ns must be after start_ns")
    wanted = set(signals)
    topo = Topology(start_ns, end_ns, seed)
    rng = random.Random(f"bzrk-demo-arrivals:{seed}")
    sim = TraceSimulator(
        topo, random.Random(f"bzrk-demo-traces:{seed}"), emit_spans="traces" in wanted,
        deadlock_slots=_deadlock_slots(topo, seed),
    )  # fmt: skip
    background = BackgroundLogs(topo, random.Random(f"bzrk-demo-bg:{seed}"))
    metrics = MetricsSimulator(
        topo, random.Random(f"bzrk-demo-metrics:{seed}"), metric_interval_s * NS
    )
    logs, spans = _Cutter("logs", batch_records), _Cutter("traces", batch_records)
    pending_metrics, metric_points, metric_first = ExportMetricsServiceRequest(), 0, 0
    for minute in _minutes(start_ns, end_ns):
        lo, hi = _covered(minute, start_ns, end_ns)
        rate = PEAK_TRACES_PER_MINUTE * scale * diurnal_factor(minute) * (hi - lo) / MINUTE_NS
        if "logs" in wanted or "traces" in wanted:
            _traces_in_minute(sim, rng, minute, _poisson(rng, rate), start_ns, end_ns)
        if "logs" in wanted:
            logs.add(sim.logs)
            logs.add(background.minute(minute))
            yield from logs.cut(minute + MINUTE_NS)
        if "traces" in wanted:
            spans.add(sim.spans)
            yield from spans.cut(minute + MINUTE_NS)
        sim.logs.clear()
        sim.spans.clear()
        if "metrics" in wanted:
            ticks = metrics.ticks(minute, minute + MINUTE_NS)
            if ticks:
                request, points = metrics.request(ticks)
                if not metric_points:
                    metric_first = ticks[0]
                pending_metrics.resource_metrics.extend(request.resource_metrics)
                metric_points += points
                if metric_points >= batch_records:
                    yield DemoBatch(
                        "metrics",
                        pending_metrics.SerializeToString(),
                        metric_points,
                        metric_first,
                        ticks[-1],
                    )
                    pending_metrics, metric_points = ExportMetricsServiceRequest(), 0
                last_tick = ticks[-1]
    yield from logs.cut(None)
    yield from spans.cut(None)
    if metric_points:
        yield DemoBatch(
            "metrics", pending_metrics.SerializeToString(), metric_points, metric_first, last_tick
        )
