"""What a tool is to the MCP surface: its schemas, its handler, and how it answers.

A handler gets a :class:`ToolCall` (validated arguments, the caller, a way to send
request-scoped notifications) and returns a :class:`ToolOutcome`, or raises
:class:`ToolError` for a failure the model can act on (an ``isError: true`` result).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from bzrk.api.mcp.protocol import Envelope
from bzrk.auth.internal import Principal
from bzrk.server.context import AppContext

Notify = Callable[[str, dict[str, Any]], Awaitable[None]]


class ToolError(Exception):
    """A tool ran and failed; the message is written for the model that called it."""

    def __init__(self, message: str, *, code: str = "", location: dict[str, int] | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.location = location

    def text(self) -> str:
        head = f"{self.code}: " if self.code else ""
        where = ""
        if self.location:
            where = (
                f" (line {self.location.get('line')}, column {self.location.get('column')})"
                if "line" in self.location
                else ""
            )
        return f"{head}{self.message}{where}"


@dataclass
class ToolCall:
    app: AppContext
    principal: Principal | None
    envelope: Envelope
    arguments: dict[str, Any]
    notify: Notify

    @property
    def principal_key(self) -> str:
        """The caller's principal key (``user:<id>`` / ``sp:<id>``): what runs are owned by."""
        return self.principal.key if self.principal else ""

    async def check_database(self, database: str) -> None:
        """Refuse, as a tool error coded ``AccessDenied``, a database the caller may not query."""
        from bzrk.api.access import ACCESS_DENIED, refusal

        denied = await refusal(self.app, self.principal, database, surface="mcp")
        if denied is not None:
            raise ToolError(denied.message, code=ACCESS_DENIED)


@dataclass
class ToolOutcome:
    structured: Any
    text: str
    # Content blocks beyond the one text rendering (images, embedded resources, ...).
    extra_content: list[dict[str, Any]] = field(default_factory=list)


Handler = Callable[[ToolCall], Awaitable[ToolOutcome]]


@dataclass
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    handler: Handler
    # Whether a call may answer as request-scoped SSE (long-running, with progress).
    streams: bool = False
    # Client capabilities a call needs (checked against the request's clientCapabilities).
    required_capabilities: dict[str, Any] | None = None
    # Tool annotations: whether a call changes nothing, and whether it deletes.
    read_only: bool = True
    destructive: bool = False
    validator: Draft202012Validator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.input_schema = portable(self.input_schema)
        self.output_schema = portable(self.output_schema)
        Draft202012Validator.check_schema(self.input_schema)
        if self.output_schema:
            Draft202012Validator.check_schema(self.output_schema)
        self.validator = Draft202012Validator(self.input_schema)

    def listing(self) -> dict[str, Any]:
        listing: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.output_schema:
            listing["outputSchema"] = self.output_schema
        return {
            **listing,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.name != "query",
                "openWorldHint": False,
            },
        }

    def check_arguments(self, arguments: Any) -> dict[str, Any]:
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be an object")
        errors = sorted(self.validator.iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.path)
            prefix = f"argument {where!r}: " if where else ""
            raise ToolError(f"invalid arguments for {self.name}: {prefix}{first.message}")
        return arguments


def portable(schema: Any) -> Any:
    """Spell nullable types as ``anyOf`` branches (single-``type`` dialects reject type lists)."""
    if isinstance(schema, list):
        return [portable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: portable(value) for key, value in schema.items()}
    types = out.get("type")
    if isinstance(types, list):
        del out["type"]
        return {"anyOf": [{"type": t} for t in types], **out}
    return out


def result_payload(outcome: ToolOutcome) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "content": [{"type": "text", "text": outcome.text}, *outcome.extra_content],
        "isError": False,
    }
    if outcome.structured is not None:
        payload["structuredContent"] = outcome.structured
    return payload


def error_payload(error: ToolError) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": error.text()}], "isError": True}


def obj(
    properties: dict[str, Any], required: tuple[str, ...] = (), *, closed: bool = True
) -> dict[str, Any]:
    """A JSON Schema object (closed to unknown keys unless ``closed`` is False)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema
