"""Metrics of every pod at a fixed interval: cumulative counters, gauges, explicit and exponential histograms, a summary.

Values follow the same traffic curve and incident as the traces but count unsampled traffic
(traces are a sample). Cumulative series keep their state here, start at the pod's start time
and never decrease.
"""

from __future__ import annotations

import math
import random

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from bzrk.demo.topology import Pod, Topology, diurnal_factor

CUMULATIVE = m.AGGREGATION_TEMPORALITY_CUMULATIVE
DELTA = m.AGGREGATION_TEMPORALITY_DELTA
LATENCY_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)

# service -> (requests/min at peak for the whole service, main route, median latency s, counter)
TRAFFIC: dict[str, tuple[float, str, float, str, tuple[str, ...]]] = {
    "frontend": (600, "/product/{id}", 0.045, "shop.page.views", ("ok",)),
    "api-gateway": (
        420,
        "/api/products/{id}",
        0.02,
        "shop.gateway.requests",
        ("2xx", "4xx", "5xx"),
    ),
    "auth": (150, "/auth/verify", 0.004, "shop.auth.verifications", ("valid", "rejected")),
    "cart": (120, "/cart/{userId}/items", 0.006, "shop.cart.items_added", ("ok",)),
    "checkout": (36, "/checkout", 0.35, "shop.orders", ("placed", "failed")),
    "payment": (38, "/payments/charge", 0.2, "shop.payments", ("captured", "declined", "error")),
    "inventory": (270, "/inventory/{sku}", 0.003, "shop.inventory.lookups", ("ok",)),
    "shipping": (33, "/shipping/quote", 0.015, "shop.shipping.quotes", ("ok",)),
    "email": (33, "order-events", 0.14, "shop.emails.sent", ("ok",)),
    "recommendation": (450, "/recommendations", 0.012, "shop.recommendations.served", ("ok",)),
}
COUNTER_ATTR = {
    "api-gateway": "http.response.status_class",
    "auth": "auth.result",
    "checkout": "order.outcome",
    "payment": "payment.outcome",
}


def _kv(key: str, value: str | bool | int | float) -> KeyValue:
    if isinstance(value, str):
        return KeyValue(key=key, value=AnyValue(string_value=value))
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(double_value=float(value)))


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


class MetricsSimulator:
    def __init__(self, topology: Topology, rng: random.Random, interval_ns: int) -> None:
        self.topo = topology
        self.rng = rng
        self.interval_ns = interval_ns
        self._state: dict[tuple[str, str, str], list[float]] = {}
        self._resources: dict[str, Resource] = {}

    def ticks(self, from_ns: int, to_ns: int) -> list[int]:
        """Tick times in ``[from_ns, to_ns)`` aligned to the interval, inside the topology's range."""
        first = max(from_ns, self.topo.start_ns)
        first += (-first) % self.interval_ns
        last = min(to_ns, self.topo.end_ns)
        return list(range(first, last, self.interval_ns))

    def request(self, ticks: list[int]) -> tuple[ExportMetricsServiceRequest, int]:
        """One request holding every pod's data points at ``ticks``; returns it and its point count."""
        req = ExportMetricsServiceRequest()
        points = 0
        for t in ticks:
            for _, gen in self.topo.all_generations():
                if not (gen.from_ns <= t < gen.to_ns):
                    continue
                for pod in gen.pods:
                    started = max(gen.from_ns, pod.started_ns)
                    if t > started:  # a new pod exports its first point one interval after starting
                        points += self._pod_points(req, pod, t, started)
        return req, points

    def _resource(self, pod: Pod) -> Resource:
        res = self._resources.get(pod.name)
        if res is None:
            res = self._resources[pod.name] = Resource(
                attributes=[_kv(k, v) for k, v in pod.resource_attrs]
            )
        return res

    def _cumulative(self, pod: Pod, metric: str, series: str, size: int) -> list[float]:
        key = (pod.name, metric, series)
        state = self._state.get(key)
        if state is None:
            state = self._state[key] = [0.0] * size
        return state

    def _pod_points(self, req: ExportMetricsServiceRequest, pod: Pod, t: int, started: int) -> int:
        rng = self.rng
        spec = pod.service
        incident = t in self.topo.incident
        traffic = diurnal_factor(t)
        peak, route, median_s, counter, outcomes = TRAFFIC[spec.name]
        requests = max(
            0,
            int(
                peak
                * traffic
                / spec.replicas
                * (self.interval_ns / 60e9)
                * (0.9 + rng.random() * 0.2)
            ),
        )
        rm = req.resource_metrics.add(resource=self._resource(pod))
        points = 0

        # HTTP server latency: cumulative explicit-bucket histogram.
        server_scope = pod.scopes["server"]
        sm = rm.scope_metrics.add(
            scope=InstrumentationScope(name=server_scope.name, version=server_scope.version)
        )
        slow = spec.name in ("payment", "checkout", "api-gateway", "frontend") and incident
        sigma = 0.7
        slow_share = {"payment": 0.5, "checkout": 0.5}.get(spec.name, 0.08) if slow else 0.0
        probs = []
        prev = 0.0
        for bound in (*LATENCY_BOUNDS, math.inf):
            cdf = 1.0 if bound == math.inf else (
                (1 - slow_share) * _phi((math.log(bound) - math.log(median_s)) / sigma)
                + slow_share * _phi((math.log(bound) - math.log(2.5)) / 0.5)
            )  # fmt: skip
            probs.append(cdf - prev)
            prev = cdf
        state = self._cumulative(pod, "http.server.request.duration", route, len(probs) + 2)
        new = [int(requests * p + rng.random()) for p in probs]
        for i, c in enumerate(new):
            state[i] += c
        n_new = sum(new)
        state[-2] += n_new
        state[-1] += (
            n_new
            * median_s
            * math.exp(sigma**2 / 2)
            * (1 + slow_share * 8)
            * (0.95 + rng.random() * 0.1)
        )
        metric = sm.metrics.add(
            name="http.server.request.duration",
            unit="s",
            description="Duration of HTTP server requests.",
        )
        metric.histogram.aggregation_temporality = CUMULATIVE
        metric.histogram.data_points.add(
            start_time_unix_nano=started,
            time_unix_nano=t,
            count=int(state[-2]),
            sum=state[-1],
            bucket_counts=[int(c) for c in state[:-2]],
            explicit_bounds=LATENCY_BOUNDS,
            attributes=[
                _kv("http.request.method", "GET" if "{" in route else "POST"),
                _kv("http.route", route),
            ],
        )
        points += 1

        # Business counter: cumulative monotonic sum, one series per outcome.
        app = pod.scopes["app"]
        am = rm.scope_metrics.add(scope=InstrumentationScope(name=app.name, version=app.version))
        metric = am.metrics.add(
            name=counter, unit="{request}" if spec.name != "email" else "{email}"
        )
        metric.sum.aggregation_temporality = CUMULATIVE
        metric.sum.is_monotonic = True
        error_share = 0.003
        if incident:
            error_share = {"payment": 0.6, "checkout": 0.36, "api-gateway": 0.03}.get(
                spec.name, error_share
            )
        shares = {
            "2xx": 0.93 - error_share, "4xx": 0.07, "5xx": error_share,
            "valid": 0.98, "rejected": 0.02, "placed": 1 - error_share - 0.03, "failed": error_share + 0.03,
            "captured": 0.97 - error_share, "declined": 0.03, "error": error_share, "ok": 1.0,
        }  # fmt: skip
        for outcome in outcomes:
            total = self._cumulative(pod, counter, outcome, 1)
            total[0] += int(requests * shares[outcome] + rng.random())
            attrs = [_kv(COUNTER_ATTR[spec.name], outcome)] if spec.name in COUNTER_ATTR else []
            metric.sum.data_points.add(
                start_time_unix_nano=started,
                time_unix_nano=t,
                as_int=int(total[0]),
                attributes=attrs,
            )
            points += 1

        if spec.name in ("payment", "inventory"):
            metric = am.metrics.add(
                name="db.client.connection.count", unit="{connection}",
                description="The number of connections that are currently in state described by the state attribute.",
            )  # fmt: skip
            used = (
                10
                if spec.name == "payment" and incident
                else min(10, int(traffic * 3 + rng.random() * 3))
            )
            for state_name, value in (("used", used), ("idle", 10 - used)):
                metric.gauge.data_points.add(
                    time_unix_nano=t, as_int=value,
                    attributes=[_kv("db.client.connection.state", state_name), _kv("db.client.connection.pool.name", "HikariPool-1" if spec.language == "java" else "pgxpool")],
                )  # fmt: skip
                points += 1

        if spec.name == "payment":
            points += self._capture_exponential(am, t, requests, incident)
        if spec.name == "email":
            points += self._smtp_summary(am, pod, t, started, requests)

        # Runtime gauges.
        runtime = pod.scopes["runtime_metrics"]
        rt = rm.scope_metrics.add(
            scope=InstrumentationScope(name=runtime.name, version=runtime.version)
        )
        cpu = min(1.0, 0.04 + traffic * 0.45 * (1.6 if slow else 1.0) + rng.gauss(0, 0.03))
        rt.metrics.add(name="process.cpu.utilization", unit="1").gauge.data_points.add(
            time_unix_nano=t, as_double=round(max(0.01, cpu), 4)
        )
        base_mb = {"java": 620, "go": 90, "python": 210, "nodejs": 160, "dotnet": 240}[
            spec.language
        ]
        age_h = (t - started) / 3.6e12
        mem = int(
            (base_mb + 40 * math.sin(t / 4.1e11) + 3 * min(age_h, 48) + rng.random() * 20)
            * 1024
            * 1024
        )
        rt.metrics.add(name="process.memory.usage", unit="By").gauge.data_points.add(
            time_unix_nano=t, as_int=mem
        )
        return points + 2

    def _capture_exponential(
        self, scope_metrics: m.ScopeMetrics, t: int, requests: int, incident: bool
    ) -> int:
        """Payment capture latency (ms) as a delta base-2 exponential histogram (scale 3)."""
        rng = self.rng
        scale = 3
        base = 2 ** (2**-scale)
        counts: dict[int, int] = {}
        total = 0.0
        n = max(1, requests)
        for _ in range(min(n, 400)):
            value = math.exp(math.log(900.0 if incident else 190.0) + 0.5 * rng.gauss(0, 1))
            total += value
            index = math.ceil(math.log(value, base)) - 1
            counts[index] = counts.get(index, 0) + 1
        offset = min(counts)
        buckets = [counts.get(i, 0) for i in range(offset, max(counts) + 1)]
        metric = scope_metrics.metrics.add(name="payment.capture.duration", unit="ms")
        metric.exponential_histogram.aggregation_temporality = DELTA
        metric.exponential_histogram.data_points.add(
            start_time_unix_nano=t - self.interval_ns,
            time_unix_nano=t,
            count=sum(buckets),
            sum=total,
            scale=scale,
            zero_count=0,
            positive=m.ExponentialHistogramDataPoint.Buckets(offset=offset, bucket_counts=buckets),
            attributes=[_kv("payment.provider", "psp.example.net")],
        )
        return 1

    def _smtp_summary(
        self, scope_metrics: m.ScopeMetrics, pod: Pod, t: int, started: int, requests: int
    ) -> int:
        """SMTP send latency as a (Prometheus-style) summary: cumulative count/sum, window quantiles."""
        state = self._cumulative(pod, "email.send.duration", "", 2)
        state[0] += requests
        state[1] += requests * 0.14 * (0.9 + self.rng.random() * 0.2)
        jitter = 0.9 + self.rng.random() * 0.2
        metric = scope_metrics.metrics.add(name="email.send.duration", unit="s")
        metric.summary.data_points.add(
            start_time_unix_nano=started,
            time_unix_nano=t,
            count=int(state[0]),
            sum=state[1],
            quantile_values=[
                m.SummaryDataPoint.ValueAtQuantile(quantile=q, value=round(v * jitter, 4))
                for q, v in ((0.0, 0.05), (0.5, 0.12), (0.9, 0.26), (0.99, 0.61), (1.0, 0.9))
            ],
        )
        return 1
