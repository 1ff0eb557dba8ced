"""OAuth 2.1 authorization-server logic for MCP hosts: clients, authorization codes, PKCE.

Clients are public (``token_endpoint_auth_method: none``) and come from Dynamic Client
Registration (RFC 7591) or, when ``client_id`` is an https URL, from a Client ID Metadata
Document the gateway fetches (:func:`parse_client_metadata_document` checks it). Only the
authorization-code grant with PKCE S256 exists; redirect URIs match exactly; the resource
(RFC 8707) must be this gateway's ``/mcp`` URL. No web framework is imported here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from bzrk.auth import grants, tokens
from bzrk.auth.bearer import canonical_resource
from bzrk.auth.errors import OAuthError
from bzrk.auth.timestamps import aware, is_past
from bzrk.meta import schema
from bzrk.meta.store import MetaStore, utcnow

SUPPORTED_SCOPES = ("mcp:read",)
DEFAULT_SCOPE = "mcp:read"
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
CIMD_CACHE_S = 3600
_VERIFIER = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")
_CHALLENGE = re.compile(r"^[A-Za-z0-9\-_]{43}$")
_FORBIDDEN_SCHEMES = {"javascript", "data", "file", "vbscript", "about", "blob"}


@dataclass(frozen=True, slots=True)
class Client:
    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    metadata: dict[str, Any]


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_private_address(host: str | None) -> bool:
    """True for ``localhost`` and IP literals that are not globally routable."""
    if not host:
        return True
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return not ipaddress.ip_address(host.strip("[]")).is_global
    except ValueError:
        return False


def _check_redirect_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS:
        raise OAuthError("invalid_redirect_uri", "redirect_uris must be non-empty strings")
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if not scheme or parts.fragment:
        raise OAuthError("invalid_redirect_uri", f"not an absolute URI without fragment: {uri}")
    if scheme in _FORBIDDEN_SCHEMES:
        raise OAuthError("invalid_redirect_uri", f"scheme not allowed: {scheme}")
    if scheme == "http" and not is_loopback_host(parts.hostname):
        raise OAuthError("invalid_redirect_uri", "http redirect URIs must be loopback")
    if scheme == "https" and not parts.hostname:
        raise OAuthError("invalid_redirect_uri", f"no host in {uri}")
    return uri


def _redirect_uris(metadata: dict[str, Any]) -> tuple[str, ...]:
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        raise OAuthError("invalid_redirect_uri", "redirect_uris: a list of 1 to 10 URIs")
    return tuple(_check_redirect_uri(u) for u in uris)


def _check_grant_types(metadata: dict[str, Any]) -> None:
    grant_types = metadata.get("grant_types", ["authorization_code"])
    response_types = metadata.get("response_types", ["code"])
    if not isinstance(grant_types, list) or not set(grant_types) <= {
        "authorization_code",
        "refresh_token",
    }:
        raise OAuthError(
            "invalid_client_metadata", "grant_types: authorization_code, refresh_token"
        )
    if not isinstance(response_types, list) or not set(response_types) <= {"code"}:
        raise OAuthError("invalid_client_metadata", "response_types: code only")


def register_client(meta: MetaStore, metadata: dict[str, Any], now: datetime) -> dict[str, Any]:
    """RFC 7591 registration of a public client; returns the registration response."""
    redirect_uris = _redirect_uris(metadata)
    _check_grant_types(metadata)
    name = metadata.get("client_name", "")
    if not isinstance(name, str) or len(name) > 200:
        raise OAuthError("invalid_client_metadata", "client_name: a string of at most 200 chars")
    scope = metadata.get("scope", DEFAULT_SCOPE)
    if not isinstance(scope, str):
        raise OAuthError("invalid_client_metadata", "scope must be a string")
    client_id = "bzrkc_" + secrets.token_urlsafe(18)
    stored = {
        "client_name": name,
        "redirect_uris": list(redirect_uris),
        "grant_types": metadata.get("grant_types", ["authorization_code", "refresh_token"]),
        "response_types": ["code"],
        # Every client is public: PKCE is the proof, there is no secret to leak.
        "token_endpoint_auth_method": "none",
        "scope": " ".join(s for s in scope.split() if s in SUPPORTED_SCOPES) or DEFAULT_SCOPE,
    }
    for key in ("client_uri", "logo_uri", "application_type", "software_id", "software_version"):
        if isinstance(metadata.get(key), str) and len(metadata[key]) <= MAX_URI_CHARS:
            stored[key] = metadata[key]
    with meta.begin() as conn:
        conn.execute(
            sa.insert(schema.oauth_clients).values(
                client_id=client_id,
                client_name=name,
                redirect_uris=list(redirect_uris),
                client_metadata=stored,
                created_at=now,
            )
        )
    return {"client_id": client_id, "client_id_issued_at": int(now.timestamp()), **stored}


def is_metadata_document_url(client_id: str) -> bool:
    """CIMD client ids are URLs (https; http only on loopback, for tests and dev)."""
    parts = urlsplit(client_id)
    if parts.scheme == "https":
        return bool(parts.hostname) and parts.path not in ("", "/")
    return parts.scheme == "http" and is_loopback_host(parts.hostname)


def parse_client_metadata_document(client_id: str, document: object) -> Client:
    """Check a fetched Client ID Metadata Document (its ``client_id`` must be its own URL)."""
    if not isinstance(document, dict):
        raise OAuthError("invalid_client", "client metadata document is not a JSON object")
    if document.get("client_id") != client_id:
        raise OAuthError("invalid_client", "client metadata document names another client_id")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise OAuthError("invalid_client", "only public clients (auth method none) are supported")
    _check_grant_types(document)
    name = document.get("client_name", "")
    return Client(
        client_id, name if isinstance(name, str) else "", _redirect_uris(document), document
    )


def remember_metadata_document(meta: MetaStore, client: Client, now: datetime) -> None:
    with meta.begin() as conn:
        conn.execute(
            sa.delete(schema.oauth_clients).where(
                schema.oauth_clients.c.client_id == client.client_id
            )
        )
        conn.execute(
            sa.insert(schema.oauth_clients).values(
                client_id=client.client_id,
                client_name=client.client_name[:256],
                redirect_uris=list(client.redirect_uris),
                client_metadata={"cimd": True, **client.metadata},
                created_at=now,
            )
        )


def find_client(meta: MetaStore, client_id: str, now: datetime) -> Client | None:
    """A registered client, or a cached metadata document younger than an hour."""
    if not client_id or len(client_id) > 512:
        return None
    t = schema.oauth_clients
    with meta.engine.connect() as conn:
        row = conn.execute(sa.select(t).where(t.c.client_id == client_id)).first()
    if row is None:
        return None
    if row.client_metadata.get("cimd") and is_past(
        aware(row.created_at) + timedelta(seconds=CIMD_CACHE_S), now
    ):
        return None
    return Client(row.client_id, row.client_name, tuple(row.redirect_uris), row.client_metadata)


# -- the authorization request --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    client: Client
    redirect_uri: str
    state: str | None
    code_challenge: str
    resource: str
    scope: str


class RedirectableError(OAuthError):
    """An authorization error the client learns about through its (verified) redirect URI."""

    def __init__(self, error: str, description: str, redirect_uri: str, state: str | None):
        super().__init__(error, description)
        self.redirect_uri = redirect_uri
        self.state = state


def validate_authorization_request(
    client: Client | None, params: dict[str, str], mcp_resource: str
) -> AuthorizationRequest:
    """Check ``/oauth/authorize`` parameters.

    Raises:
        OAuthError: client or redirect URI wrong — show an error page, never redirect.
        RedirectableError: anything else — redirect it to the client with ``error=…``.
    """
    if client is None:
        raise OAuthError("invalid_client", "unknown client_id")
    redirect_uri = params.get("redirect_uri", "")
    if not redirect_uri and len(client.redirect_uris) == 1:
        redirect_uri = client.redirect_uris[0]
    # Exact string match (OAuth 2.1 §2.3.1): no prefix, no normalisation, no wildcard.
    if redirect_uri not in client.redirect_uris:
        raise OAuthError("invalid_request", "redirect_uri is not registered for this client")
    state = params.get("state")

    def fail(error: str, description: str) -> RedirectableError:
        return RedirectableError(error, description, redirect_uri, state)

    if params.get("response_type") != "code":
        raise fail("unsupported_response_type", "only response_type=code is supported")
    if params.get("code_challenge_method") != "S256":
        raise fail("invalid_request", "PKCE with code_challenge_method=S256 is required")
    challenge = params.get("code_challenge", "")
    if not _CHALLENGE.match(challenge):
        raise fail("invalid_request", "code_challenge must be a base64url SHA-256 (43 chars)")
    resource = params.get("resource") or mcp_resource
    if canonical_resource(resource) != canonical_resource(mcp_resource):
        raise fail("invalid_target", "this server issues tokens for its /mcp resource only")
    requested = (params.get("scope") or DEFAULT_SCOPE).split()
    unknown = [s for s in requested if s not in SUPPORTED_SCOPES]
    if unknown:
        raise fail("invalid_scope", f"unsupported scope: {' '.join(unknown)}")
    return AuthorizationRequest(
        client, redirect_uri, state, challenge, mcp_resource, " ".join(requested)
    )


def issue_code(
    meta: MetaStore, request: AuthorizationRequest, user_id: str, now: datetime, ttl_s: int
) -> str:
    code = secrets.token_urlsafe(32)
    with meta.begin() as conn:
        conn.execute(
            sa.insert(schema.authorization_codes).values(
                code_hash=tokens.hash_token(code),
                client_id=request.client.client_id,
                user_id=user_id,
                redirect_uri=request.redirect_uri,
                code_challenge=request.code_challenge,
                resource=request.resource,
                scope=request.scope,
                family_id=secrets.token_hex(16),
                created_at=now,
                expires_at=now + timedelta(seconds=ttl_s),
            )
        )
    return code


def pkce_matches(verifier: str, challenge: str) -> bool:
    if not _VERIFIER.match(verifier):
        return False
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    computed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
    return hmac.compare_digest(computed, challenge)


def exchange_code(
    meta: MetaStore, params: dict[str, str], now: datetime, lifetimes: grants.Lifetimes
) -> grants.TokenPair:
    """The ``authorization_code`` grant: one use, same client and redirect URI, PKCE proven."""
    code = params.get("code", "")
    t = schema.authorization_codes
    with meta.begin() as conn:
        row = conn.execute(sa.select(t).where(t.c.code_hash == tokens.hash_token(code))).first()
        if row is None:
            raise OAuthError("invalid_grant", "unknown authorization code")
        used = conn.execute(
            sa.update(t)
            .where(t.c.code_hash == row.code_hash, t.c.used_at.is_(None))
            .values(used_at=now)
        )
        if used.rowcount == 0:
            # A replayed code: tokens already issued from it are revoked (OAuth 2.1 §4.1.3).
            grants.revoke_family(conn, row.family_id, now)
            replay = True
        else:
            replay = False
    if replay:
        raise OAuthError("invalid_grant", "authorization code already used")
    if is_past(row.expires_at, now):
        raise OAuthError("invalid_grant", "authorization code expired")
    if params.get("client_id") != row.client_id:
        raise OAuthError("invalid_grant", "authorization code was issued to another client")
    if params.get("redirect_uri", "") != row.redirect_uri:
        raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request")
    if not pkce_matches(params.get("code_verifier", ""), row.code_challenge):
        raise OAuthError("invalid_grant", "PKCE code_verifier does not match the code_challenge")
    resource = params.get("resource")
    if resource and canonical_resource(resource) != canonical_resource(row.resource):
        raise OAuthError("invalid_target", "resource does not match the authorization request")
    with meta.begin() as conn:
        return grants.issue_pair(
            conn,
            kind=grants.OAUTH,
            user_id=row.user_id,
            client_id=row.client_id,
            resource=row.resource,
            scope=row.scope,
            now=now,
            lifetimes=lifetimes,
            family_id=row.family_id,
        )


def now_utc() -> datetime:
    return utcnow()


# -- remembered consent ----------------------------------------------------------------------


def redirect_host(uri: str) -> str:
    """Where a redirect URI sends the browser: ``host[:port]``, or ``scheme:`` of a native app."""
    parts = urlsplit(uri)
    return parts.netloc.lower() if parts.netloc else f"{parts.scheme.lower()}:"


def consented_hosts(meta: MetaStore, user_id: str, client_id: str) -> tuple[str, ...]:
    """The redirect hosts ``user_id`` has allowed ``client_id`` to send codes to."""
    t = schema.oauth_consents
    with meta.engine.connect() as conn:
        rows = conn.execute(
            sa.select(t.c.redirect_host)
            .where(t.c.user_id == user_id, t.c.client_id == client_id)
            .order_by(t.c.created_at)
        )
        return tuple(row.redirect_host for row in rows)


def remember_consent(
    meta: MetaStore, user_id: str, request: AuthorizationRequest, now: datetime
) -> None:
    """Record that the user allowed this client with this redirect host (a new host asks again)."""
    t = schema.oauth_consents
    host = redirect_host(request.redirect_uri)[:512]
    with meta.begin() as conn:
        conn.execute(
            sa.delete(t).where(
                t.c.user_id == user_id,
                t.c.client_id == request.client.client_id,
                t.c.redirect_host == host,
            )
        )
        conn.execute(
            sa.insert(t).values(
                user_id=user_id,
                client_id=request.client.client_id,
                redirect_host=host,
                scope=request.scope,
                created_at=now,
            )
        )
