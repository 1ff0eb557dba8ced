"""The OAuth 2.1 authorization server and device flow over HTTP.

Endpoints: RFC 8414 and RFC 9728 metadata, ``/oauth/register`` (RFC 7591),
``/oauth/authorize`` (login + consent, PKCE S256, ``iss`` in the response per RFC 9207),
``/oauth/token`` (authorization_code, refresh_token, device_code), ``/oauth/revoke``
(RFC 7009), ``/oauth/device/code`` and the ``/device`` approval page (RFC 8628). The protocol
decisions live in :mod:`bzrk.auth`; this module parses, renders and answers.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from bzrk.auth import device, grants, oauth
from bzrk.auth.bearer import Identity
from bzrk.auth.errors import OAuthError
from bzrk.auth.internal import USER, principal_key
from bzrk.auth.tokens import shown
from bzrk.gateway import metadata_documents, pages
from bzrk.gateway.authn import csrf_ok, session_identity
from bzrk.gateway.session_routes import login_page, login_redirect_target
from bzrk.gateway.state import GatewayState, client_ip, read_form, read_json_object

log = logging.getLogger("bzrk.gateway.oauth")

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
AUTHORIZE_PARAMS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "state",
    "scope",
    "code_challenge",
    "code_challenge_method",
    "resource",
    "prompt",
)


def oauth_error(exc: OAuthError) -> JSONResponse:
    return JSONResponse(exc.as_json(), status_code=exc.status, headers=NO_STORE)


def with_params(uri: str, params: dict[str, str | None]) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return uri + ("&" if urlsplit(uri).query else "?") + query


def routes(state: GatewayState) -> list[Route]:
    limits, lifetimes, rates = state.config.limits, state.config.lifetimes, state.config.rates
    meta = state.ctx.meta

    def as_metadata() -> dict[str, object]:
        base = state.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/oauth/authorize",
            "token_endpoint": f"{base}/oauth/token",
            "registration_endpoint": f"{base}/oauth/register",
            "revocation_endpoint": f"{base}/oauth/revoke",
            "device_authorization_endpoint": f"{base}/oauth/device/code",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", device.GRANT_TYPE],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": list(oauth.SUPPORTED_SCOPES),
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": True,
        }

    async def as_metadata_route(_request: Request) -> Response:
        return JSONResponse(as_metadata(), headers={"Cache-Control": "public, max-age=3600"})

    async def protected_resource(_request: Request) -> Response:
        return JSONResponse(
            {
                "resource": state.mcp_resource,
                "authorization_servers": [state.issuer],
                "scopes_supported": list(oauth.SUPPORTED_SCOPES),
                "bearer_methods_supported": ["header"],
                "resource_name": "bzrk MCP server",
            },
            headers={"Cache-Control": "public, max-age=3600"},
        )

    async def register(request: Request) -> Response:
        limited = state.throttle("register-ip", client_ip(request.scope), rates.register_ip)
        if limited is not None:
            return limited
        try:
            body = await read_json_object(request, limits.max_form_bytes)
            registered = await asyncio.to_thread(oauth.register_client, meta, body, state.now())
        except OAuthError as exc:
            return oauth_error(exc)
        return JSONResponse(registered, status_code=201, headers=NO_STORE)

    async def fetch_metadata_document(client_id: str) -> oauth.Client:
        client = await metadata_documents.fetch(
            client_id,
            limits,
            private_documents_allowed=state.config.allow_private_metadata_documents,
            resolver=state.resolver,
        )
        await asyncio.to_thread(oauth.remember_metadata_document, meta, client, state.now())
        return client

    async def resolve_client(client_id: str) -> oauth.Client | None:
        client = await asyncio.to_thread(oauth.find_client, meta, client_id, state.now())
        if client is None and oauth.is_metadata_document_url(client_id):
            client = await fetch_metadata_document(client_id)
        return client

    def error_page(exc: OAuthError) -> Response:
        return pages.page(
            "Authorization failed",
            f"<p>{pages.escape(exc.description or exc.error)}</p>",
            status=400,
        )

    def redirect_error(exc: oauth.RedirectableError) -> Response:
        params = {
            "error": exc.error,
            "error_description": exc.description,
            "state": exc.state,
            "iss": state.issuer,
        }
        return RedirectResponse(with_params(exc.redirect_uri, params), status_code=302)

    async def validated(params: dict[str, str]) -> oauth.AuthorizationRequest:
        client = await resolve_client(params.get("client_id", ""))
        return oauth.validate_authorization_request(client, params, state.mcp_resource)

    async def authorize_get(request: Request) -> Response:
        params = {k: request.query_params[k] for k in AUTHORIZE_PARAMS if k in request.query_params}
        try:
            auth_request = await validated(params)
        except oauth.RedirectableError as exc:
            return redirect_error(exc)
        except OAuthError as exc:
            return error_page(exc)
        identity = await session_identity(meta, request.scope, state.now())
        if identity is None:
            return login_page(state, login_redirect_target("/oauth/authorize", params))
        known = await asyncio.to_thread(
            oauth.consented_hosts, meta, identity.account_id, auth_request.client.client_id
        )
        host = oauth.redirect_host(auth_request.redirect_uri)
        if host in known and params.get("prompt") != "consent":
            # Allowed before for this very client and redirect host: no second question.
            return await approve(auth_request, identity, remembered=True)
        return consent(auth_request, identity, params, known)

    def consent(
        auth_request: oauth.AuthorizationRequest,
        identity: Identity,
        params: dict[str, str],
        known: tuple[str, ...],
    ) -> Response:
        client = auth_request.client
        fields = {**params, "csrf_token": identity.csrf_token or ""}
        view = pages.ConsentView(
            client_name=client.client_name,
            client_id=client.client_id,
            verified_by=(
                client.client_id if oauth.is_metadata_document_url(client.client_id) else None
            ),
            redirect_uri=auth_request.redirect_uri,
            redirect_host=oauth.redirect_host(auth_request.redirect_uri),
            known_hosts=known,
            scope=auth_request.scope,
            username=identity.principal.name,
        )
        return pages.page("Allow access?", pages.consent_form("/oauth/authorize", view, fields))

    async def approve(
        auth_request: oauth.AuthorizationRequest, identity: Identity, *, remembered: bool
    ) -> Response:
        now = state.now()
        if not remembered:
            await asyncio.to_thread(
                oauth.remember_consent, meta, identity.account_id, auth_request, now
            )
        code = await asyncio.to_thread(
            oauth.issue_code,
            meta,
            auth_request,
            identity.account_id,
            now,
            lifetimes.authorization_code_s,
        )
        state.audit.record(
            "consent",
            reason="remembered" if remembered else "allowed",
            actor=identity.principal,
            target=auth_request.client.client_id,
            surface="oauth",
            details={"redirect_host": oauth.redirect_host(auth_request.redirect_uri)},
        )
        target = with_params(
            auth_request.redirect_uri,
            {"code": code, "state": auth_request.state, "iss": state.issuer},
        )
        return RedirectResponse(target, status_code=302, headers=NO_STORE)

    async def authorize_post(request: Request) -> Response:
        form = await read_form(request, limits.max_form_bytes)
        params = {k: form[k] for k in AUTHORIZE_PARAMS if k in form}
        identity = await session_identity(meta, {**request.scope, "method": "GET"}, state.now())
        if identity is None:
            return login_page(state, login_redirect_target("/oauth/authorize", params), status=401)
        if not csrf_ok(identity, form.get("csrf_token")):
            return pages.page("Authorization failed", "<p>The form expired; try again.</p>", 403)
        try:
            auth_request = await validated(params)
        except oauth.RedirectableError as exc:
            return redirect_error(exc)
        except OAuthError as exc:
            return error_page(exc)
        if form.get("decision") != "approve":
            state.audit.record(
                "consent",
                outcome="refused",
                reason="denied",
                actor=identity.principal,
                target=auth_request.client.client_id,
                surface="oauth",
            )
            denied = oauth.RedirectableError(
                "access_denied",
                "the user denied access",
                auth_request.redirect_uri,
                auth_request.state,
            )
            return redirect_error(denied)
        return await approve(auth_request, identity, remembered=False)

    def client_id_of(request: Request, form: dict[str, str]) -> str:
        if form.get("client_id"):
            return form["client_id"]
        # client_secret_basic from a client that thinks it has a secret: take the id, ignore it.
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(auth[6:].strip()).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return ""
            return decoded.partition(":")[0]
        return ""

    async def token(request: Request) -> Response:
        limited = state.throttle("token-ip", client_ip(request.scope), rates.token_ip)
        if limited is not None:
            return limited
        form = await read_form(request, limits.max_form_bytes)
        client_id = client_id_of(request, form)
        grant_type = form.get("grant_type", "")
        now = state.now()
        try:
            if not client_id:
                raise OAuthError("invalid_client", "client_id is required", status=401)
            if grant_type == "authorization_code":
                pair = await asyncio.to_thread(
                    oauth.exchange_code, meta, {**form, "client_id": client_id}, now, lifetimes
                )
            elif grant_type == "refresh_token":
                pair = await asyncio.to_thread(
                    grants.refresh,
                    meta,
                    form.get("refresh_token", ""),
                    client_id=client_id,
                    resource=form.get("resource") or None,
                    now=now,
                    lifetimes=lifetimes,
                )
            elif grant_type == device.GRANT_TYPE:
                pair = await asyncio.to_thread(
                    device.poll, meta, form.get("device_code", ""), client_id, now, lifetimes
                )
            else:
                raise OAuthError(
                    "unsupported_grant_type", f"grant_type {grant_type!r} is not supported"
                )
        except OAuthError as exc:
            if exc.error not in ("authorization_pending", "slow_down"):
                log.info("token request refused: %s (%s)", exc.error, grant_type or "no grant_type")
                state.audit.record(
                    "request_refused",
                    outcome="refused",
                    reason=exc.error,
                    target=client_id[:200],
                    surface="oauth",
                    address=client_ip(request.scope),
                    details={"grant_type": grant_type[:64]},
                )
            return oauth_error(exc)
        state.audit.record(
            "token_minted",
            actor_key=principal_key(USER, pair.user_id) if pair.user_id else "",
            target=client_id[:200],
            surface="oauth",
            address=client_ip(request.scope),
            details={"grant_type": grant_type[:64], "token": shown(pair.access_token)},
        )
        return JSONResponse(pair.as_json(), headers=NO_STORE)

    async def revoke(request: Request) -> Response:
        limited = state.throttle("token-ip", client_ip(request.scope), rates.token_ip)
        if limited is not None:
            return limited
        form = await read_form(request, limits.max_form_bytes)
        value = form.get("token", "")
        if not value:
            return oauth_error(OAuthError("invalid_request", "token is required"))
        client_id = client_id_of(request, form) or None
        await asyncio.to_thread(
            grants.revoke_token, meta, value, client_id=client_id, now=state.now()
        )
        state.audit.record(
            "token_revoked",
            target=(client_id or "")[:200],
            surface="oauth",
            address=client_ip(request.scope),
            details={"token": shown(value)},
        )
        return Response(status_code=200, headers=NO_STORE)

    async def device_code(request: Request) -> Response:
        limited = state.throttle("device-ip", client_ip(request.scope), rates.device_ip)
        if limited is not None:
            return limited
        form = await read_form(request, limits.max_form_bytes)
        try:
            started = await asyncio.to_thread(
                device.start,
                meta,
                form.get("client_id", ""),
                form.get("scope", ""),
                state.now(),
                lifetimes,
            )
        except OAuthError as exc:
            return oauth_error(exc)
        verification = f"{state.base_url}/device"
        return JSONResponse(
            {
                "device_code": started.device_code,
                "user_code": started.user_code,
                "verification_uri": verification,
                "verification_uri_complete": f"{verification}?user_code={started.user_code}",
                "expires_in": started.expires_in,
                "interval": started.interval,
            },
            headers=NO_STORE,
        )

    async def device_get(request: Request) -> Response:
        user_code = request.query_params.get("user_code", "")[:32]
        identity = await session_identity(meta, request.scope, state.now())
        if identity is None:
            params = {"user_code": user_code} if user_code else {}
            return login_page(state, login_redirect_target("/device", params))
        fields = {"csrf_token": identity.csrf_token or ""}
        return pages.page("Approve bzrk login", pages.device_form(user_code, fields))

    async def device_post(request: Request) -> Response:
        limited = state.throttle("device-ip", client_ip(request.scope), rates.device_ip)
        if limited is not None:
            return limited
        form = await read_form(request, limits.max_form_bytes)
        identity = await session_identity(meta, {**request.scope, "method": "GET"}, state.now())
        if identity is None:
            return login_page(state, "/device", status=401)
        if not csrf_ok(identity, form.get("csrf_token")):
            return pages.page("Approve bzrk login", "<p>The form expired; try again.</p>", 403)
        approve = form.get("decision") == "approve"
        user_code = form.get("user_code", "")[:32]
        decided = await asyncio.to_thread(
            device.decide, meta, user_code, identity.account_id, approve, state.now()
        )
        fields = {"csrf_token": identity.csrf_token or ""}
        if not decided:
            message = "That code is unknown, expired or already used."
            return pages.page("Approve bzrk login", pages.device_form("", fields, message), 400)
        done = "Approved: return to your terminal." if approve else "Denied."
        return pages.page("Approve bzrk login", f"<p>{done}</p>")

    return [
        Route("/.well-known/oauth-authorization-server", as_metadata_route, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource", protected_resource, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource/mcp", protected_resource, methods=["GET"]),
        Route("/oauth/register", register, methods=["POST"]),
        Route("/oauth/authorize", authorize_get, methods=["GET"]),
        Route("/oauth/authorize", authorize_post, methods=["POST"]),
        Route("/oauth/token", token, methods=["POST"]),
        Route("/oauth/revoke", revoke, methods=["POST"]),
        Route("/oauth/device/code", device_code, methods=["POST"]),
        Route("/device", device_get, methods=["GET"]),
        Route("/device", device_post, methods=["POST"]),
    ]
