"""Management commands (``.show tables``, ``.show databases``, ``.show table T schema``, …) on
every query surface, not only ADX's ``/v1/rest/mgmt``.

Berserk answers ``.show tables`` wherever a query goes (the agent skill sends it through
``bzrk search``, MCP ``query`` and ``POST /query``; issue 20). The commands, their columns and
their access rules are ADX's, in one place (:mod:`bzrk.api.adx.mgmt`): each surface hands a
text that starts with ``.`` to :func:`command_events` instead of the query executor and
encodes the events it gets like any result (one table, ``PrimaryResult``). Access is the one
shared :func:`bzrk.auth.permissions.authorize`, through the command table's own checks.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio.to_thread

from bzrk.api.adx.errors import AdxError
from bzrk.api.adx.mgmt import CommandContext, run_command
from bzrk.api.adx.request import strip_comments
from bzrk.auth.internal import Principal
from bzrk.engine.events import Error, Event
from bzrk.engine.request import SchemaProvider
from bzrk.server.context import AppContext

log = logging.getLogger(__name__)

PRIMARY = "PrimaryResult"


def is_command(text: str) -> bool:
    """Whether ``text`` is a management command (its first non-comment character is ``.``)."""
    return strip_comments(text).startswith(".")


async def command_events(
    ctx: AppContext, principal: Principal, database: str, text: str, *, surface: str
) -> AsyncIterator[Event]:
    """The result of command ``text`` run in ``database`` as engine events (schema, rows,
    metadata, done), or one coded :class:`Error`: never an exception's text."""
    for event in await _run(ctx, principal, database, text, surface):
        yield event


async def _run(
    ctx: AppContext, principal: Principal, database: str, text: str, surface: str
) -> list[Event]:
    schema: SchemaProvider | None = ctx.components.get("schema")
    if schema is None:
        return [Error(code="SchemaUnavailable", message="schema discovery is not available")]
    command = CommandContext(
        schema=schema, principal=principal, db=database, app=ctx, surface=surface
    )
    try:
        table = await anyio.to_thread.run_sync(run_command, command, text)
    except AdxError as exc:
        return [exc.error]
    except Exception:
        log.exception("management command failed")
        return [Error(code="SchemaUnavailable", message="schema discovery failed")]
    return table.events(PRIMARY)
