"""What an alert, a workflow and a connection are, and the checks a definition passes.

Every surface (REST, MCP, CLI through REST) sends a JSON object; :func:`alert_values`,
:func:`workflow_values` and :func:`connection_values` turn it into the columns the store keeps,
or raise a located, coded :class:`~bzrk.alerts.errors.AlertError` naming the field at fault.
With ``creating=False`` only the fields present are checked (a partial update).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bzrk.alerts.durations import parse_duration
from bzrk.alerts.errors import bad
from bzrk.engine.stop import StopPredicateError, parse_stop_when
from bzrk.engine.timewindow import TimeExpressionError, now_ticks, request_window

SEVERITIES = ("info", "warning", "critical")
CONNECTION_TYPES = ("webhook", "slack", "email")
EMAIL_SECURITY = ("none", "starttls", "ssl")
STEP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# `{{step.column}}`: a value of an earlier step's first row (docs/alerts.md, "Workflows").
TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_$][A-Za-z0-9_.$]*)\s*\}\}")
MAX_STEPS = 20
MAX_QUERY_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on definitions (from settings): the shortest schedule and the longest wait."""

    min_every_s: float = 1.0
    max_every_s: float = 86_400.0
    default_timeout_ms: int = 10_000
    max_timeout_ms: int = 300_000


def _text(body: Mapping[str, Any], key: str, max_len: int, *, required: bool = False) -> str:
    value = body.get(key)
    if not isinstance(value, str) or len(value) > max_len:
        raise bad(f"'{key}' must be a string of at most {max_len} characters")
    if required and not value.strip():
        raise bad(f"'{key}' must not be empty")
    return value


def _ids(body: Mapping[str, Any], key: str) -> list[str]:
    value = body.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise bad(f"'{key}' must be a list of connection ids")
    if len(value) > 20:
        raise bad(f"'{key}' names at most 20 connections")
    return list(dict.fromkeys(value))


def _labels(body: Mapping[str, Any]) -> dict[str, str]:
    value = body.get("labels")
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 256
        for k, v in value.items()
    ):
        raise bad("'labels' must be an object of short strings")
    if len(value) > 32:
        raise bad("'labels' holds at most 32 entries")
    return dict(value)


def check_since(value: str, key: str = "since") -> str:
    """``value`` as a window start (``10m`` reads as ``10m ago``), or ``InvalidTimeRange``."""
    text = value.strip()
    try:
        parse_duration(text)
        text = f"{text} ago"
    except Exception:  # not a bare duration: a Berserk time expression, checked below
        pass
    try:
        window = request_window(text, None, now_ticks=now_ticks())
    except TimeExpressionError as exc:
        raise bad(f"'{key}': {exc}", "InvalidTimeRange") from None
    if window.start is None:
        raise bad(f"'{key}' must start the window (e.g. '5m ago')", "InvalidTimeRange")
    return text


def check_condition(value: Any, key: str = "condition") -> str:
    if not isinstance(value, str):
        raise bad(
            f"'{key}' must be a stop-language predicate such as 'n >= 50'", "InvalidCondition"
        )
    try:
        return parse_stop_when(value).text
    except StopPredicateError as exc:
        raise bad(f"'{key}': {exc}", "InvalidCondition") from None


def check_query(value: Any, key: str = "query") -> str:
    """KQL text that parses (the binder's checks come with the first evaluation's run)."""
    from bzrk.kql.diagnostics import KqlError
    from bzrk.kql.parser import parse

    text = _text({key: value}, key, MAX_QUERY_CHARS, required=True)
    try:
        parse(TEMPLATE.sub("x", text))
    except KqlError as exc:
        raise bad(f"'{key}': {exc}", "ParseError") from None
    return text


def _every(body: Mapping[str, Any], key: str, limits: Limits) -> float:
    seconds = parse_duration(body.get(key), key)
    if not limits.min_every_s <= seconds <= limits.max_every_s:
        raise bad(
            f"'{key}' must be between {limits.min_every_s:g}s and {limits.max_every_s:g}s",
            "InvalidDuration",
        )
    return seconds


def _timeout(body: Mapping[str, Any], limits: Limits) -> int:
    value = body.get("timeout_ms")
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise bad("'timeout_ms' must be a positive integer")
    if value > limits.max_timeout_ms:
        raise bad(f"'timeout_ms' {value} is above the cap of {limits.max_timeout_ms} ms")
    return value


def _unknown(body: Mapping[str, Any], known: set[str]) -> None:
    extra = set(body) - known
    if extra:
        raise bad(f"unknown field(s): {', '.join(sorted(extra))}")


ALERT_FIELDS = {
    "name", "description", "query", "database", "since", "every", "condition", "for",
    "repeat", "timeout_ms", "severity", "labels", "connections", "enabled",
}  # fmt: skip
# Read-only fields a client may send back unchanged (a GET body edited and PUT again).
READ_ONLY = {"id", "owner", "owner_name", "state", "state_since", "created_at", "updated_at",
             "muted_until", "last_evaluation", "next_due_at", "type", "has_secret"}  # fmt: skip


def _common(
    body: Mapping[str, Any],
    known: set[str],
    required: tuple[str, ...],
    defaults: dict[str, Any],
    *,
    creating: bool,
) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """The fields alerts and workflows share: ``(body with defaults, their columns)``."""
    _unknown(body, known | READ_ONLY)
    if creating:
        for key in required:
            if key not in body:
                raise bad(f"'{key}' is required")
        body = {**defaults, **body}
    out: dict[str, Any] = {"description": ""} if creating else {}
    if "name" in body:
        out["name"] = _text(body, "name", 256, required=True).strip()
    if "description" in body:
        out["description"] = _text(body, "description", 4096)
    if "database" in body:
        out["database"] = _text(body, "database", 128, required=True).strip()
    if "since" in body:
        out["since"] = check_since(_text(body, "since", 64, required=True))
    if "connections" in body:
        out["connections"] = _ids(body, "connections")
    if "enabled" in body:
        if not isinstance(body["enabled"], bool):
            raise bad("'enabled' must be true or false")
        out["enabled"] = body["enabled"]
    elif creating:
        out["enabled"] = True
    return body, out


def alert_values(body: Mapping[str, Any], limits: Limits, *, creating: bool) -> dict[str, Any]:
    """The ``alerts`` columns ``body`` sets."""
    body, out = _common(
        body,
        ALERT_FIELDS,
        ("name", "query", "database", "condition"),
        {"since": "5m ago", "every": "1m", "connections": []},
        creating=creating,
    )
    if "query" in body:
        out["query"] = check_query(body["query"])
    if "every" in body:
        out["every_s"] = _every(body, "every", limits)
    if "condition" in body:
        out["condition"] = check_condition(body["condition"])
    if "for" in body:
        out["for_s"] = parse_duration(body["for"], "for")
    if "repeat" in body:
        out["repeat_s"] = (
            None if body["repeat"] is None else parse_duration(body["repeat"], "repeat")
        )
        if out["repeat_s"] is not None and out["repeat_s"] < 1:
            raise bad("'repeat' must be at least 1s", "InvalidDuration")
    if "timeout_ms" in body:
        out["timeout_ms"] = _timeout(body, limits)
    if "severity" in body:
        if body["severity"] not in SEVERITIES:
            raise bad(f"'severity' must be one of {', '.join(SEVERITIES)}")
        out["severity"] = body["severity"]
    if "labels" in body:
        out["labels"] = _labels(body)
    if creating:
        out.setdefault("for_s", 0.0)
        out.setdefault("repeat_s", None)
        out.setdefault("timeout_ms", limits.default_timeout_ms)
        out.setdefault("severity", "warning")
        out.setdefault("labels", {})
    return out


WORKFLOW_FIELDS = {
    "name", "description", "database", "since", "steps", "connections", "every", "enabled",
}  # fmt: skip
STEP_FIELDS = {"name", "query", "database", "since", "continue_when", "parameters", "timeout_ms"}


def _steps(value: Any, limits: Limits) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise bad("'steps' must be a non-empty list of query steps")
    if len(value) > MAX_STEPS:
        raise bad(f"a workflow has at most {MAX_STEPS} steps")
    steps: list[dict[str, Any]] = []
    seen: list[str] = []
    for index, step in enumerate(value):
        where = f"steps[{index}]"
        if not isinstance(step, dict):
            raise bad(f"{where} must be an object")
        extra = set(step) - STEP_FIELDS
        if extra:
            raise bad(f"{where}: unknown field(s): {', '.join(sorted(extra))}")
        name = step.get("name", f"step{index + 1}")
        if not isinstance(name, str) or not STEP_NAME.match(name):
            raise bad(f"{where}.name must be an identifier (letters, digits, _)")
        if name in seen:
            raise bad(f"{where}.name '{name}' is used by an earlier step")
        query = check_query(step.get("query"), f"{where}.query")
        parameters = step.get("parameters", {})
        if not isinstance(parameters, dict) or not all(
            isinstance(k, str) and STEP_NAME.match(k) for k in parameters
        ):
            raise bad(f"{where}.parameters must map parameter names to values or templates")
        texts = [query, *(v for v in parameters.values() if isinstance(v, str))]
        for text in texts:
            for match in TEMPLATE.finditer(text):
                if match.group(1) not in seen:
                    raise bad(
                        f"{where}: '{match.group(0)}' names no earlier step "
                        f"(earlier steps: {', '.join(seen) or 'none'})",
                        "InvalidTemplate",
                    )
        out: dict[str, Any] = {"name": name, "query": query, "parameters": parameters}
        if step.get("database") is not None:
            out["database"] = _text(step, "database", 128, required=True).strip()
        if step.get("since") is not None:
            out["since"] = check_since(_text(step, "since", 64, required=True), f"{where}.since")
        if step.get("continue_when") is not None:
            out["continue_when"] = check_condition(step["continue_when"], f"{where}.continue_when")
        if step.get("timeout_ms") is not None:
            out["timeout_ms"] = _timeout(step, limits)
        steps.append(out)
        seen.append(name)
    return steps


def workflow_values(body: Mapping[str, Any], limits: Limits, *, creating: bool) -> dict[str, Any]:
    """The ``workflows`` columns ``body`` sets."""
    body, out = _common(
        body,
        WORKFLOW_FIELDS,
        ("name", "database", "steps"),
        {"since": "1h ago", "connections": [], "every": None},
        creating=creating,
    )
    if "steps" in body:
        out["steps"] = _steps(body["steps"], limits)
    if "every" in body:
        out["every_s"] = None if body["every"] is None else _every(body, "every", limits)
    return out


CONNECTION_FIELDS = {
    "name", "type", "url", "secret", "headers", "to", "from", "smtp_host", "smtp_port",
    "security", "username", "timeout_s",
}  # fmt: skip


def _url(body: Mapping[str, Any]) -> str:
    url = _text(body, "url", 2048, required=True).strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad("'url' must be an http(s) URL")
    return url


def _addresses(value: Any, key: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or len(items) > 50:
        raise bad(f"'{key}' must be an e-mail address or a list of up to 50")
    for item in items:
        if not isinstance(item, str) or not re.match(r"^[^@\s,<>]+@[^@\s,<>]+$", item.strip()):
            raise bad(f"'{key}': {item!r} is not an e-mail address")
    return [item.strip() for item in items]


def connection_values(
    body: Mapping[str, Any], *, creating: bool, current_type: str | None = None
) -> tuple[dict[str, Any], str | None, bool]:
    """``(columns, secret, secret_given)``: the non-secret columns and the plain secret.

    ``secret_given`` tells an update that the secret is to change (``None``: removed).
    """
    _unknown(body, CONNECTION_FIELDS | READ_ONLY)
    kind = body.get("type", current_type)
    if kind not in CONNECTION_TYPES:
        raise bad(f"'type' must be one of {', '.join(CONNECTION_TYPES)}")
    if current_type is not None and kind != current_type:
        raise bad("a connection's 'type' cannot change: make a new connection")
    if creating and "name" not in body:
        raise bad("'name' is required")
    out: dict[str, Any] = {"type": kind}
    if "name" in body:
        out["name"] = _text(body, "name", 256, required=True).strip()
    config: dict[str, Any] = {}
    secret: str | None = None
    secret_given = "secret" in body
    if secret_given and body["secret"] is not None:
        secret = _text(body, "secret", 4096, required=True)
    if "timeout_s" in body:
        timeout = body["timeout_s"]
        if (
            not isinstance(timeout, int | float)
            or isinstance(timeout, bool)
            or not 0 < timeout <= 60
        ):
            raise bad("'timeout_s' must be a number of seconds between 0 and 60")
        config["timeout_s"] = float(timeout)
    if kind == "webhook":
        if creating or "url" in body:
            config["url"] = _url(body)
        if "headers" in body:
            headers = body["headers"]
            if not isinstance(headers, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and re.match(r"^[A-Za-z0-9-]{1,64}$", k)
                for k, v in headers.items()
            ):
                raise bad("'headers' must map header names to strings")
            config["headers"] = dict(headers)
    elif kind == "slack":
        # The incoming-webhook URL is the credential: it is kept sealed, shown by host only.
        if creating or "url" in body:
            secret, secret_given = _url(body), True
        elif secret_given:
            raise bad("a Slack connection's secret is its 'url'")
    else:
        if creating or "to" in body:
            config["to"] = _addresses(body.get("to"), "to")
        if creating or "from" in body:
            config["from"] = _addresses(body.get("from"), "from")[0]
        if creating or "smtp_host" in body:
            config["smtp_host"] = _text(body, "smtp_host", 256, required=True).strip()
        port = body.get("smtp_port", 25 if creating else None)
        if port is not None:
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise bad("'smtp_port' must be a port number")
            config["smtp_port"] = port
        if "security" in body or creating:
            security = body.get("security") or {465: "ssl", 587: "starttls"}.get(port or 0, "none")
            if security not in EMAIL_SECURITY:
                raise bad(f"'security' must be one of {', '.join(EMAIL_SECURITY)}")
            config["security"] = security
        if "username" in body:
            config["username"] = body["username"] and _text(body, "username", 256)
    return {**out, "config": config}, secret, secret_given
