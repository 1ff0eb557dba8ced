"""The benchmark's fast path: exactly N log records (and optionally their spans) by replaying simulated traces.

Simulating a trace costs ~80 µs of Python for ~4 logs. Instead a pool of a few thousand traces is
simulated once (logs kept unencoded); each new trace replays a pool entry at a new time, with new
trace and span ids, its pods resolved for that time, and its entities (user, order, SKU, payment
ids) swapped for fresh same-length values in bodies and attributes. Minutes inside the incident
are simulated for real, so the error spike and the rare ``Deadlock`` lines are the genuine ones.
"""

from __future__ import annotations

import random
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from bzrk.demo import wire
from bzrk.demo.background import BackgroundLogs
from bzrk.demo.generator import (
    DemoBatch,
    _covered,
    _Cutter,
    _deadlock_slots,
    _minutes,
    _traces_in_minute,
)
from bzrk.demo.spanbuilder import MS, Record
from bzrk.demo.topology import MINUTE_NS, NS, Pod, Topology, diurnal_factor
from bzrk.demo.traces import TraceSimulator

POOL_TRACES = 6000
# Entities that identify one request; every pattern has a fixed length, so a swapped value keeps
# the protobuf length prefixes of the already-encoded attributes valid.
_ENTITIES = re.compile(r"u-\d{5}|ord_[0-9a-f]{12}|pay_[0-9a-f]{10}|SKU-\d{5}")


class _PoolLog(NamedTuple):
    offset_ns: int
    service: str
    replica: int
    pod: Pod | None  # set when the service never changes pods, else resolved at replay time
    scope: bytes
    # The encoded LogRecord fields between the timestamp and the trace id (severity, body,
    # attributes, flags, trace-id tag), in which entities are swapped as bytes.
    middle: bytes
    entities: tuple[int, ...]  # indexes into the trace's entity list that occur in ``middle``
    span_index: int


class _PoolSpan(NamedTuple):
    offset_ns: int
    duration_ns: int
    service: str
    replica: int
    pod: Pod | None
    scope: bytes
    name: str
    kind: int
    attrs: bytes
    events: tuple[tuple[int, bytes], ...]  # (offset, the encoded event after its time field)
    status: int
    message: str
    span_index: int
    parent_index: int  # -1 for the root
    remote: bool
    entities: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _PoolTrace:
    duration_ns: int
    span_count: int
    logs: tuple[_PoolLog, ...]
    spans: tuple[_PoolSpan, ...]
    entities: tuple[str, ...]


def _fresh(entity: str, rng: random.Random) -> str:
    if entity.startswith("u-"):
        return f"u-{int(rng.random() ** 2 * 60000):05d}"
    if entity.startswith("SKU-"):
        return f"SKU-{int(rng.random() ** 1.5 * 2400) + 10000}"
    prefix, _, rest = entity.partition("_")
    return f"{prefix}_{rng.getrandbits(4 * len(rest)):0{len(rest)}x}"


def _build_pool(topo: Topology, seed: int, size: int) -> list[_PoolTrace]:
    """Simulate ``size`` traces at random moments outside the incident, logs kept unencoded."""
    rng = random.Random(f"bzrk-demo-pool:{seed}")
    sim = TraceSimulator(topo, random.Random(f"bzrk-demo-pool-traces:{seed}"), emit_spans=False)
    inc = topo.incident
    pool: list[_PoolTrace] = []
    span = topo.end_ns - topo.start_ns
    while len(pool) < size:
        t0 = topo.start_ns + int(rng.random() * span)
        if t0 in inc or inc.start_ns - t0 < 60 * NS < inc.start_ns - topo.start_ns:
            continue
        sim.captured, sim.captured_spans = [], []
        end = sim.trace(t0)
        span_ids = {s.span_id: i for i, s in enumerate(sim.captured_spans)}
        entities = sorted({m.group() for log in sim.captured for m in _ENTITIES.finditer(log.body)})
        entities = sorted(
            set(entities)
            | {
                m.group()
                for s in sim.captured_spans
                for m in _ENTITIES.finditer(s.attrs.decode(errors="replace"))
            }
        )
        spans = []
        for s in sim.captured_spans:
            service = s.pod.service.name
            spans.append(
                _PoolSpan(
                    s.start_ns - t0, s.end_ns - s.start_ns, service,
                    topo.pods_at(service, s.start_ns).index(s.pod),
                    s.pod if len(topo.generations[service]) == 1 else None,
                    s.scope, s.name, s.kind, s.attrs,
                    tuple((int.from_bytes(e[1:9], "little") - t0, e[9:]) for e in s.events),
                    s.status, s.message, span_ids[s.span_id],
                    span_ids[s.parent_id] if s.parent_id else -1, s.remote,
                    tuple(i for i, e in enumerate(entities) if e.encode() in s.attrs),
                )
            )  # fmt: skip
        logs = []
        for log in sim.captured:
            service = log.pod.service.name
            pods = topo.pods_at(service, log.time_ns)
            encoded = wire.log_record(
                0, 0, log.severity, log.body, log.attrs, b"\0" * 16, b"\0" * 8
            )
            # Cut the record at its fixed-size ends: 9 bytes of time, 16 of trace id, 2 + 8 of
            # span id, 9 of observed time.
            middle = encoded[9:-35]
            logs.append(
                _PoolLog(
                    log.time_ns - t0, service, pods.index(log.pod),
                    log.pod if len(topo.generations[service]) == 1 else None,
                    log.pod.scopes["log"].encoded, middle,
                    tuple(i for i, e in enumerate(entities) if e in log.body),
                    span_ids[log.span_id],
                )
            )  # fmt: skip
        pool.append(_PoolTrace(end - t0, len(span_ids), tuple(logs), tuple(spans), tuple(entities)))
    sim.captured = sim.captured_spans = None
    return pool


_PACK_Q = struct.Struct("<Q").pack


class _Replayer:
    def __init__(self, topo: Topology, pool: list[_PoolTrace], rng: random.Random) -> None:
        self.topo = topo
        self.pool = pool
        self.rng = rng

    def replay(self, t0: int, out: list[Record], spans_out: list[Record] | None = None) -> None:
        rng = self.rng
        entry = self.pool[int(rng.random() * len(self.pool))]
        if t0 + entry.duration_ns >= self.topo.end_ns:
            return
        trace_id = rng.getrandbits(128).to_bytes(16, "big")
        ids = rng.getrandbits(64 * entry.span_count).to_bytes(8 * entry.span_count, "big")
        swaps = [(e.encode(), _fresh(e, rng).encode()) for e in entry.entities]
        pods_at = self.topo.pods_at
        append = out.append
        join = b"".join
        for offset, service, replica, pod, scope, middle, entities, span_index in entry.logs:
            t = t0 + offset
            for k in entities:
                middle = middle.replace(*swaps[k])
            i = span_index * 8
            # Observed time: 1–34 ms after the event, varied by the event time's low bits.
            record = join(
                (
                    b"\x09",
                    _PACK_Q(t),
                    middle,
                    trace_id,
                    b"\x52\x08",
                    ids[i : i + 8],
                    b"\x59",
                    _PACK_Q(t + MS + (t & 0x1FFFFFF)),
                )
            )
            append((t, pod or pods_at(service, t)[replica], scope, record))
        if spans_out is None:
            return
        for span in entry.spans:
            start = t0 + span.offset_ns
            attrs = span.attrs
            for k in span.entities:
                attrs = attrs.replace(*swaps[k])
            i, p = span.span_index * 8, span.parent_index * 8
            encoded = wire.span(
                trace_id, ids[i : i + 8], ids[p : p + 8] if p >= 0 else b"", span.name, span.kind,
                start, start + span.duration_ns, attrs,
                [b"\x09" + _PACK_Q(t0 + offset) + rest for offset, rest in span.events],
                span.status, span.message, span.remote,
            )  # fmt: skip
            pod = span.pod or pods_at(span.service, start)[span.replica]
            spans_out.append((start, pod, span.scope, encoded))


def iter_log_requests(
    start_ns: int,
    end_ns: int,
    seed: int = 42,
    *,
    records: int,
    batch_records: int = 4000,
    spans: bool = False,
) -> Iterator[DemoBatch]:
    """Exactly ``records`` log records over ``[start_ns, end_ns)``, time-ordered, as log requests.

    Each minute gets a share of ``records`` following the diurnal curve (a last sliver shorter
    than 10 s gets none). Logs share trace and span ids within a trace like ``generate``'s. With
    ``spans``, the spans of the same traces come too (as ``traces`` batches, about two per log),
    so logs join to spans by ``trace_id``/``span_id``.
    """
    if end_ns <= start_ns or records < 0:
        raise ValueError("need end_ns > start_ns and records >= 0")
    topo = Topology(start_ns, end_ns, seed)
    inc = topo.incident
    sim = TraceSimulator(
        topo, random.Random(f"bzrk-demo-traces:{seed}"), emit_spans=spans,
        deadlock_slots=_deadlock_slots(topo, seed),
    )  # fmt: skip
    rng = random.Random(f"bzrk-demo-arrivals:{seed}")
    background = BackgroundLogs(topo, random.Random(f"bzrk-demo-bg:{seed}"))
    minutes = _minutes(start_ns, end_ns)
    weights = []
    for m in minutes:
        lo, hi = _covered(m, start_ns, end_ns)
        weights.append(0.0 if hi - lo < 10 * NS and hi == end_ns else diurnal_factor(m) * (hi - lo))
    total = sum(weights)
    quotas = [int(records * w / total) for w in weights]
    short = records - sum(quotas)
    for i in sorted(range(len(weights)), key=lambda i: -weights[i])[:short]:
        quotas[i] += 1
    with_background = records >= 100 * len(quotas)
    replayer = _Replayer(topo, _build_pool(topo, seed, min(POOL_TRACES, records // 4 + 16)), rng)
    cutter = _Cutter("logs", batch_records)
    span_cutter = _Cutter("traces", batch_records)
    for minute, quota in zip(minutes, quotas, strict=True):
        got: list[Record] = background.minute(minute) if with_background else []
        got_spans: list[Record] | None = [] if spans else None
        lo, hi = _covered(minute, start_ns, end_ns)
        real = minute + MINUTE_NS > inc.start_ns and minute < inc.end_ns
        rounds = 0
        while len(got) < quota:
            rounds += 1
            if rounds > 100_000:
                raise RuntimeError(f"cannot fill {quota} log records in the minute at {minute}")
            # About four logs per trace: ask for enough traces to cover most of the deficit.
            wanted = max(1, (quota - len(got)) // 5)
            if real:
                _traces_in_minute(sim, rng, minute, wanted, start_ns, end_ns)
                got.extend(sim.logs)
                if got_spans is not None:
                    got_spans.extend(sim.spans)
                sim.logs.clear()
                sim.spans.clear()
            else:
                for t0 in sorted(lo + int(rng.random() * (hi - lo)) for _ in range(wanted)):
                    replayer.replay(t0, got, got_spans)
        got.sort(key=lambda r: r[0])
        cutter.add(got[:quota])
        yield from cutter.cut(minute + MINUTE_NS)
        if got_spans is not None:
            span_cutter.add(got_spans)
            yield from span_cutter.cut(minute + MINUTE_NS)
    yield from cutter.cut(None)
    yield from span_cutter.cut(None)
