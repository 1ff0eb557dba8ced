"""Logs no request causes: pool stats, GC pauses, probes, syncs, deploy and crash lines, the incident's pool exhaustion.

``minute(t)`` returns every such record of the minute starting at ``t``; periodic lines use the
pod's own phase so pods do not log in lock-step.
"""

from __future__ import annotations

import random

from bzrk.demo import wire
from bzrk.demo.spanbuilder import DEBUG, ERR, FATAL, INFO, MS, WARN, Record
from bzrk.demo.topology import MINUTE_NS, NS, Pod, Topology, diurnal_factor

DAY_NS = 24 * 3600 * NS


def _la(*pairs: tuple[str, object]) -> bytes:
    return wire.attributes(6, pairs)


class BackgroundLogs:
    def __init__(self, topology: Topology, rng: random.Random) -> None:
        self.topo = topology
        self.rng = rng
        self._gc_counter: dict[str, int] = {}
        inc = topology.incident
        seeded = random.Random(f"bzrk-demo-background:{topology.seed}")
        span = topology.end_ns - topology.start_ns
        # One consumer crash per simulated day, at a seed-chosen moment outside the incident.
        self.crashes: list[int] = []
        day = topology.start_ns
        while day < topology.end_ns:
            t = day + int(seeded.random() * min(DAY_NS, span))
            if t < topology.end_ns - 2 * MINUTE_NS and t not in inc:
                self.crashes.append(t)
            day += DAY_NS
        self.pool_exhausted_fatal = inc.start_ns + (inc.end_ns - inc.start_ns) * 6 // 10

    def _rec(
        self, records: list[Record], pod: Pod, t: int, severity: int, body: str, attrs: bytes = b"",
        rng: random.Random | None = None,
    ) -> None:  # fmt: skip
        if not (self.topo.start_ns <= t < self.topo.end_ns):
            return
        observed = t + MS + int((rng or self.rng).random() * 30 * MS)
        records.append(
            (t, pod, pod.scopes["log"].encoded, wire.log_record(t, observed, severity, body, attrs))
        )

    def minute(self, t0: int) -> list[Record]:
        rng = self.rng
        topo = self.topo
        out: list[Record] = []
        traffic = diurnal_factor(t0)
        incident = t0 in topo.incident
        minute_index = t0 // MINUTE_NS
        for spec, gen in topo.all_generations():
            if t0 <= gen.from_ns < t0 + MINUTE_NS and gen.from_ns > topo.start_ns:
                for pod in gen.pods:
                    self._deploy_lines(out, pod, gen.from_ns)
                if spec.name == "payment":
                    self._refused_during_rollout(out, gen.from_ns)
            if not (gen.from_ns <= t0 < gen.to_ns):
                continue
            for pod in gen.pods:
                phase = hash_phase(pod.name)
                at = t0 + phase
                if spec.language == "java":
                    busy = spec.name == "payment" and incident
                    active = 10 if busy else min(10, int(traffic * 4 + rng.random() * 3))
                    waiting = 5 + int(rng.random() * 35) if busy else 0
                    # HikariCP logs its stats every 5 minutes (a saturated pool every minute).
                    if busy or minute_index % 5 == 0:
                        self._rec(
                            out, pod, at, WARN if busy else DEBUG,
                            f"HikariPool-1 - Pool stats (total=10, active={active}, idle={10 - active}, waiting={waiting})",
                            _la(("db.pool.name", "HikariPool-1"), ("db.pool.waiting", waiting)),
                        )  # fmt: skip
                    if busy:
                        for _ in range(1 + int(rng.random() * 3)):
                            self._rec(
                                out, pod, t0 + int(rng.random() * MINUTE_NS), WARN,
                                "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
                            )  # fmt: skip
                    if rng.random() < 0.5 + traffic * 0.4:
                        n = self._gc_counter.get(pod.name, int(rng.random() * 4000)) + 1
                        self._gc_counter[pod.name] = n
                        before = 300 + int(rng.random() * 500)
                        self._rec(
                            out, pod, t0 + int(rng.random() * MINUTE_NS), INFO,
                            f"[gc] GC({n}) Pause Young (Normal) (G1 Evacuation Pause) {before}M->"
                            f"{before // 2 - int(rng.random() * 60)}M(1024M) {2 + rng.random() * 18:.3f}ms",
                        )  # fmt: skip
                if spec.name == "api-gateway":
                    self._rec(
                        out,
                        pod,
                        at,
                        DEBUG,
                        f"GET /healthz 200 (kube-probe/1.31) {0.1 + rng.random() * 0.4:.2f}ms",
                    )
                    if minute_index % 1440 == 540:
                        self._rec(
                            out,
                            pod,
                            at,
                            WARN,
                            "TLS certificate for shop.example.com expires in 12 days (issuer=R11)",
                        )
                elif spec.name == "email" and minute_index % 5 == 1:
                    lag = int(rng.random() * 8 + traffic * 10)
                    self._rec(
                        out, pod, at, DEBUG, f"Kafka consumer lag order-events[{minute_index % 6}]={lag}",
                        _la(("messaging.destination.name", "order-events"), ("messaging.kafka.consumer.lag", lag)),
                    )  # fmt: skip
                elif spec.name == "inventory" and minute_index % 5 == 0:
                    skus = int(50 + rng.random() * 400 * traffic)
                    ms = int(200 + rng.random() * 800)
                    self._rec(
                        out, pod, at, INFO,
                        f"Stock sync with warehouse WH-{1 + minute_index % 4} completed: {skus} SKUs updated in {ms} ms",
                        _la(("warehouse.id", f"WH-{1 + minute_index % 4}"), ("duration_ms", float(ms))),
                    )  # fmt: skip
                elif spec.name == "recommendation" and minute_index % 60 == 17:
                    self._rec(
                        out, pod, at, INFO,
                        f"Reloaded model recsys-two-tower (items={48000 + int(rng.random() * 900)}, dim=64) in {1.5 + rng.random() * 2:.1f}s",
                    )  # fmt: skip
                elif spec.name == "cart" and minute_index % 10 == 3:
                    self._rec(
                        out,
                        pod,
                        at,
                        INFO,
                        f"Evicted {int(rng.random() * 300 * traffic)} expired carts (scan took {int(5 + rng.random() * 40)} ms)",
                    )
                elif spec.name == "shipping" and minute_index % 30 == 11:
                    self._rec(
                        out,
                        pod,
                        at,
                        INFO,
                        "Refreshed carrier rate tables: DHL, UPS, DPD, GLS (412 zones)",
                    )
                    if rng.random() < 0.2:
                        self._rec(
                            out,
                            pod,
                            at + 2 * NS,
                            WARN,
                            f"Carrier API UPS responded slowly: {1.5 + rng.random() * 3:.1f} s",
                        )
                elif spec.name == "auth" and minute_index % 15 == 2:
                    self._rec(
                        out,
                        pod,
                        at,
                        INFO,
                        "Refreshed JWKS from https://auth.shop.example.com/.well-known/jwks.json (3 keys)",
                    )
                elif spec.name == "frontend" and rng.random() < 0.4 * traffic:
                    route = ("/", "/product/{id}", "/checkout")[int(rng.random() * 3)]
                    ms = int(3000 + rng.random() * 6000)
                    self._rec(
                        out, pod, t0 + int(rng.random() * MINUTE_NS), WARN,
                        f"Slow client render reported: {route} took {ms} ms (web-vitals LCP)",
                        _la(("http.route", route), ("duration_ms", float(ms))),
                    )  # fmt: skip
        for crash in self.crashes:
            if t0 <= crash < t0 + MINUTE_NS:
                pod = topo.pods_at("email", crash)[0]
                self._rec(
                    out, pod, crash, FATAL,
                    "Unrecoverable error in consumer loop: KafkaError{code=NOT_COORDINATOR,val=16,"
                    'str="Broker: Not coordinator"} (group=email-worker); exiting',
                )  # fmt: skip
                self._rec(
                    out,
                    pod,
                    crash + 9 * NS,
                    INFO,
                    "email-worker 1.3.0 starting; joined consumer group email-worker",
                )
        if t0 <= self.pool_exhausted_fatal < t0 + MINUTE_NS:
            pod = topo.pods_at("payment", self.pool_exhausted_fatal)[0]
            self._rec(
                out, pod, self.pool_exhausted_fatal, FATAL,
                "Liveness probe failing: HikariPool-1 exhausted for 120 s (active=10, waiting=38); "
                "requesting container restart",
            )  # fmt: skip
            self._rec(
                out,
                pod,
                self.pool_exhausted_fatal + NS,
                ERR,
                "Shutting down PaymentApplication: pending transactions will be rolled back",
            )
        out.sort(key=lambda r: r[0])
        return out

    def _deploy_lines(self, out: list[Record], pod: Pod, t: int) -> None:
        version = pod.version
        self._rec(
            out,
            pod,
            t + 2 * NS,
            INFO,
            f"Starting PaymentApplication v{version} using Java 21.0.5 with PID 1",
        )
        self._rec(
            out, pod, t + 5 * NS, INFO, f"Liquibase: database is up to date for release {version}"
        )
        self._rec(
            out,
            pod,
            t + 8 * NS,
            INFO,
            f"Started PaymentApplication in 7.{int(self.rng.random() * 9)} seconds (process running for 8.6)",
        )

    def _refused_during_rollout(self, out: list[Record], t: int) -> None:
        """Checkout's calls to payment are refused while the old pods stop and the new ones start.

        Drawn from an RNG of its own, so adding these lines leaves every other record unchanged.
        """
        rng = random.Random(f"bzrk-demo-refused:{self.topo.seed}:{t}")
        for pod in self.topo.pods_at("checkout", t):
            for i in range(REFUSALS_PER_POD):
                at = t + int((i + rng.random()) * 3 * NS)
                delay = (100, 200, 400, 800)[i % 4]
                self._rec(
                    out, pod, at, WARN,
                    f"Connection refused: connect to payment:8080 (POST /payments/charge), retrying in {delay} ms",
                    _la(("error.type", "java.net.ConnectException"), ("server.address", "payment"),
                        ("server.port", 8080)),
                    rng,
                )  # fmt: skip


# Refused connections per checkout pod at each payment rollout (the incident's start and end).
REFUSALS_PER_POD = 3


def hash_phase(name: str) -> int:
    """A stable offset within the minute for ``name`` (Python's ``hash`` is salted per process)."""
    h = 0
    for ch in name.encode():
        h = (h * 131 + ch) & 0xFFFFFFFF
    return (h % 60_000) * MS
