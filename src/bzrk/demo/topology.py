"""The simulated shop: services, their pods and OTel resources, instrumentation scopes, traffic curve and incident.

Everything here is a pure function of (start, end, seed): the same arguments give the same pods,
versions, incident window and traffic curve.
"""

from __future__ import annotations

import math
import random
import uuid
from dataclasses import dataclass, field

from bzrk.demo import wire

NS = 1_000_000_000
MINUTE_NS = 60 * NS
HOUR_NS = 3600 * NS

NAMESPACE = "shop"
ENVIRONMENT = "production"
CLUSTER = "prod-eu-west-1"
REGION = "eu-west-1"
_K8S_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

# Per-language SDK identity and auto-instrumentation scope names (name, version) by role.
SDKS: dict[str, dict[str, tuple[str, str]]] = {
    "java": {
        "sdk": ("opentelemetry", "1.44.1"),
        "runtime": ("OpenJDK Runtime Environment", "21.0.5+11-LTS"),
        "server": ("io.opentelemetry.spring-webmvc-6.0", "2.10.0-alpha"),
        "client": ("io.opentelemetry.java-http-client", "2.10.0-alpha"),
        "db": ("io.opentelemetry.jdbc", "2.10.0-alpha"),
        "messaging": ("io.opentelemetry.kafka-clients-2.6", "2.10.0-alpha"),
        "cache": ("io.opentelemetry.lettuce-5.1", "2.10.0-alpha"),
        "runtime_metrics": ("io.opentelemetry.runtime-telemetry-java17", "2.10.0-alpha"),
    },
    "go": {
        "sdk": ("opentelemetry", "1.32.0"),
        "runtime": ("go", "go1.23.4"),
        "server": ("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "0.57.0"),
        "client": ("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "0.57.0"),
        "db": ("github.com/XSAM/otelsql", "0.35.0"),
        "messaging": ("github.com/IBM/sarama/otelsarama", "0.3.0"),
        "cache": ("github.com/redis/go-redis/extra/redisotel", "9.7.0"),
        "runtime_metrics": ("go.opentelemetry.io/contrib/instrumentation/runtime", "0.57.0"),
    },
    "python": {
        "sdk": ("opentelemetry", "1.29.0"),
        "runtime": ("cpython", "3.12.8"),
        "server": ("opentelemetry.instrumentation.fastapi", "0.50b0"),
        "client": ("opentelemetry.instrumentation.httpx", "0.50b0"),
        "db": ("opentelemetry.instrumentation.sqlalchemy", "0.50b0"),
        "messaging": ("opentelemetry.instrumentation.confluent_kafka", "0.50b0"),
        "cache": ("opentelemetry.instrumentation.redis", "0.50b0"),
        "runtime_metrics": ("opentelemetry.instrumentation.system_metrics", "0.50b0"),
    },
    "nodejs": {
        "sdk": ("opentelemetry", "1.28.0"),
        "runtime": ("nodejs", "22.12.0"),
        "server": ("@opentelemetry/instrumentation-http", "0.56.0"),
        "client": ("@opentelemetry/instrumentation-undici", "0.9.0"),
        "db": ("@opentelemetry/instrumentation-pg", "0.49.0"),
        "messaging": ("@opentelemetry/instrumentation-kafkajs", "0.6.0"),
        "cache": ("@opentelemetry/instrumentation-ioredis", "0.46.0"),
        "runtime_metrics": ("@opentelemetry/instrumentation-runtime-node", "0.11.0"),
    },
    "dotnet": {
        "sdk": ("opentelemetry", "1.10.0"),
        "runtime": (".NET", "9.0.0"),
        "server": ("Microsoft.AspNetCore", "9.0.0"),
        "client": ("System.Net.Http", "9.0.0"),
        "db": ("Npgsql", "9.0.2"),
        "messaging": ("Confluent.Kafka.Extensions.OpenTelemetry", "0.4.0"),
        "cache": ("OpenTelemetry.Instrumentation.StackExchangeRedis", "1.10.0-beta.1"),
        "runtime_metrics": ("OpenTelemetry.Instrumentation.Runtime", "1.10.0"),
    },
}


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    name: str
    language: str
    version: str
    replicas: int
    logger: str  # the application logger, used as the log scope name


SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("frontend", "nodejs", "1.14.2", 2, "shop-frontend"),
    ServiceSpec("api-gateway", "go", "3.2.0", 2, "github.com/shop/api-gateway/internal/proxy"),
    ServiceSpec("auth", "go", "1.8.3", 1, "github.com/shop/auth/internal/server"),
    ServiceSpec("cart", "dotnet", "2.1.0", 1, "Shop.Cart.CartService"),
    ServiceSpec("checkout", "java", "4.3.1", 2, "com.shop.checkout.CheckoutService"),
    ServiceSpec("payment", "java", "2.4.0", 1, "com.shop.payment.PaymentService"),
    ServiceSpec("inventory", "go", "1.22.0", 1, "github.com/shop/inventory/internal/stock"),
    ServiceSpec("shipping", "python", "0.9.4", 1, "shipping.quotes"),
    ServiceSpec("email", "python", "1.3.0", 1, "email.worker"),
    ServiceSpec("recommendation", "python", "2.0.1", 1, "recommendation.service"),
)
SERVICE_NAMES = tuple(s.name for s in SERVICES)
# The release that causes the incident (payment DB lock contention), rolled back at its end.
BAD_PAYMENT_VERSION = "2.5.0"


@dataclass(frozen=True, slots=True)
class Scope:
    name: str
    version: str
    encoded: bytes


@dataclass(slots=True)
class Pod:
    service: ServiceSpec
    version: str
    name: str
    node: str
    ip: str
    instance_id: str
    started_ns: int
    resource_attrs: list[tuple[str, str]]
    resource: bytes = b""
    scopes: dict[str, Scope] = field(default_factory=dict)

    def scope(self, role: str) -> Scope:
        return self.scopes[role]


@dataclass(frozen=True, slots=True)
class Generation:
    """One rollout of a service: its pods, serving from ``from_ns`` until ``to_ns``."""

    from_ns: int
    to_ns: int
    pods: tuple[Pod, ...]


def _k8s_suffix(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_K8S_ALPHABET) for _ in range(n))


def _make_scopes(spec: ServiceSpec) -> dict[str, Scope]:
    sdk = SDKS[spec.language]
    scopes = {
        role: Scope(name, version, wire.scope(name, version))
        for role, (name, version) in sdk.items()
        if role not in ("sdk", "runtime")
    }
    scopes["app"] = Scope(
        f"{NAMESPACE}.{spec.name}",
        spec.version,
        wire.scope(f"{NAMESPACE}.{spec.name}", spec.version),
    )
    scopes["log"] = Scope(spec.logger, "", wire.scope(spec.logger))
    return scopes


def _make_pod(
    spec: ServiceSpec,
    version: str,
    rs_hash: str,
    rng: random.Random,
    started_ns: int,
    nodes: list[str],
) -> Pod:
    name = f"{spec.name}-{rs_hash}-{_k8s_suffix(rng, 5)}"
    node = rng.choice(nodes)
    ip = f"10.42.{rng.randrange(0, 8)}.{rng.randrange(2, 250)}"
    instance_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    sdk_name, sdk_version = SDKS[spec.language]["sdk"]
    runtime_name, runtime_version = SDKS[spec.language]["runtime"]
    attrs: list[tuple[str, str]] = [
        ("service.name", spec.name),
        ("service.namespace", NAMESPACE),
        ("service.version", version),
        ("service.instance.id", instance_id),
        ("deployment.environment", ENVIRONMENT),
        ("k8s.cluster.name", CLUSTER),
        ("k8s.namespace.name", NAMESPACE),
        ("k8s.deployment.name", spec.name),
        ("k8s.pod.name", name),
        ("k8s.node.name", node),
        ("host.name", node),
        ("cloud.provider", "aws"),
        ("cloud.region", REGION),
        ("container.image.name", f"registry.example.com/shop/{spec.name}"),
        ("container.image.tag", version),
        ("process.runtime.name", runtime_name),
        ("process.runtime.version", runtime_version),
        ("telemetry.sdk.name", sdk_name),
        ("telemetry.sdk.language", spec.language),
        ("telemetry.sdk.version", sdk_version),
    ]
    pod = Pod(spec, version, name, node, ip, instance_id, started_ns, attrs)
    pod.resource = wire.resource(attrs)
    pod.scopes = _make_scopes(spec)
    return pod


@dataclass(frozen=True, slots=True)
class Incident:
    """The window in which payment 2.5.0 causes DB lock contention and an error spike."""

    start_ns: int
    end_ns: int

    def __contains__(self, t: int) -> bool:
        return self.start_ns <= t < self.end_ns


def incident_window(start_ns: int, end_ns: int, seed: int) -> Incident:
    """Where the incident falls in ``[start_ns, end_ns)``: 55–80 % into it, 3 % long (20–60 min)."""
    span = end_ns - start_ns
    rng = random.Random(f"bzrk-demo-incident:{seed}")
    length = min(max(span * 3 // 100, 20 * MINUTE_NS), 60 * MINUTE_NS, span // 4)
    begin = start_ns + int(span * rng.uniform(0.55, 0.80))
    begin -= begin % MINUTE_NS
    return Incident(begin, min(begin + length, end_ns))


def diurnal_factor(t_ns: int) -> float:
    """Relative traffic at ``t_ns``: a quiet night (~04:00 UTC), a busy afternoon, quieter weekends."""
    hours = (t_ns / HOUR_NS) % 24
    day = 0.5 - 0.5 * math.cos(2 * math.pi * (hours - 4) / 24)
    weekday = int(t_ns // (24 * HOUR_NS) + 4) % 7  # 1970-01-01 was a Thursday (3)
    weekend = 0.75 if weekday in (5, 6) else 1.0
    return (0.15 + 0.85 * day**1.4) * weekend


class Topology:
    """The pods of every service over one time range, with the incident's bad rollout of payment."""

    def __init__(self, start_ns: int, end_ns: int, seed: int) -> None:
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.seed = seed
        self.incident = incident_window(start_ns, end_ns, seed)
        rng = random.Random(f"bzrk-demo-topology:{seed}")
        nodes = [
            f"ip-10-0-{rng.randrange(1, 4)}-{rng.randrange(10, 250)}.{REGION}.compute.internal"
            for _ in range(4)
        ]
        self.generations: dict[str, list[Generation]] = {}
        for spec in SERVICES:
            started = start_ns - rng.randrange(2 * HOUR_NS, 96 * HOUR_NS)
            rs_hash = _k8s_suffix(rng, 10)
            pods = tuple(
                _make_pod(spec, spec.version, rs_hash, rng, started, nodes)
                for _ in range(spec.replicas)
            )
            if spec.name != "payment":
                self.generations[spec.name] = [Generation(start_ns, end_ns, pods)]
                continue
            inc = self.incident
            bad_hash, back_hash = _k8s_suffix(rng, 10), _k8s_suffix(rng, 10)
            bad = tuple(
                _make_pod(spec, BAD_PAYMENT_VERSION, bad_hash, rng, inc.start_ns, nodes)
                for _ in range(spec.replicas)
            )
            back = tuple(
                _make_pod(spec, spec.version, back_hash, rng, inc.end_ns, nodes)
                for _ in range(spec.replicas)
            )
            self.generations[spec.name] = [
                Generation(start_ns, inc.start_ns, pods),
                Generation(inc.start_ns, inc.end_ns, bad),
                Generation(inc.end_ns, end_ns, back),
            ]

    def pods_at(self, service: str, t_ns: int) -> tuple[Pod, ...]:
        gens = self.generations[service]
        for gen in gens:
            if t_ns < gen.to_ns:
                return gen.pods
        return gens[-1].pods

    def pod(self, service: str, t_ns: int, rng: random.Random) -> Pod:
        pods = self.pods_at(service, t_ns)
        return pods[0] if len(pods) == 1 else pods[int(rng.random() * len(pods))]

    def all_generations(self) -> list[tuple[ServiceSpec, Generation]]:
        return [(spec, gen) for spec in SERVICES for gen in self.generations[spec.name]]
