"""Building blocks of a simulated trace: spans with a time cursor, HTTP/DB/cache calls, logs inside spans.

Spans are opened top-down with a time cursor: a child starts at its parent's cursor, the parent's
cursor moves past the child, and a span ends after its cursor, so every child lies inside its
parent (asynchronous consumers excepted, as in real Kafka traces). Records are encoded as they
close, straight to OTLP wire bytes.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from typing import NamedTuple

from bzrk.demo import wire
from bzrk.demo.topology import Pod, Topology

INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER = 1, 2, 3, 4, 5
UNSET, OK, ERROR = 0, 1, 2
DEBUG, INFO, WARN, ERR, FATAL = 5, 9, 13, 17, 21
MS = 1_000_000

# (time, pod, scope bytes, encoded record)
Record = tuple[int, Pod, bytes, bytes]


class CapturedLog(NamedTuple):
    time_ns: int
    pod: Pod
    severity: int
    body: str
    attrs: bytes
    span_id: bytes


class CapturedSpan(NamedTuple):
    start_ns: int
    end_ns: int
    pod: Pod
    scope: bytes
    name: str
    kind: int
    attrs: bytes
    events: tuple[bytes, ...]
    status: int
    message: str
    span_id: bytes
    parent_id: bytes
    remote: bool


class OpenSpan:
    __slots__ = (
        "attrs", "end", "events", "kind", "message", "name", "parent_id", "pod", "remote",
        "scope", "span_id", "start", "status", "t",
    )  # fmt: skip

    def __init__(
        self, pod: Pod, scope: bytes, name: str, kind: int, start: int, span_id: bytes,
        parent_id: bytes, remote: bool,
    ) -> None:  # fmt: skip
        self.pod = pod
        self.scope = scope
        self.name = name
        self.kind = kind
        self.start = start
        self.t = start
        self.end = start
        self.span_id = span_id
        self.parent_id = parent_id
        self.remote = remote
        self.attrs: list[bytes] = []
        self.events: list[bytes] = []
        self.status = UNSET
        self.message = ""


_A_CACHE: dict[tuple[str, object], bytes] = {}


def span_attr(key: str, value: object) -> bytes:
    """A span attribute (Span field 9); most are repeats, so encodings are cached."""
    cache_key = (key, value)
    encoded = _A_CACHE.get(cache_key)
    if encoded is None:
        if len(_A_CACHE) > 50_000:
            _A_CACHE.clear()
        if isinstance(value, str):
            encoded = wire.attr_str(9, key, value)
        elif isinstance(value, int):
            encoded = wire.attr_int(9, key, value)
        else:
            encoded = wire.ld(9, wire.key_value(key, value))
        _A_CACHE[cache_key] = encoded
    return encoded


# Standard-normal quantiles at 4096 evenly spaced probabilities: a cheap, deterministic gauss().
_Z = [statistics.NormalDist().inv_cdf((i + 0.5) / 4096) for i in range(4096)]


def log_attrs(*pairs: tuple[str, object]) -> bytes:
    """Log attributes (LogRecord field 6)."""
    out = []
    for key, value in pairs:
        if isinstance(value, str):
            out.append(wire.attr_str(6, key, value))
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            out.append(wire.ld(6, wire.key_value(key, value)))
        elif isinstance(value, int):
            out.append(wire.attr_int(6, key, value))
        else:
            out.append(wire.attr_float(6, key, value))
    return b"".join(out)


class TraceBuilder:
    """Span and log primitives over one trace at a time; ``spans`` and ``logs`` collect encoded records."""

    def __init__(self, topology: Topology, rng: random.Random, *, emit_spans: bool = True) -> None:
        self.topo = topology
        self.rng = rng
        self.emit_spans = emit_spans
        self.spans: list[Record] = []
        self.logs: list[Record] = []
        # When a list, logs are kept unencoded here instead (the replay pool of the fast path).
        self.captured: list[CapturedLog] | None = None
        self.captured_spans: list[CapturedSpan] | None = None
        self._trace_id = b""
        self._incident = False
        self._user_id = ""
        self._client_ip = ""
        self._async_end = 0

    # -- primitives ------------------------------------------------------------------------

    def _ms(self, median_ms: float, sigma: float = 0.5) -> int:
        """A log-normal duration in ns with the given median (ms) and shape."""
        return int(median_ms * math.exp(sigma * _Z[self.rng.getrandbits(12)]) * MS)

    def _id8(self) -> bytes:
        return self.rng.getrandbits(64).to_bytes(8, "big")

    def _hex(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def _user(self) -> str:
        return f"u-{int(self.rng.random() ** 2 * 60000):05d}"

    def _sku(self) -> str:
        return f"SKU-{int(self.rng.random() ** 1.5 * 2400) + 10000}"

    def _public_ip(self) -> str:
        block = ("203.0.113", "198.51.100", "192.0.2")[int(self.rng.random() * 3)]
        return f"{block}.{int(self.rng.random() * 254) + 1}"

    def _open(
        self, pod: Pod, role: str, name: str, kind: int, start: int, parent: OpenSpan | None,
        remote: bool = False,
    ) -> OpenSpan:  # fmt: skip
        return OpenSpan(
            pod, pod.scopes[role].encoded, name, kind, start, self._id8(),
            parent.span_id if parent else b"", remote,
        )  # fmt: skip

    def _close(self, span: OpenSpan, self_ms: float = 0.2) -> None:
        span.end = span.t + self._ms(self_ms, 0.6)
        span.t = span.end
        if self.captured_spans is not None:
            self.captured_spans.append(
                CapturedSpan(
                    span.start, span.end, span.pod, span.scope, span.name, span.kind,
                    b"".join(span.attrs), tuple(span.events), span.status, span.message,
                    span.span_id, span.parent_id, span.remote,
                )
            )  # fmt: skip
        elif self.emit_spans:
            encoded = wire.span(
                self._trace_id, span.span_id, span.parent_id, span.name, span.kind, span.start,
                span.end, b"".join(span.attrs), span.events, span.status, span.message, span.remote,
            )  # fmt: skip
            self.spans.append((span.start, span.pod, span.scope, encoded))

    def _log(self, span: OpenSpan, severity: int, body: str, attrs: bytes = b"") -> None:
        t = span.t
        if self.captured is not None:
            self.captured.append(CapturedLog(t, span.pod, severity, body, attrs, span.span_id))
            return
        observed = t + int(self.rng.random() * 40 * MS) + MS
        self.logs.append(
            (
                t,
                span.pod,
                span.pod.scopes["log"].encoded,
                wire.log_record(t, observed, severity, body, attrs, self._trace_id, span.span_id),
            )
        )

    def _fail(self, span: OpenSpan, exc_type: str, message: str, stacktrace: str) -> None:
        span.status = ERROR
        span.message = message
        span.events.append(
            wire.span_event(
                span.t,
                "exception",
                (
                    ("exception.type", exc_type),
                    ("exception.message", message),
                    ("exception.stacktrace", stacktrace),
                ),
            )
        )

    def _internal(self, parent: OpenSpan, name: str, median_ms: float, *attrs: bytes) -> OpenSpan:
        span = self._open(parent.pod, "app", name, INTERNAL, parent.t, parent)
        span.attrs.extend(attrs)
        span.t += self._ms(median_ms, 0.5)
        return span

    def _finish_child(self, parent: OpenSpan, child: OpenSpan, self_ms: float = 0.05) -> None:
        self._close(child, self_ms)
        parent.t = child.end + int(self.rng.random() * 0.2 * MS)

    def _db(
        self, parent: OpenSpan, op: str, table: str, statement: str, median_ms: float,
        sigma: float = 0.6,
    ) -> OpenSpan:  # fmt: skip
        span = self._open(parent.pod, "db", f"{op} shop.{table}", CLIENT, parent.t, parent)
        span.attrs += [
            span_attr("db.system", "postgresql"),
            span_attr("db.namespace", "shop"),
            span_attr("db.operation.name", op),
            span_attr("db.collection.name", table),
            span_attr("db.query.text", statement),
            span_attr("server.address", "postgres-primary.shop.svc.cluster.local"),
            span_attr("server.port", 5432),
        ]
        span.t += self._ms(median_ms, sigma)
        return span

    def _cache(self, parent: OpenSpan, command: str, key: str) -> OpenSpan:
        span = self._open(parent.pod, "cache", command, CLIENT, parent.t, parent)
        span.attrs += [
            span_attr("db.system", "redis"),
            span_attr("db.operation.name", command),
            span_attr("db.query.text", f"{command} {key}"),
            span_attr("server.address", "redis-master.shop.svc.cluster.local"),
            span_attr("server.port", 6379),
        ]
        span.t += self._ms(0.4, 0.5)
        self._finish_child(parent, span)
        return span

    def _access_log(
        self, server: OpenSpan, peer: str, method: str, route: str, path: str, status: int
    ) -> None:
        """The request-completed line each web framework writes, in its own format."""
        took = (server.t - server.start) / MS
        language = server.pod.service.language
        if language == "java":
            body = f"Completed {method} {path} with status {status} in {took:.0f} ms"
        elif language == "go":
            level = "info" if status < 500 else "error"
            body = f'level={level} msg="request completed" method={method} route={route} status={status} duration={took:.3f}ms'
        elif language == "dotnet":
            body = (
                f"Request finished HTTP/1.1 {method} http://{server.pod.service.name}:8080{path} - "
                f"{status} - application/json {took:.4f}ms"
            )
        else:
            port = 30000 + (server.start >> 10) % 30000
            body = f'{peer}:{port} - "{method} {path} HTTP/1.1" {status}'
        severity = INFO if status < 500 else ERR if language == "go" else WARN
        self._log(
            server, severity, body,
            log_attrs(
                ("http.method", method), ("http.route", route), ("http.status_code", status),
                ("duration_ms", round(took, 3)),
            ),
        )  # fmt: skip

    def _call(
        self, caller: OpenSpan, service: str, method: str, route: str, path: str,
        handler: Callable[[OpenSpan], int],
    ) -> int:  # fmt: skip
        """An HTTP call: CLIENT span in the caller, SERVER span in a pod of ``service``."""
        net = self._ms(0.35, 0.4)
        host = f"{service}.shop.svc.cluster.local"
        client = self._open(caller.pod, "client", method, CLIENT, caller.t, caller)
        client.attrs += [
            span_attr("http.request.method", method),
            span_attr("url.full", f"http://{host}:8080{path}"),
            span_attr("server.address", host),
            span_attr("server.port", 8080),
        ]
        pod = self.topo.pod(service, client.start, self.rng)
        server = self._open(
            pod, "server", f"{method} {route}", SERVER, client.start + net, client, True
        )
        server.attrs += [
            span_attr("http.request.method", method),
            span_attr("http.route", route),
            span_attr("url.path", path),
            span_attr("url.scheme", "http"),
            span_attr("server.address", host),
            span_attr("client.address", caller.pod.ip),
            span_attr("network.protocol.version", "1.1"),
        ]
        server.t += self._ms(0.15, 0.5)
        status = handler(server)
        server.attrs.append(span_attr("http.response.status_code", status))
        if status >= 500:
            server.status = ERROR
            server.message = server.message or f"HTTP {status}"
        server.t += self._ms(0.2, 0.5)
        if service != "api-gateway":  # the gateway writes its own access line
            self._access_log(server, caller.pod.ip, method, route, path, status)
        self._close(server, 0.05)
        client.t = server.end + net
        client.attrs.append(span_attr("http.response.status_code", status))
        if status >= 400:
            client.status = ERROR
            client.attrs.append(span_attr("error.type", str(status)))
        self._finish_child(caller, client)
        return status
