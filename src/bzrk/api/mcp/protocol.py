"""MCP 2026-07-28 wire rules: the request validation ladder, error codes and result envelopes.

Pure functions over a decoded JSON-RPC body and the request headers; no I/O. The ladder is
the order of ``spec/mcp.md`` §3.2 (first failure wins) and the codes are its §3.3 table.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = "2026-07-28"
SUPPORTED_VERSIONS = (PROTOCOL_VERSION,)

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

HEADER_PROTOCOL_VERSION = "mcp-protocol-version"
HEADER_METHOD = "mcp-method"
HEADER_NAME = "mcp-name"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# HTTP status per JSON-RPC error code; anything unlisted (internal errors) goes out as 500.
HTTP_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}

# Methods whose body field is mirrored in the Mcp-Name header.
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

_B64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


@dataclass(frozen=True, slots=True)
class RpcError(Exception):
    """A JSON-RPC error answer; ``http_status`` comes from the code unless given."""

    code: int
    message: str
    data: Any = None

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.code, 500)

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True, slots=True)
class Envelope:
    """A request that passed every rung of the ladder."""

    id: str | int
    method: str
    params: dict[str, Any]
    protocol_version: str
    client_capabilities: Any
    client_info: Any
    log_level: str | None
    progress_token: str | int | None


def decode_header_value(value: str | None) -> str | None:
    """Undo the ``=?base64?…?=`` wrapping clients use for unsafe header values (None if corrupt)."""
    if value is None:
        return None
    match = _B64_SENTINEL.fullmatch(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
    except binascii.Error:
        return None
    if base64.b64encode(decoded).decode("ascii") != payload:
        return None
    try:
        return decoded.decode("utf-8")
    except UnicodeDecodeError:
        return None


def request_id(body: Any) -> str | int | None:
    """The id to echo in an error answer, when the body has a usable one."""
    if isinstance(body, dict):
        value = body.get("id")
        if isinstance(value, str | int) and not isinstance(value, bool):
            return value
    return None


def is_notification(body: Mapping[str, Any]) -> bool:
    return "id" not in body


def check_shape(body: Any) -> None:
    """Rung 4: a JSON-RPC 2.0 object with a string method and, if present, a usable id."""
    if not isinstance(body, dict):
        raise RpcError(INVALID_REQUEST, "the body must be one JSON-RPC request object")
    if body.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'the request must carry "jsonrpc": "2.0"')
    if not isinstance(body.get("method"), str) or not body["method"]:
        raise RpcError(INVALID_REQUEST, "the request has no method")
    if "id" in body:
        rid = body["id"]
        if rid is None or isinstance(rid, bool) or not isinstance(rid, str | int):
            raise RpcError(INVALID_REQUEST, "the request id must be a string or an integer")
    if "params" in body and not isinstance(body["params"], dict):
        raise RpcError(INVALID_REQUEST, "params must be an object")


def classify(body: dict[str, Any], headers: Mapping[str, str]) -> Envelope:
    """Rungs 6-9 of the ladder for a shaped request; raises :class:`RpcError` at the first failure.

    ``headers`` are keyed by lower-case name with surrounding whitespace already trimmed.
    """
    params: dict[str, Any] = body.get("params") or {}
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {META_PROTOCOL_VERSION!r} and "
            f"{META_CLIENT_CAPABILITIES!r}",
        )
    missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}")
    version = meta[META_PROTOCOL_VERSION]
    method: str = body["method"]

    header_version = headers.get(HEADER_PROTOCOL_VERSION)
    if header_version is None or header_version != version:
        raise RpcError(
            HEADER_MISMATCH,
            "the MCP-Protocol-Version header is missing or differs from "
            f"params._meta[{META_PROTOCOL_VERSION!r}]",
        )
    if headers.get(HEADER_METHOD) != method:
        raise RpcError(
            HEADER_MISMATCH, "the Mcp-Method header is missing or differs from the body's method"
        )
    name_key = NAME_BEARING.get(method)
    if name_key is not None:
        header_name = decode_header_value(headers.get(HEADER_NAME))
        if header_name is None or header_name != params.get(name_key):
            raise RpcError(
                HEADER_MISMATCH,
                f"the Mcp-Name header is missing or differs from params.{name_key}",
            )

    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, f"{META_PROTOCOL_VERSION} must be a string")
    if version not in SUPPORTED_VERSIONS:
        raise RpcError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )

    log_level = meta.get(META_LOG_LEVEL)
    if log_level is not None and log_level not in LOG_LEVELS:
        raise RpcError(INVALID_PARAMS, f"{META_LOG_LEVEL} must be one of {', '.join(LOG_LEVELS)}")
    progress_token = meta.get("progressToken")
    if progress_token is not None and (
        isinstance(progress_token, bool) or not isinstance(progress_token, str | int)
    ):
        raise RpcError(INVALID_PARAMS, "progressToken must be a string or an integer")
    return Envelope(
        id=body["id"],
        method=method,
        params=params,
        protocol_version=version,
        client_capabilities=meta[META_CLIENT_CAPABILITIES],
        client_info=meta.get(META_CLIENT_INFO),
        log_level=log_level,
        progress_token=progress_token,
    )


def legacy_initialize_error(body: Mapping[str, Any]) -> RpcError | None:
    """A pre-2026 ``initialize`` (no modern envelope) is told which versions we speak."""
    if body.get("method") != "initialize":
        return None
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
        return None
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"this server speaks MCP {PROTOCOL_VERSION} only; the initialize handshake is not accepted",
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def logs_enabled(level: str | None, message_level: str = "info") -> bool:
    """Whether a ``message_level`` notification may go out for a request asking for ``level``."""
    if level is None:
        return False
    return LOG_LEVELS.index(message_level) >= LOG_LEVELS.index(level)


def response(rid: str | int | None, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error_response(rid: str | int | None, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": error.to_json()}


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}
