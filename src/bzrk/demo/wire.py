"""Hand-written protobuf wire encoding of the OTLP pieces the demo emits in bulk (logs, spans).

Building one upb message per record costs several microseconds; concatenating pre-encoded
fragments costs a fraction of that, which is what lets the benchmark produce tens of millions of
log records. Fields are written in field-number order with proto3 defaults omitted, so the bytes
equal what ``SerializeToString()`` of the same message produces (a test holds us to that).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

_PACK_Q = struct.Struct("<Q").pack
_PACK_D = struct.Struct("<d").pack
_PACK_I = struct.Struct("<I").pack


def _varint_slow(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL = [_varint_slow(i) for i in range(1 << 14)]


def varint(n: int) -> bytes:
    if 0 <= n < 16384:
        return _SMALL[n]
    return _varint_slow(n & 0xFFFFFFFFFFFFFFFF)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field (string, bytes, sub-message)."""
    n = len(payload)
    return _SMALL[(field << 3) | 2] + (_SMALL[n] if n < 16384 else _varint_slow(n)) + payload


def fixed64(field: int, n: int) -> bytes:
    return _SMALL[(field << 3) | 1] + _PACK_Q(n)


def fixed32(field: int, n: int) -> bytes:
    return _SMALL[(field << 3) | 5] + _PACK_I(n)


def varint_field(field: int, n: int) -> bytes:
    return _SMALL[field << 3] + varint(n) if n else b""


def string(field: int, text: str) -> bytes:
    return ld(field, text.encode()) if text else b""


# --- AnyValue / KeyValue -----------------------------------------------------------------------

_KEYS: dict[str, bytes] = {}


def _key(key: str) -> bytes:
    encoded = _KEYS.get(key)
    if encoded is None:
        encoded = _KEYS[key] = ld(1, key.encode())
    return encoded


def any_value(value: object) -> bytes:
    """Encode a Python value as an ``AnyValue`` message (str, bool, int, float, list, dict)."""
    if isinstance(value, str):
        return ld(1, value.encode())
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF) if value else b"\x18\x00"
    if isinstance(value, float):
        return b"\x21" + _PACK_D(value)
    if isinstance(value, (list, tuple)):
        return ld(5, b"".join(ld(1, any_value(v)) for v in value))
    if isinstance(value, dict):
        return ld(6, b"".join(ld(1, key_value(k, v)) for k, v in value.items()))
    if isinstance(value, bytes):
        return ld(7, value)
    raise TypeError(f"cannot encode {type(value).__name__} as an OTLP AnyValue")


def key_value(key: str, value: object) -> bytes:
    return _key(key) + ld(2, any_value(value))


def attributes(field: int, pairs: Iterable[tuple[str, object]]) -> bytes:
    """The repeated ``KeyValue`` field ``field`` of a message, from (key, value) pairs."""
    return b"".join(ld(field, key_value(k, v)) for k, v in pairs)


def attr_str(field: int, key: str, value: str) -> bytes:
    """One string attribute; the hot path of log and span encoding."""
    vb = value.encode()
    anyv = b"\x0a" + (_SMALL[len(vb)] if len(vb) < 16384 else _varint_slow(len(vb))) + vb
    kv = (
        _key(key) + b"\x12" + _SMALL[len(anyv)] + anyv
        if len(anyv) < 16384
        else key_value(key, value)
    )
    return ld(field, kv)


def attr_int(field: int, key: str, value: int) -> bytes:
    anyv = b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF) if value else b"\x18\x00"
    return ld(field, _key(key) + b"\x12" + _SMALL[len(anyv)] + anyv)


def attr_float(field: int, key: str, value: float) -> bytes:
    return ld(field, _key(key) + b"\x12\x09\x21" + _PACK_D(value))


# --- Resource / scope -------------------------------------------------------------------------


def resource(attrs: Sequence[tuple[str, object]]) -> bytes:
    """An encoded ``Resource`` message."""
    return attributes(1, attrs)


def scope(name: str, version: str = "", attrs: Sequence[tuple[str, object]] = ()) -> bytes:
    """An encoded ``InstrumentationScope`` message."""
    return string(1, name) + string(2, version) + attributes(3, attrs)


# --- Logs -------------------------------------------------------------------------------------

SEVERITY_TEXT = {1: "TRACE", 5: "DEBUG", 9: "INFO", 13: "WARN", 17: "ERROR", 21: "FATAL"}
_SEVERITY_PREFIX = {
    num: _SMALL[2 << 3] + _SMALL[num] + string(3, text) for num, text in SEVERITY_TEXT.items()
}


def log_record(
    time_ns: int,
    observed_ns: int,
    severity_number: int,
    body: str,
    attrs: bytes,
    trace_id: bytes = b"",
    span_id: bytes = b"",
) -> bytes:
    """An encoded ``LogRecord``; ``attrs`` is already-encoded field-6 ``KeyValue`` entries."""
    bb = body.encode()
    n = len(bb)
    anyv = b"\x0a" + (_SMALL[n] if n < 16384 else _varint_slow(n)) + bb
    parts = [
        b"\x09",
        _PACK_Q(time_ns),
        _SEVERITY_PREFIX[severity_number],
        b"\x2a",
        varint(len(anyv)),
        anyv,
        attrs,
    ]
    if trace_id:
        # flags (8) = sampled, then trace_id (9) and span_id (10).
        parts.append(b"\x45\x01\x00\x00\x00\x4a\x10")
        parts.append(trace_id)
        parts.append(b"\x52\x08")
        parts.append(span_id)
    parts.append(b"\x59")
    parts.append(_PACK_Q(observed_ns))
    return b"".join(parts)


def logs_request(groups: Iterable[tuple[bytes, bytes, Sequence[bytes]]]) -> bytes:
    """``ExportLogsServiceRequest`` from (resource, scope, encoded records), grouped by resource."""
    return _export_request(groups)


def traces_request(groups: Iterable[tuple[bytes, bytes, Sequence[bytes]]]) -> bytes:
    """``ExportTraceServiceRequest``; same layout as logs (resource 1, scope 1, items 2)."""
    return _export_request(groups)


def _export_request(groups: Iterable[tuple[bytes, bytes, Sequence[bytes]]]) -> bytes:
    by_resource: dict[bytes, list[bytes]] = {}
    for res, scp, items in groups:
        body = ld(1, scp) + b"".join(ld(2, item) for item in items)
        by_resource.setdefault(res, []).append(ld(2, body))
    return b"".join(ld(1, ld(1, res) + b"".join(scopes)) for res, scopes in by_resource.items())


# --- Spans ------------------------------------------------------------------------------------


def span_event(time_ns: int, name: str, attrs: Sequence[tuple[str, object]]) -> bytes:
    return fixed64(1, time_ns) + string(2, name) + attributes(3, attrs)


def span(
    trace_id: bytes,
    span_id: bytes,
    parent_span_id: bytes,
    name: str,
    kind: int,
    start_ns: int,
    end_ns: int,
    attrs: bytes,
    events: Sequence[bytes],
    status_code: int,
    status_message: str,
    remote_parent: bool = False,
) -> bytes:
    """An encoded ``Span``; ``attrs`` is already-encoded field-9 ``KeyValue`` entries."""
    parts = [b"\x0a\x10", trace_id, b"\x12\x08", span_id]
    if parent_span_id:
        parts.append(b"\x22\x08")
        parts.append(parent_span_id)
    parts.append(ld(5, name.encode()))
    parts.append(b"\x30" + _SMALL[kind])
    parts.append(b"\x39" + _PACK_Q(start_ns))
    parts.append(b"\x41" + _PACK_Q(end_ns))
    parts.append(attrs)
    for event in events:
        parts.append(ld(11, event))
    if status_code or status_message:
        parts.append(ld(15, string(2, status_message) + varint_field(3, status_code)))
    # flags (16): sampled, plus the "is the parent remote" bits current SDKs set.
    parts.append(b"\x85\x01" + _PACK_I(0x301 if remote_parent else 0x101))
    return b"".join(parts)
