"""Browser sign-in for the UI and the gateway's own pages: ``/auth/login``, ``/auth/logout``,
``/api/v1/me``.

Login forms are CSRF-protected with a double-submit cookie (there is no session yet); a
session's own CSRF token protects everything after. ``next`` only ever points into this site.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from bzrk.auth import accounts, audit, sessions
from bzrk.auth.internal import USER, principal_key
from bzrk.gateway import pages
from bzrk.gateway.authn import (
    ADMIN,
    SESSION_COOKIE,
    Unauthenticated,
    authenticate,
    challenge,
    cookie,
    csrf_ok,
    session_identity,
)
from bzrk.gateway.state import GatewayState, client_ip, is_json, read_form, read_json_object

LOGIN_CSRF_COOKIE = "bzrk_login_csrf"


def safe_next(value: str | None) -> str:
    """A local path to go to after login; anything pointing off-site becomes ``/``."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def login_page(
    state: GatewayState, next_path: str, *, error: str = "", status: int = 200
) -> Response:
    """The sign-in form, with a fresh double-submit CSRF pair."""
    token = secrets.token_urlsafe(24)
    form = pages.login_form(
        "/auth/login", {"next": safe_next(next_path), "login_csrf": token}, error
    )
    response = pages.page("Sign in to bzrk", form, status)
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        token,
        max_age=3600,
        path="/auth/login",
        httponly=True,
        samesite="strict",
        secure=state.secure_cookies,
    )
    return response


def set_session_cookie(state: GatewayState, response: Response, value: str) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        value,
        max_age=state.config.lifetimes.session_s,
        path="/",
        httponly=True,
        samesite="lax",
        secure=state.secure_cookies,
    )


def routes(state: GatewayState) -> list[Route]:
    limits = state.config.limits

    async def login_get(request: Request) -> Response:
        return login_page(state, request.query_params.get("next", "/"))

    async def login_post(request: Request) -> Response:
        as_json = is_json(request)
        if as_json:
            # A JSON body cannot be sent cross-site without a CORS preflight: no CSRF token needed.
            data = {
                k: str(v)
                for k, v in (await read_json_object(request, limits.max_form_bytes)).items()
            }
        else:
            data = await read_form(request, limits.max_form_bytes)
            expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
            if not expected or not hmac.compare_digest(
                expected.encode(), data.get("login_csrf", "").encode()
            ):
                return login_page(
                    state, data.get("next", "/"), error="The form expired; try again.", status=400
                )
        username, password = data.get("username", ""), data.get("password", "")
        address = client_ip(request.scope)
        pair = f"{username.lower()}\n{address}"
        rates = state.config.rates
        now = state.clock()
        # Per address, and per username *and* address: never per username alone, so guessing
        # from elsewhere cannot lock a user out. Past the burst, wait instead of refusing.
        buckets = (("login-ip", address, rates.login_ip), ("login-pair", pair, rates.login_pair))
        waits = [
            state.limiter.reserve(name, key, rule, now, rates.login_max_delay_s)
            for name, key, rule in buckets
        ]
        if None in waits:
            for (name, key, rule), wait in zip(buckets, waits, strict=True):
                if wait is not None:  # the other bucket's booking is not spent
                    state.limiter.refund(name, key, rule, now)
            state.audit.record(
                "sign_in",
                outcome=audit.REFUSED,
                reason="rate_limited",
                actor_name=username[:256],
                surface="ui",
                address=address,
            )
            return state.too_many(rates.login_max_delay_s)
        delay = max(w for w in waits if w is not None)
        if delay > 0:
            await state.sleep(delay)
        user = None
        if 0 < len(username) <= 256 and 0 < len(password) <= 1024:
            user = await asyncio.to_thread(
                accounts.authenticate_password, state.ctx.meta, username, password
            )
        if user is None:
            state.audit.record(
                "sign_in",
                outcome=audit.REFUSED,
                reason="wrong_password",
                actor_name=username[:256],
                surface="ui",
                address=address,
                details={"delayed_s": round(delay, 1)} if delay else None,
            )
            if as_json:
                return JSONResponse(
                    {
                        "error": {
                            "code": "InvalidCredentials",
                            "message": "wrong username or password",
                        }
                    },
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="bzrk"'},
                )
            return login_page(
                state, data.get("next", "/"), error="Wrong username or password.", status=401
            )
        # The buckets guard against guessing: a right password does not count against them
        # (someone signing in from several tabs or scripts is not slowed down).
        for name, key, rule in buckets:
            state.limiter.refund(name, key, rule, state.clock())
        state.audit.record(
            "sign_in",
            actor_key=principal_key(USER, user.id),
            actor_name=user.username,
            surface="ui",
            address=address,
        )
        value, csrf = await asyncio.to_thread(
            sessions.create, state.ctx.meta, user.id, state.now(), state.config.lifetimes.session_s
        )
        response: Response
        if as_json:
            response = JSONResponse({"user": user.as_json(), "csrf_token": csrf})
        else:
            response = RedirectResponse(safe_next(data.get("next")), status_code=303)
            response.delete_cookie(LOGIN_CSRF_COOKIE, path="/auth/login")
        set_session_cookie(state, response, value)
        return response

    async def logout(request: Request) -> Response:
        value = cookie(request.scope, SESSION_COOKIE)
        if value:
            identity = await session_identity(state.ctx.meta, _as_safe(request), state.now())
            presented = request.headers.get("x-csrf-token")
            form_type = "application/x-www-form-urlencoded"
            if presented is None and request.headers.get("content-type", "").startswith(form_type):
                presented = (await read_form(request, limits.max_form_bytes)).get("csrf_token")
            if identity is None or not csrf_ok(identity, presented):
                return JSONResponse(
                    {"error": {"code": "CsrfFailed", "message": "missing or wrong CSRF token"}},
                    status_code=403,
                )
            await asyncio.to_thread(sessions.end, state.ctx.meta, value, state.now())
            state.audit.record(
                "sign_out",
                actor=identity.principal,
                surface="ui",
                address=client_ip(request.scope),
            )
        response = Response(status_code=204)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def me(request: Request) -> Response:
        try:
            identity = await authenticate(
                state.ctx.meta, request.scope, ADMIN, state.mcp_resource, state.now()
            )
        except Unauthenticated as exc:
            return challenge(exc.presented)
        body: dict[str, object] = {
            # The identity is the key; subject and name are the display name.
            "key": identity.principal.key,
            "subject": identity.principal.name,
            "name": identity.principal.name,
            "kind": identity.principal.kind,
            "roles": list(identity.principal.roles),
            "credential": identity.credential,
        }
        if identity.principal.kind == "user":
            user = await asyncio.to_thread(accounts.get_user, state.ctx.meta, identity.account_id)
            body["user"] = user.as_json()
        if identity.csrf_token is not None:
            body["csrf_token"] = identity.csrf_token
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return [
        Route("/auth/login", login_get, methods=["GET"]),
        Route("/auth/login", login_post, methods=["POST"]),
        Route("/auth/logout", logout, methods=["POST"]),
        Route("/api/v1/me", me, methods=["GET"]),
    ]


def _as_safe(request: Request) -> dict[str, object]:
    """The request's scope as a GET, to look the session up before checking CSRF ourselves."""
    return {**request.scope, "method": "GET"}


def login_redirect_target(path: str, params: dict[str, str]) -> str:
    return path + ("?" + urlencode(params) if params else "")
