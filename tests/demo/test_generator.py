"""Realism of the demo generator: every property asserted on the decoded OTLP protobuf messages."""

from __future__ import annotations

import collections
import itertools
import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from bzrk.demo import SERVICE_NAMES, DemoBatch, generate, incident_window, iter_log_requests
from bzrk.testing import SRC_DIR

NS = 1_000_000_000
HOUR = 3600 * NS
END = 1_764_460_800 * NS  # 2025-11-30 00:00 UTC
START = END - 6 * HOUR
SEED = 7


def _attrs(kvs) -> dict[str, object]:  # type: ignore[no-untyped-def]
    out: dict[str, object] = {}
    for kv in kvs:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


@dataclass
class Decoded:
    batches: list[DemoBatch]
    logs: list[tuple[dict[str, object], object]] = field(default_factory=list)
    spans: list[tuple[dict[str, object], Span]] = field(default_factory=list)
    metrics: list[tuple[dict[str, object], object]] = field(default_factory=list)


@pytest.fixture(scope="module")
def demo() -> Decoded:
    batches = list(generate(START, END, SEED))
    out = Decoded(batches)
    for batch in batches:
        request = batch.decode()
        if isinstance(request, ExportLogsServiceRequest):
            for rl in request.resource_logs:
                res = _attrs(rl.resource.attributes)
                for sl in rl.scope_logs:
                    out.logs += [(res, r) for r in sl.log_records]
        elif isinstance(request, ExportTraceServiceRequest):
            for rs in request.resource_spans:
                res = _attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    assert ss.scope.name
                    out.spans += [(res, s) for s in ss.spans]
        else:
            assert isinstance(request, ExportMetricsServiceRequest)
            for rm in request.resource_metrics:
                res = _attrs(rm.resource.attributes)
                for sm in rm.scope_metrics:
                    assert sm.scope.name
                    out.metrics += [(res, m) for m in sm.metrics]
    return out


def test_hand_encoding_equals_protobuf_serialization(demo: Decoded) -> None:
    for batch in demo.batches:
        assert batch.decode().SerializeToString() == batch.payload, batch.signal


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    start, end = START, START + HOUR
    first = [b.payload for b in generate(start, end, SEED)]
    again = [b.payload for b in generate(start, end, SEED)]
    other = [b.payload for b in generate(start, end, SEED + 1)]
    assert first == again
    assert first != other
    assert len(first) >= 3


def test_volumes_and_batch_sizes(demo: Decoded) -> None:
    counts = collections.Counter(b.signal for b in demo.batches)
    assert set(counts) == {"logs", "traces", "metrics"}
    assert len(demo.logs) > 3000 and len(demo.spans) > 5000 and len(demo.metrics) > 2000
    for batch in demo.batches:
        assert batch.records > 0
        if batch.signal != "metrics":
            assert batch.records <= 2000
    by_signal = collections.defaultdict(list)
    for batch in demo.batches:
        by_signal[batch.signal].append(batch)
    for signal in ("logs", "traces"):
        ordered = by_signal[signal]
        for previous, current in itertools.pairwise(ordered):
            assert previous.last_ns <= current.first_ns, signal


def test_services_and_resources(demo: Decoded) -> None:
    assert len(SERVICE_NAMES) >= 8
    for rows in (demo.logs, demo.spans, demo.metrics):
        assert {res["service.name"] for res, _ in rows} == set(SERVICE_NAMES)
    required = (
        "service.name", "service.namespace", "service.version", "deployment.environment",
        "k8s.pod.name", "k8s.deployment.name", "host.name", "telemetry.sdk.name",
        "telemetry.sdk.language", "telemetry.sdk.version",
    )  # fmt: skip
    for res, _ in demo.spans[:500] + demo.logs[:500]:
        for key in required:
            assert res.get(key), key
        assert res["k8s.pod.name"].startswith(res["k8s.deployment.name"] + "-")  # type: ignore[union-attr]
    languages = {res["telemetry.sdk.language"] for res, _ in demo.spans}
    assert len(languages) >= 4


def test_severity_distribution(demo: Decoded) -> None:
    counts = collections.Counter(r.severity_text for _, r in demo.logs)
    total = sum(counts.values())
    share = {k: v / total for k, v in counts.items()}
    assert 0.5 <= share["INFO"] <= 0.9, share
    assert 0.05 <= share["DEBUG"] <= 0.35, share
    assert 0.01 <= share["WARN"] <= 0.15, share
    assert 0.001 <= share["ERROR"] <= 0.08, share
    assert 0 < counts["FATAL"] <= max(3, total // 1000), share
    number = {"DEBUG": 5, "INFO": 9, "WARN": 13, "ERROR": 17, "FATAL": 21}
    for _, record in demo.logs:
        assert record.severity_number == number[record.severity_text]
        assert record.body.string_value


def test_log_bodies_are_templated_with_variable_parts(demo: Decoded) -> None:
    bodies = [r.body.string_value for _, r in demo.logs]
    assert len(set(bodies)) > 0.6 * len(bodies)
    assert any("\n\tat com.shop." in b for b in bodies), "stack traces"
    assert any("HTTP/1.1" in b for b in bodies), "access logs"
    assert any("SQL: 'UPDATE payments" in b for b in bodies), "slow-query lines"
    assert any("FROM users WHERE email" in b for b in bodies), "SQL debug lines"
    deadlocks = [b for b in bodies if "Deadlock" in b]
    assert 1 <= len(deadlocks) <= 10
    with_route = [r for _, r in demo.logs if "http.route" in _attrs(r.attributes)]
    assert len(with_route) > 0.2 * len(demo.logs)
    for record in with_route[:200]:
        attrs = _attrs(record.attributes)
        assert isinstance(attrs.get("http.status_code", 200), int)
        assert isinstance(attrs.get("duration_ms", 0.0), float)


def test_logs_inside_spans_share_their_ids(demo: Decoded) -> None:
    spans = {(s.trace_id, s.span_id): s for _, s in demo.spans}
    correlated = [r for _, r in demo.logs if r.trace_id]
    assert len(correlated) > 0.5 * len(demo.logs)
    for record in correlated:
        span = spans[(record.trace_id, record.span_id)]
        assert span.start_time_unix_nano <= record.time_unix_nano <= span.end_time_unix_nano
        assert record.flags & 1
    uncorrelated = [r for _, r in demo.logs if not r.trace_id]
    assert uncorrelated and all(not r.span_id for r in uncorrelated)


def _check_span_trees(rows: list[tuple[dict[str, object], Span]]) -> None:
    """Unique ids, one root per trace, parents in the same trace, children inside parents."""
    spans = {(s.trace_id, s.span_id): s for _, s in rows}
    assert len(spans) == len(rows), "span ids are unique"
    roots: collections.Counter[bytes] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    for _, span in rows:
        kinds[Span.SpanKind.Name(span.kind)] += 1
        assert len(span.trace_id) == 16 and len(span.span_id) == 8
        assert span.start_time_unix_nano <= span.end_time_unix_nano
        if not span.parent_span_id:
            roots[span.trace_id] += 1
            continue
        parent = spans[(span.trace_id, span.parent_span_id)]
        if span.kind == Span.SPAN_KIND_CONSUMER:
            # A Kafka consumer runs after its producer span has ended.
            assert span.start_time_unix_nano >= parent.end_time_unix_nano
            continue
        assert parent.start_time_unix_nano <= span.start_time_unix_nano
        assert span.end_time_unix_nano <= parent.end_time_unix_nano
    assert set(roots.values()) == {1}
    assert len(roots) == len({s.trace_id for _, s in rows})
    for kind in ("SERVER", "CLIENT", "INTERNAL", "PRODUCER", "CONSUMER"):
        assert kinds["SPAN_KIND_" + kind] > 0, kind
    services_per_trace = collections.defaultdict(set)
    for res, span in rows:
        services_per_trace[span.trace_id].add(res["service.name"])
    assert max(len(s) for s in services_per_trace.values()) >= 6


def test_parent_child_consistency(demo: Decoded) -> None:
    _check_span_trees(demo.spans)


def test_error_spans_have_status_and_exception_events(demo: Decoded) -> None:
    with_exception = [s for _, s in demo.spans if any(e.name == "exception" for e in s.events)]
    assert with_exception
    for span in with_exception:
        assert span.status.code == Status.STATUS_CODE_ERROR
        event = next(e for e in span.events if e.name == "exception")
        attrs = _attrs(event.attributes)
        assert (
            attrs["exception.type"] and attrs["exception.message"] and attrs["exception.stacktrace"]
        )
        assert span.start_time_unix_nano <= event.time_unix_nano <= span.end_time_unix_nano
    for _, span in demo.spans:
        status = _attrs(span.attributes).get("http.response.status_code")
        if span.kind == Span.SPAN_KIND_SERVER and isinstance(status, int) and status >= 500:
            assert span.status.code == Status.STATUS_CODE_ERROR


def test_latencies_are_realistic(demo: Decoded) -> None:
    by_name = collections.defaultdict(list)
    for _, span in demo.spans:
        by_name[span.name].append((span.end_time_unix_nano - span.start_time_unix_nano) / 1e6)
    bcrypt = sorted(by_name["bcrypt.verify"])
    assert 30 < bcrypt[len(bcrypt) // 2] < 150
    redis = sorted(by_name["GET"])
    assert redis[len(redis) // 2] < 5
    checkout = sorted(by_name["POST /checkout"])
    assert checkout[len(checkout) // 2] > 100


def test_metrics_kinds_and_points(demo: Decoded) -> None:
    kinds = collections.Counter(m.WhichOneof("data") for _, m in demo.metrics)
    assert {"sum", "gauge", "histogram", "exponential_histogram", "summary"} <= set(kinds)
    last: dict[tuple[object, ...], tuple[int, float]] = {}
    for res, metric in demo.metrics:
        kind = metric.WhichOneof("data")
        if kind == "sum":
            assert metric.sum.is_monotonic and metric.sum.aggregation_temporality == 2
            for p in metric.sum.data_points:
                key = (
                    res["k8s.pod.name"],
                    metric.name,
                    tuple(sorted(_attrs(p.attributes).items())),
                )
                previous = last.get(key)
                if previous is not None:
                    assert p.time_unix_nano > previous[0] and p.as_int >= previous[1], key
                last[key] = (p.time_unix_nano, p.as_int)
                assert p.start_time_unix_nano < p.time_unix_nano
        elif kind == "histogram":
            for p in metric.histogram.data_points:
                assert sum(p.bucket_counts) == p.count
                assert len(p.bucket_counts) == len(p.explicit_bounds) + 1
                assert list(p.explicit_bounds) == sorted(p.explicit_bounds)
                key = (res["k8s.pod.name"], metric.name)
                previous = last.get(key)
                if previous is not None:
                    assert p.count >= previous[1]
                last[key] = (p.time_unix_nano, p.count)
        elif kind == "exponential_histogram":
            for p in metric.exponential_histogram.data_points:
                assert sum(p.positive.bucket_counts) + p.zero_count == p.count > 0
                assert p.sum > 0
        elif kind == "summary":
            for p in metric.summary.data_points:
                values = [q.value for q in p.quantile_values]
                assert values == sorted(values) and p.count >= 0
        else:
            assert len(metric.gauge.data_points) >= 1
    times = sorted(
        {
            p.time_unix_nano
            for _, m in demo.metrics
            if m.WhichOneof("data") == "gauge"
            for p in m.gauge.data_points
        }
    )
    assert all(b - a == 60 * NS for a, b in itertools.pairwise(times))


def test_timestamps_inside_the_range(demo: Decoded) -> None:
    for _, record in demo.logs:
        assert START <= record.time_unix_nano < END
    for _, span in demo.spans:
        assert START <= span.start_time_unix_nano <= span.end_time_unix_nano < END
    for _, metric in demo.metrics:
        kind = metric.WhichOneof("data")
        for p in getattr(metric, kind).data_points:
            assert START <= p.time_unix_nano < END


def test_incident_shows_as_an_error_spike(demo: Decoded) -> None:
    incident = incident_window(START, END, SEED)
    assert START < incident.start_ns < incident.end_ns <= END

    def rate(rows: list[tuple[int, bool]], inside: bool) -> float:
        chosen = [bad for t, bad in rows if (incident.start_ns <= t < incident.end_ns) == inside]
        return sum(chosen) / max(1, len(chosen))

    logs = [(r.time_unix_nano, r.severity_number >= 17) for _, r in demo.logs]
    spans = [
        (s.start_time_unix_nano, s.status.code == Status.STATUS_CODE_ERROR) for _, s in demo.spans
    ]
    assert rate(logs, True) > 5 * rate(logs, False)
    assert rate(spans, True) > 5 * rate(spans, False)
    versions = {
        res["service.version"]
        for res, s in demo.spans
        if res["service.name"] == "payment"
        and s.start_time_unix_nano in range(incident.start_ns, incident.end_ns)
    }
    assert versions == {"2.5.0"}


def _log_times(batches: list[DemoBatch]) -> list[int]:
    return [
        r.time_unix_nano
        for b in batches
        for rl in b.decode().resource_logs  # type: ignore[union-attr]
        for sl in rl.scope_logs
        for r in sl.log_records
    ]


def test_diurnal_curve() -> None:
    batches = list(iter_log_requests(END - 24 * HOUR, END, SEED, records=20_000))
    hourly = collections.Counter((t // HOUR) % 24 for t in _log_times(batches))
    assert hourly[16] > 3 * hourly[4]


def test_fast_log_path_gives_exactly_n_ordered_valid_records() -> None:
    start, end = END - 7 * 24 * HOUR, END
    batches = list(iter_log_requests(start, end, SEED, records=12_345, batch_records=1000))
    assert sum(b.records for b in batches) == 12_345
    assert [b.records for b in batches[:-1]] == [1000] * (len(batches) - 1)
    # Requests follow each other in time; inside one, records are grouped by resource and scope.
    times = [t for b in batches for t in sorted(_log_times([b]))]
    assert len(times) == 12_345
    assert times == sorted(times)
    assert start <= times[0] and times[-1] < end
    for batch in batches:
        assert batch.decode().SerializeToString() == batch.payload
    again = [
        b.payload for b in iter_log_requests(start, end, SEED, records=12_345, batch_records=1000)
    ]
    assert again == [b.payload for b in batches]
    other = [
        b.payload
        for b in iter_log_requests(start, end, SEED + 1, records=12_345, batch_records=1000)
    ]
    assert other != again


def test_fast_log_path_keeps_traces_and_the_incident() -> None:
    start, end = END - 24 * HOUR, END
    incident = incident_window(start, end, SEED)
    logs = [
        (res, r)
        for b in iter_log_requests(start, end, SEED, records=40_000)
        for rl in b.decode().resource_logs  # type: ignore[union-attr]
        for res in [_attrs(rl.resource.attributes)]
        for sl in rl.scope_logs
        for r in sl.log_records
    ]
    by_trace = collections.defaultdict(set)
    for res, r in logs:
        if r.trace_id:
            by_trace[r.trace_id].add(res["service.name"])
    assert len(by_trace) > 5000
    assert sum(len(s) > 2 for s in by_trace.values()) > 0.2 * len(by_trace)
    inside = [r for _, r in logs if incident.start_ns <= r.time_unix_nano < incident.end_ns]
    outside = [r for _, r in logs if not incident.start_ns <= r.time_unix_nano < incident.end_ns]

    def errors(rows: list) -> float:  # type: ignore[type-arg]
        return sum(r.severity_number >= 17 for r in rows) / len(rows)

    assert errors(inside) > 5 * errors(outside)
    assert 1 <= sum("Deadlock" in r.body.string_value for _, r in logs) <= 10
    bodies = [r.body.string_value for _, r in logs]
    assert len(set(bodies)) > 0.6 * len(bodies)


def test_fast_path_with_spans_joins_logs_to_spans() -> None:
    start, end = END - 24 * HOUR, END
    logs, spans = [], []
    for batch in iter_log_requests(start, end, SEED, records=15_000, spans=True):
        request = batch.decode()
        assert request.SerializeToString() == batch.payload
        if batch.signal == "logs":
            logs += [
                r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records
            ]  # type: ignore[union-attr]
        else:
            assert batch.signal == "traces"
            for rs in request.resource_spans:  # type: ignore[union-attr]
                res = _attrs(rs.resource.attributes)
                spans += [(res, s) for ss in rs.scope_spans for s in ss.spans]
    assert len(logs) == 15_000
    assert len(spans) > len(logs)
    _check_span_trees(spans)
    by_id = {(s.trace_id, s.span_id): s for _, s in spans}
    correlated = [r for r in logs if r.trace_id]
    assert len(correlated) > 0.5 * len(logs)
    for record in correlated:
        span = by_id[(record.trace_id, record.span_id)]
        assert span.start_time_unix_nano <= record.time_unix_nano <= span.end_time_unix_nano
    for _, span in spans:
        assert start <= span.start_time_unix_nano <= span.end_time_unix_nano < end
        for event in span.events:
            assert span.start_time_unix_nano <= event.time_unix_nano <= span.end_time_unix_nano
    # Replayed traces get fresh identities: user ids in span attributes vary like in logs.
    users = {_attrs(s.attributes).get("enduser.id") for _, s in spans if not s.parent_span_id}
    assert len(users) > 0.5 * sum(1 for _, s in spans if not s.parent_span_id)


def test_same_bytes_across_processes_with_other_hash_seeds() -> None:
    # The loader resumes an interrupted load in a new process by regenerating the same requests.
    script = (
        "import hashlib\n"
        "from bzrk.demo import generate, iter_log_requests\n"
        f"END = {END}\n"
        "h = hashlib.sha256()\n"
        f"for b in generate(END - {HOUR}, END, 9): h.update(b.payload)\n"
        f"for b in iter_log_requests(END - {HOUR}, END, 9, records=3000, spans=True): h.update(b.payload)\n"
        "print(h.hexdigest())\n"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(SRC_DIR)}
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    assert len(digests) == 1


# Ends of a 24 h demo (as `bzrk dev --demo` loads it: seed 42, scale 0.5) whose incident had no
# lock timeout before the first one was made certain: the vendor's lock-timeout search
# (`tostring(body) contains 'CannotAcquireLock'`) then found nothing, depending on the hour.
@pytest.mark.parametrize("step", [31, 36, 58])
def test_every_demo_day_has_a_lock_timeout_in_its_incident(step: int) -> None:
    end = END + step * 259 * 60 * NS
    incident = incident_window(end - 24 * HOUR, end, 42)
    found = [
        r.time_unix_nano
        for b in generate(end - 24 * HOUR, end, 42, 0.5, signals=("logs",))
        for rl in b.decode().resource_logs  # type: ignore[union-attr]
        if _attrs(rl.resource.attributes)["service.name"] == "payment"
        for sl in rl.scope_logs
        for r in sl.log_records
        if "CannotAcquireLock" in r.body.string_value[:240]
    ]
    assert found
    assert all(incident.start_ns <= t < incident.end_ns for t in found)
