"""Loki push API bodies (snappy protobuf or JSON) → bzrk rows; stream labels become attributes.

The push protobuf (``logproto.PushRequest``) is small, so its descriptor is built here with
protobuf's descriptor API instead of shipping generated code. Each entry is one log row:
``body`` = the line, ``attributes`` = stream labels plus structured metadata,
``severity_text``/``severity_number`` = the ``level``/``detected_level``/``severity`` label as
OTel names it (``warning`` → ``WARN``, 13), and ``resource.service.name`` = the
``service_name`` label (or ``service``, ``job``) so the table's sorting key applies.
"""

from __future__ import annotations

import datetime
import json
import re
import time
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from bzrk.ingest.otlp import Mapped, RecordError, check_time, to_json


class LokiDecodeError(ValueError):
    """The push body is not a valid Loki push request."""


def _push_request_class() -> type:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="bzrk_loki_push.proto", package="logproto", syntax="proto3"
    )
    fdp.dependency.append("google/protobuf/timestamp.proto")
    f = descriptor_pb2.FieldDescriptorProto
    label_pair = fdp.message_type.add(name="LabelPairAdapter")
    label_pair.field.add(name="name", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    label_pair.field.add(name="value", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry = fdp.message_type.add(name="EntryAdapter")
    entry.field.add(
        name="timestamp",
        number=1,
        type=f.TYPE_MESSAGE,
        type_name=".google.protobuf.Timestamp",
        label=f.LABEL_OPTIONAL,
    )
    entry.field.add(name="line", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry.field.add(
        name="structuredMetadata",
        number=3,
        type=f.TYPE_MESSAGE,
        type_name=".logproto.LabelPairAdapter",
        label=f.LABEL_REPEATED,
    )
    stream = fdp.message_type.add(name="StreamAdapter")
    stream.field.add(name="labels", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    stream.field.add(
        name="entries",
        number=2,
        type=f.TYPE_MESSAGE,
        type_name=".logproto.EntryAdapter",
        label=f.LABEL_REPEATED,
    )
    stream.field.add(name="hash", number=3, type=f.TYPE_UINT64, label=f.LABEL_OPTIONAL)
    push = fdp.message_type.add(name="PushRequest")
    push.field.add(
        name="streams",
        number=1,
        type=f.TYPE_MESSAGE,
        type_name=".logproto.StreamAdapter",
        label=f.LABEL_REPEATED,
    )
    from google.protobuf import timestamp_pb2  # registers its file in the default pool

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("logproto.PushRequest"))


PushRequest = _push_request_class()

_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_SERVICE_LABELS = ("service_name", "service", "job")
_LEVEL_LABELS = ("level", "detected_level", "severity")

# Level spellings of logging libraries and Loki (``detected_level``) → OTel's short severity
# name and the first number of its range (OTel logs data model, "Field: SeverityNumber").
_SEVERITIES: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("trace", "trc"), ("TRACE", 1)),
    **dict.fromkeys(("debug", "dbg", "debu"), ("DEBUG", 5)),
    **dict.fromkeys(("info", "inf", "information", "informational", "notice"), ("INFO", 9)),
    **dict.fromkeys(("warn", "warning", "wrn"), ("WARN", 13)),
    **dict.fromkeys(("error", "err", "eror"), ("ERROR", 17)),
    **dict.fromkeys(
        ("fatal", "critical", "crit", "panic", "emerg", "emergency", "alert"), ("FATAL", 21)
    ),
}


def severity(level: str) -> tuple[str | None, int | None]:
    """A Loki level label as OTel ``(severity_text, severity_number)``.

    Known spellings (any case) become OTel's names (``warning`` → ``WARN``, 13); another
    level keeps its text upper-cased with no number; Loki's ``unknown`` is no severity.

    >>> severity("warning"), severity("Notice"), severity("audit"), severity("unknown")
    (('WARN', 13), ('INFO', 9), ('AUDIT', None), (None, None))
    """
    key = level.strip().lower()
    if not key or key == "unknown":
        return None, None
    known = _SEVERITIES.get(key)
    return known if known is not None else (level.strip().upper(), None)


def parse_labels(text: str) -> dict[str, str]:
    """``{job="api", level="info"}`` → ``{"job": "api", "level": "info"}``."""
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise LokiDecodeError(
            f'stream labels {text[:80]!r} are not of the form {{name="value", ...}}'
        )
    inner = inner[1:-1].strip()
    labels: dict[str, str] = {}
    position = 0
    while position < len(inner):
        match = _LABEL.match(inner, position)
        if match is None:
            raise LokiDecodeError(
                f"cannot parse stream labels at {inner[position : position + 40]!r}"
            )
        labels[match.group(1)] = json.loads(f'"{match.group(2)}"')
        position = match.end()
    return labels


def decode_protobuf(
    raw: bytes,
) -> list[tuple[dict[str, str], list[tuple[int, str, dict[str, str]]]]]:
    """Decoded (snappy already undone) push request as ``[(labels, [(ns, line, metadata)])]``."""
    request = PushRequest()
    try:
        request.ParseFromString(raw)
    except DecodeError as exc:
        raise LokiDecodeError(f"invalid Loki push protobuf: {exc}") from exc
    streams = []
    for stream in request.streams:
        entries = [
            (
                entry.timestamp.seconds * 10**9 + entry.timestamp.nanos,
                entry.line,
                {pair.name: pair.value for pair in entry.structuredMetadata},
            )
            for entry in stream.entries
        ]
        streams.append((parse_labels(stream.labels), entries))
    return streams


def decode_json(raw: bytes) -> list[tuple[dict[str, str], list[tuple[int, str, dict[str, str]]]]]:
    """``{"streams": [{"stream": {...}, "values": [["<ns>", "line", {meta}?], ...]}]}``."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LokiDecodeError(f"invalid JSON: {exc}") from exc
    except RecursionError as exc:
        raise LokiDecodeError("invalid JSON: nested too deeply") from exc
    if not isinstance(document, dict) or not isinstance(document.get("streams"), list):
        raise LokiDecodeError('JSON push body needs a "streams" array')
    streams = []
    for number, stream in enumerate(document["streams"]):
        if not isinstance(stream, dict):
            raise LokiDecodeError(f"streams[{number}] is not an object")
        if "entries" in stream and "values" not in stream:
            streams.append(_legacy_stream(number, stream))
            continue
        labels = stream.get("stream") or {}
        values = stream.get("values") or []
        if not isinstance(labels, dict) or not isinstance(values, list):
            raise LokiDecodeError(f"streams[{number}] needs a 'stream' object and a 'values' array")
        entries = []
        for index, value in enumerate(values):
            where = f"streams[{number}].values[{index}]"
            if not isinstance(value, list) or len(value) not in (2, 3):
                raise LokiDecodeError(f'{where} must be ["<unix ns>", "<line>"(, {{metadata}})]')
            try:
                ns = int(value[0])
            except (TypeError, ValueError) as exc:
                raise LokiDecodeError(
                    f"{where}: timestamp {value[0]!r} is not unix nanoseconds"
                ) from exc
            if not isinstance(value[1], str):
                raise LokiDecodeError(f"{where}: the line must be a string")
            metadata = value[2] if len(value) == 3 else {}
            if not isinstance(metadata, dict):
                raise LokiDecodeError(f"{where}: structured metadata must be an object")
            metadata = {str(k): str(v) for k, v in metadata.items()}
            _check_text(where, value[1], *metadata, *metadata.values())
            entries.append((ns, value[1], metadata))
        labels = {str(k): str(v) for k, v in labels.items()}
        _check_text(f"streams[{number}].stream", *labels, *labels.values())
        streams.append((labels, entries))
    return streams


_RFC3339 = re.compile(
    r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)$", re.I
)


def _rfc3339_ns(text: str) -> int:
    """Unix nanoseconds of an RFC 3339 time (up to 9 fractional digits); ValueError if not one."""
    match = _RFC3339.match(text.strip())
    if match is None:
        raise ValueError(text)
    whole, fraction, zone = match.groups()
    zone = "+00:00" if zone.upper() == "Z" else zone
    seconds = datetime.datetime.fromisoformat(f"{whole}{zone}").timestamp()
    return int(seconds) * 10**9 + int((fraction or "").ljust(9, "0"))


def _legacy_stream(
    number: int, stream: dict[str, Any]
) -> tuple[dict[str, str], list[tuple[int, str, dict[str, str]]]]:
    """A stream of the pre-v1 JSON push format: ``{"labels": "{a=\"b\"}", "entries":
    [{"ts": "<RFC 3339>", "line": "…"}]}`` (python-logging-loki's default)."""
    labels_text, entries = stream.get("labels"), stream.get("entries")
    if not isinstance(labels_text, str) or not isinstance(entries, list):
        raise LokiDecodeError(f"streams[{number}] needs a 'labels' string and an 'entries' array")
    labels = parse_labels(labels_text)
    _check_text(f"streams[{number}].labels", *labels, *labels.values())
    out: list[tuple[int, str, dict[str, str]]] = []
    for index, entry in enumerate(entries):
        where = f"streams[{number}].entries[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("line"), str):
            raise LokiDecodeError(f'{where} must be {{"ts": "<RFC 3339>", "line": "<line>"}}')
        try:
            ns = _rfc3339_ns(str(entry.get("ts", "")))
        except ValueError as exc:
            raise LokiDecodeError(
                f"{where}: ts {entry.get('ts')!r} is not an RFC 3339 time"
            ) from exc
        _check_text(where, entry["line"])
        out.append((ns, entry["line"], {}))
    return labels, out


def _check_text(where: str, *texts: str) -> None:
    # JSON "\ud800" escapes decode to lone surrogates, which no UTF-8 column can hold.
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise LokiDecodeError(f"{where}: text is not valid UTF-8 (unpaired surrogate)") from exc


def map_streams(
    streams: list[tuple[dict[str, str], list[tuple[int, str, dict[str, str]]]]],
    now_ns: int | None = None,
) -> Mapped:
    now_ns = now_ns or time.time_ns()
    out = Mapped()
    for labels, entries in streams:
        resource: dict[str, Any] = {}
        service = next((labels[k] for k in _SERVICE_LABELS if labels.get(k)), None)
        if service:
            resource["service.name"] = service
        route = labels.get("bzrk_table") or None
        resource_json = to_json(resource)
        level = next((labels[k] for k in _LEVEL_LABELS if labels.get(k)), None)
        for ns, line, metadata in entries:
            try:
                timestamp = check_time(ns, "entry timestamp", now_ns) or now_ns
            except RecordError as exc:
                out.reject(1, str(exc))
                continue
            attributes = {**labels, **metadata}
            row: dict[str, Any] = {
                "timestamp": timestamp,
                "observed_time": now_ns,
                "ingest_time": now_ns,
                "body": line,
                "resource": resource_json,
                "attributes": to_json(attributes),
            }
            entry_level = next((metadata[k] for k in _LEVEL_LABELS if metadata.get(k)), level)
            if entry_level:
                text, number = severity(entry_level)
                if text is not None:
                    row["severity_text"] = text
                if number is not None:
                    row["severity_number"] = number
            out.add(route, row)
    return out
