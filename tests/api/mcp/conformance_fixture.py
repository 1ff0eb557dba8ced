"""The conformance suite's reference tools on bzrk's own MCP protocol layer (test-only).

The official suite checks parts of the protocol layer (progress and log gating on the stream,
-32021 for an undeclared capability, content block shapes) only through its fixture tools
(``test_simple_text``, ``test_tool_with_progress``, ...). This module registers those tools on
:class:`bzrk.api.mcp.app.McpApp` so ``make mcp-conformance`` can run the whole requirement set
against the same layer the product uses. Serve it with::

    python -m tests.api.mcp.conformance_fixture --ready-file /tmp/ready.json
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import signal
import tempfile
import threading
from pathlib import Path

from bzrk.api.mcp.app import McpApp
from bzrk.api.mcp.protocol import logs_enabled
from bzrk.api.mcp.tooling import Tool, ToolCall, ToolError, ToolOutcome

# A 1x1 PNG and a 4-sample WAV: the smallest valid payloads of each kind.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF"
    + (44 - 8 + 8).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (8).to_bytes(4, "little")
    + bytes(8)
).decode()
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}
RESOURCE = {
    "type": "resource",
    "resource": {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    },
}
NO_ARGS = {"type": "object", "additionalProperties": False}


def fixture(name: str, handler, **options) -> Tool:  # type: ignore[no-untyped-def]
    return Tool(name, name, f"conformance fixture {name}", NO_ARGS, {}, handler, **options)


async def simple_text(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(None, "This is a simple text response for testing.")


async def image(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(None, "an image follows", [IMAGE])


async def audio(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(
        None, "audio follows", [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]
    )


async def embedded(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(None, "an embedded resource follows", [RESOURCE])


async def mixed(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(None, "text, an image and a resource", [IMAGE, RESOURCE])


async def error(call: ToolCall) -> ToolOutcome:
    raise ToolError("This tool intentionally returns an error for testing")


async def progress(call: ToolCall) -> ToolOutcome:
    token = call.envelope.progress_token
    for step in (0, 50, 100):
        if token is not None:
            await call.notify(
                "notifications/progress", {"progressToken": token, "progress": step, "total": 100}
            )
        await asyncio.sleep(0.05)
    return ToolOutcome(None, "progress done")


async def logging_tool(call: ToolCall) -> ToolOutcome:
    for step in range(3):
        if logs_enabled(call.envelope.log_level, "info"):
            await call.notify(
                "notifications/message",
                {"level": "info", "logger": "fixture", "data": f"log step {step}"},
            )
        await asyncio.sleep(0.02)
    return ToolOutcome(None, "logging done")


async def plain(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(None, "ok")


FIXTURE_TOOLS = (
    fixture("test_simple_text", simple_text),
    fixture("test_image_content", image),
    fixture("test_audio_content", audio),
    fixture("test_embedded_resource", embedded),
    fixture("test_multiple_content_types", mixed),
    fixture("test_error_handling", error),
    fixture("test_tool_with_progress", progress, streams=True),
    fixture("test_logging_tool", logging_tool, streams=True),
    fixture("test_missing_capability", plain, required_capabilities={"sampling": {}}),
    fixture("test_streaming_elicitation", plain, streams=True),
)


def main() -> None:
    from tests.api.mcp.harness import LoopbackServer, make_context

    parser = argparse.ArgumentParser()
    parser.add_argument("--ready-file", type=Path, required=True)
    args = parser.parse_args()
    ctx = make_context(Path(tempfile.mkdtemp(prefix="bzrk-mcp-fixture-")))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with LoopbackServer(McpApp(ctx, FIXTURE_TOOLS)) as server:
        args.ready_file.write_text(json.dumps({"url": server.url}))
        stop.wait()
    ctx.meta.close()


if __name__ == "__main__":
    main()
