"""The admin JSON API under ``/api/v1/admin``: users, service principals and their tokens.

Admins only (role ``admin``), by bearer token (service principal or CLI) or by UI session with
its CSRF token. Tables and ingest tokens belong to the ingest service; the gateway forwards
those paths to its admin API (``/admin/v1/...`` on the OTLP/HTTP listener, audience
``ingest``). docs/auth.md lists every route.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bzrk.auth import accounts, audit, permissions
from bzrk.auth.bearer import Identity
from bzrk.auth.internal import SERVICE_PRINCIPAL, USER, principal_key
from bzrk.auth.passwords import generate_password
from bzrk.auth.permissions import Action
from bzrk.auth.timestamps import aware
from bzrk.gateway.authn import ADMIN, Unauthenticated, authenticate, challenge, forbidden
from bzrk.gateway.state import GatewayState, client_ip, read_json_object
from bzrk.meta.store import Conflict, NotFound

Handler = Callable[[Request, Identity], Awaitable[Response]]


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _optional_str(body: dict[str, object], key: str, max_len: int = 256) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > max_len:
        raise ValueError(f"{key} must be a string of at most {max_len} characters")
    return value


def _expiry(body: dict[str, object], now: datetime) -> datetime | None:
    if body.get("expires_in_days") is not None:
        days = body["expires_in_days"]
        if not isinstance(days, int | float) or isinstance(days, bool) or not 0 < days <= 3650:
            raise ValueError("expires_in_days must be a number between 0 and 3650")
        return now + timedelta(days=float(days))
    text = _optional_str(body, "expires_at", 64)
    if text is None:
        return None
    at = aware(datetime.fromisoformat(text))
    if at <= now:
        raise ValueError("expires_at must be in the future")
    return at


async def signed_in(state: GatewayState, request: Request) -> Identity | Response:
    """The caller on the admin API (bearer, or session with CSRF), or the 401 answer."""
    try:
        return await authenticate(
            state.ctx.meta, request.scope, ADMIN, state.mcp_resource, state.now()
        )
    except Unauthenticated as exc:
        state.refused(request.scope, exc, ADMIN)
        return challenge(exc.presented)


async def require_admin(state: GatewayState, request: Request) -> Identity | Response:
    """The caller if they hold the cluster admin role; else the 401 or 403 answer."""
    identity = await signed_in(state, request)
    if isinstance(identity, Response):
        return identity
    decision = await asyncio.to_thread(
        permissions.authorize, state.ctx.meta, identity.principal, Action.MANAGE, None
    )
    if not decision.allowed:
        state.audit.record(
            "request_refused",
            outcome=audit.REFUSED,
            reason=f"{permissions.ACCESS_DENIED}:{decision.reason}",
            actor=identity.principal,
            target=request.url.path,
            surface="admin",
            address=client_ip(request.scope),
        )
        return forbidden("this operation needs the admin role")
    return identity


def routes(state: GatewayState) -> list[Route]:
    meta = state.ctx.meta
    max_bytes = state.config.limits.max_form_bytes

    def admin(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            identity = await require_admin(state, request)
            if isinstance(identity, Response):
                return identity
            try:
                return await handler(request, identity)
            except NotFound as exc:
                return _error(404, "NotFound", str(exc))
            except Conflict as exc:
                return _error(409, "Conflict", str(exc))
            except ValueError as exc:
                return _error(400, "BadRequest", str(exc))

        return endpoint

    async def list_users(_request: Request, _who: Identity) -> Response:
        users = await asyncio.to_thread(accounts.list_users, meta)
        return JSONResponse({"users": [u.as_json() for u in users]})

    async def create_user(request: Request, who: Identity) -> Response:
        body = await read_json_object(request, max_bytes)
        username = _optional_str(body, "username") or ""
        if not username.strip():
            raise ValueError("username is required")
        password = _optional_str(body, "password", 1024)
        generated = password is None
        password = password or generate_password()
        role = _optional_str(body, "role", 32) or "member"
        user_id = await asyncio.to_thread(
            accounts.create_user,
            meta,
            username,
            password,
            role,
            _optional_str(body, "display_name") or "",
            who.principal.key,
        )
        user = await asyncio.to_thread(accounts.get_user, meta, user_id)
        out: dict[str, object] = {"user": user.as_json()}
        if generated:
            out["password"] = password
        return JSONResponse(out, status_code=201)

    async def update_user(request: Request, who: Identity) -> Response:
        body = await read_json_object(request, max_bytes)
        user_id = request.path_params["user_id"]
        disabled = body.get("disabled")
        if disabled is not None and not isinstance(disabled, bool):
            raise ValueError("disabled must be true or false")
        if user_id == who.account_id and (disabled or body.get("role") not in (None, "admin")):
            raise ValueError("you cannot disable or demote yourself")
        role = _optional_str(body, "role", 32)
        user = await asyncio.to_thread(
            accounts.update_user,
            meta,
            user_id,
            role=role,
            disabled=disabled,
            password=_optional_str(body, "password", 1024),
            display_name=_optional_str(body, "display_name"),
        )
        if role is not None or disabled is not None:
            state.audit.record(
                "role_changed",
                actor=who.principal,
                target=principal_key(USER, user.id),
                surface="admin",
                details={
                    "principal_name": user.username,
                    "role": user.role,
                    "disabled": user.disabled,
                },
            )
        return JSONResponse({"user": user.as_json()})

    async def list_sps(_request: Request, _who: Identity) -> Response:
        sps = await asyncio.to_thread(accounts.list_service_principals, meta)
        return JSONResponse({"service_principals": [sp.as_json() for sp in sps]})

    async def create_sp(request: Request, who: Identity) -> Response:
        body = await read_json_object(request, max_bytes)
        name = _optional_str(body, "name", 128) or ""
        if not name.strip():
            raise ValueError("name is required")
        sp_id = await asyncio.to_thread(
            accounts.create_service_principal,
            meta,
            name,
            _optional_str(body, "role", 32) or "member",
            _optional_str(body, "display_name") or "",
            who.account_id if who.principal.kind == "user" else None,
        )
        sp = await asyncio.to_thread(accounts.get_service_principal, meta, sp_id)
        return JSONResponse({"service_principal": sp.as_json()}, status_code=201)

    async def delete_sp(request: Request, _who: Identity) -> Response:
        await asyncio.to_thread(
            accounts.delete_service_principal, meta, request.path_params["sp_id"]
        )
        return Response(status_code=204)

    async def list_tokens(request: Request, _who: Identity) -> Response:
        found = await asyncio.to_thread(
            accounts.list_service_principal_tokens, meta, request.path_params["sp_id"]
        )
        return JSONResponse({"tokens": [t.as_json() for t in found]})

    async def create_token(request: Request, who: Identity) -> Response:
        body = await read_json_object(request, max_bytes)
        sp = await asyncio.to_thread(
            accounts.get_service_principal, meta, request.path_params["sp_id"]
        )
        expires = _expiry(body, state.now())
        issued = await asyncio.to_thread(
            accounts.create_service_principal_token,
            meta,
            sp.id,
            _optional_str(body, "name", 128) or "token",
            expires,
        )
        state.audit.record(
            "token_minted",
            actor=who.principal,
            target=f"sp-token:{issued.prefix}",
            surface="admin",
            details={
                "service_principal": principal_key(SERVICE_PRINCIPAL, sp.id),
                "principal_name": sp.name,
            },
        )
        return JSONResponse(
            {
                "id": issued.id,
                "token": issued.value,
                "prefix": issued.prefix,
                "service_principal_id": sp.id,
                "expires_at": expires.isoformat() if expires else None,
            },
            status_code=201,
            headers={"Cache-Control": "no-store"},
        )

    async def revoke_token(request: Request, who: Identity) -> Response:
        await asyncio.to_thread(
            accounts.revoke_service_principal_token,
            meta,
            request.path_params["sp_id"],
            request.path_params["token_id"],
        )
        state.audit.record(
            "token_revoked",
            actor=who.principal,
            target=f"sp-token:{request.path_params['token_id']}",
            surface="admin",
            details={"service_principal": request.path_params["sp_id"]},
        )
        return Response(status_code=204)

    base = "/api/v1/admin"
    return [
        Route(f"{base}/users", admin(list_users), methods=["GET"]),
        Route(f"{base}/users", admin(create_user), methods=["POST"]),
        Route(f"{base}/users/{{user_id}}", admin(update_user), methods=["PATCH"]),
        Route(f"{base}/service-principals", admin(list_sps), methods=["GET"]),
        Route(f"{base}/service-principals", admin(create_sp), methods=["POST"]),
        Route(f"{base}/service-principals/{{sp_id}}", admin(delete_sp), methods=["DELETE"]),
        Route(f"{base}/service-principals/{{sp_id}}/tokens", admin(list_tokens), methods=["GET"]),
        Route(f"{base}/service-principals/{{sp_id}}/tokens", admin(create_token), methods=["POST"]),
        Route(
            f"{base}/service-principals/{{sp_id}}/tokens/{{token_id}}",
            admin(revoke_token),
            methods=["DELETE"],
        ),
    ]
