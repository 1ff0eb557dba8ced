"""Alerts, workflows and connections over REST on the query service (the gateway serves them
as ``/api/v1/alerts``, ``/api/v1/workflows`` and ``/api/v1/connections`` for any signed-in
principal; docs/alerts.md lists every route).

Every answer is JSON; a failure is ``{"error": {"code", "message"}}`` with the status of its
:class:`~bzrk.alerts.errors.AlertError`. Who may do what is :mod:`bzrk.alerts.service`'s rule.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bzrk.alerts.errors import AlertError, bad
from bzrk.alerts.service import AlertService, shared
from bzrk.auth.internal import Principal

log = logging.getLogger("bzrk.api.alerts")

MAX_BODY_BYTES = 1024 * 1024
Handler = Callable[[Request, AlertService, Principal], Awaitable[Any]]


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise AlertError(
            413, "PayloadTooLarge", f"request bodies are limited to {MAX_BODY_BYTES} bytes"
        )
    try:
        value = json.loads(raw or b"{}")
    except (UnicodeDecodeError, ValueError):
        raise bad("the request body is not JSON") from None
    if not isinstance(value, dict):
        raise bad("the request body must be a JSON object")
    return value


def _limit(request: Request, default: int = 100) -> int:
    try:
        return max(1, min(int(request.query_params.get("limit", default)), 1000))
    except ValueError:
        raise bad("'limit' must be an integer") from None


def _endpoint(handler: Handler, status: int = 200) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        principal: Principal | None = request.scope.get("bzrk.principal")
        if principal is None:
            return _error(401, "Unauthenticated", "authentication required")
        try:
            result = await handler(request, shared(request.app.state.ctx), principal)
        except AlertError as exc:
            return _error(exc.status, exc.code, exc.message)
        if result is None:
            return Response(status_code=204)
        return JSONResponse(result, status_code=status)

    return endpoint


def _in_thread(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    async def call(*args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    return call


def _id(request: Request) -> str:
    return request.path_params["ident"]


# -- connections ------------------------------------------------------------------------------
async def list_connections(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"connections": await _in_thread(svc.list_connections)(who)}


async def create_connection(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"connection": await _in_thread(svc.create_connection)(who, await _body(request))}


async def get_connection(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"connection": await _in_thread(svc.get_connection)(who, _id(request))}


async def update_connection(request: Request, svc: AlertService, who: Principal) -> Any:
    body = await _body(request)
    return {"connection": await _in_thread(svc.update_connection)(who, _id(request), body)}


async def delete_connection(request: Request, svc: AlertService, who: Principal) -> Any:
    await _in_thread(svc.delete_connection)(who, _id(request))


async def test_connection(request: Request, svc: AlertService, who: Principal) -> Any:
    return await svc.test_connection(who, _id(request))


# -- alerts -----------------------------------------------------------------------------------
async def list_alerts(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"alerts": await _in_thread(svc.list_alerts)(who)}


async def create_alert(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"alert": await _in_thread(svc.create_alert)(who, await _body(request))}


async def get_alert(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"alert": await _in_thread(svc.get_alert)(who, _id(request))}


async def update_alert(request: Request, svc: AlertService, who: Principal) -> Any:
    body = await _body(request)
    return {"alert": await _in_thread(svc.update_alert)(who, _id(request), body)}


async def delete_alert(request: Request, svc: AlertService, who: Principal) -> Any:
    await _in_thread(svc.delete_alert)(who, _id(request))


async def history(request: Request, svc: AlertService, who: Principal) -> Any:
    found = await _in_thread(svc.history)(who, _id(request), _limit(request))
    return {"evaluations": found}


async def test_alert(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"evaluation": await svc.test_alert(who, _id(request))}


async def mute(request: Request, svc: AlertService, who: Principal) -> Any:
    body = await _body(request) if request.method == "POST" else {"for": None}
    return {"alert": await _in_thread(svc.mute_alert)(who, _id(request), body)}


# -- workflows --------------------------------------------------------------------------------
async def list_workflows(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"workflows": await _in_thread(svc.list_workflows)(who)}


async def create_workflow(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"workflow": await _in_thread(svc.create_workflow)(who, await _body(request))}


async def get_workflow(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"workflow": await _in_thread(svc.get_workflow)(who, _id(request))}


async def update_workflow(request: Request, svc: AlertService, who: Principal) -> Any:
    body = await _body(request)
    return {"workflow": await _in_thread(svc.update_workflow)(who, _id(request), body)}


async def delete_workflow(request: Request, svc: AlertService, who: Principal) -> Any:
    await _in_thread(svc.delete_workflow)(who, _id(request))


async def run_workflow(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"run": await svc.run_workflow(who, _id(request))}


async def workflow_runs(request: Request, svc: AlertService, who: Principal) -> Any:
    return {"runs": await _in_thread(svc.workflow_runs)(who, _id(request), _limit(request, 50))}


def routes() -> list[Route]:
    """The routes, for the query service's HTTP app."""

    def crud(
        base: str, listing: Handler, create: Handler, get: Handler, update: Handler, delete: Handler
    ) -> list[Route]:
        item = f"{base}/{{ident}}"
        return [
            Route(base, _endpoint(listing), methods=["GET"]),
            Route(base, _endpoint(create, 201), methods=["POST"]),
            Route(item, _endpoint(get), methods=["GET"]),
            Route(item, _endpoint(update), methods=["PUT", "PATCH"]),
            Route(item, _endpoint(delete), methods=["DELETE"]),
        ]

    return [
        *crud(
            "/connections",
            list_connections,
            create_connection,
            get_connection,
            update_connection,
            delete_connection,
        ),
        Route("/connections/{ident}/test", _endpoint(test_connection), methods=["POST"]),
        *crud("/alerts", list_alerts, create_alert, get_alert, update_alert, delete_alert),
        Route("/alerts/{ident}/history", _endpoint(history), methods=["GET"]),
        Route("/alerts/{ident}/test", _endpoint(test_alert), methods=["POST"]),
        Route("/alerts/{ident}/mute", _endpoint(mute), methods=["POST", "DELETE"]),
        *crud(
            "/workflows",
            list_workflows,
            create_workflow,
            get_workflow,
            update_workflow,
            delete_workflow,
        ),
        Route("/workflows/{ident}/run", _endpoint(run_workflow), methods=["POST"]),
        Route("/workflows/{ident}/runs", _endpoint(workflow_runs), methods=["GET"]),
    ]
