"""Scripted logins against a gateway: browser session, device flow, OAuth code + PKCE."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx

REDIRECT_URI = "http://127.0.0.1:33418/callback"


@dataclass
class Session:
    cookie: str
    csrf: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Cookie": f"bzrk_session={self.cookie}"}


async def login(c: httpx.AsyncClient, username: str, password: str) -> Session:
    r = await c.post("/auth/login", json={"username": username, "password": password})
    assert r.status_code == 200, r.text
    return Session(r.cookies["bzrk_session"], r.json()["csrf_token"])


def hidden_fields(html: str) -> dict[str, str]:
    return {
        unescape(m.group(1)): unescape(m.group(2))
        for m in re.finditer(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', html)
    }


async def device_login(c: httpx.AsyncClient, session: Session) -> dict[str, object]:
    """``bzrk login``'s dance: device code, approval on /device, one poll."""
    started = (await c.post("/oauth/device/code", data={"client_id": "bzrk-cli"})).json()
    page = await c.get(f"/device?user_code={started['user_code']}", headers=session.headers)
    fields = hidden_fields(page.text)
    approved = await c.post(
        "/device",
        data={**fields, "user_code": started["user_code"], "decision": "approve"},
        headers=session.headers,
    )
    assert approved.status_code == 200, approved.text
    r = await c.post(
        "/oauth/token",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": started["device_code"],
            "client_id": "bzrk-cli",
        },
    )
    assert r.status_code == 200, r.text
    return r.json()


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def register_client(c: httpx.AsyncClient, redirect_uri: str = REDIRECT_URI) -> str:
    r = await c.post(
        "/oauth/register",
        json={
            "client_name": "test host",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        },
    )
    assert r.status_code == 201, r.text
    return r.json()["client_id"]


async def authorize(
    c: httpx.AsyncClient, session: Session, client_id: str, challenge: str, **extra: str
) -> httpx.Response:
    """GET /oauth/authorize with the session, then approve the consent form."""
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "st-123",
        "scope": "mcp:read",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }
    page = await c.get("/oauth/authorize", params=params, headers=session.headers)
    if page.status_code != 200:
        return page
    fields = hidden_fields(page.text)
    return await c.post(
        "/oauth/authorize", data={**fields, "decision": "approve"}, headers=session.headers
    )


def redirect_params(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def oauth_login(
    c: httpx.AsyncClient, session: Session, base: str
) -> tuple[str, dict[str, object]]:
    """Register, authorize, exchange: ``(client_id, token response)``."""
    client_id = await register_client(c)
    verifier, challenge = pkce_pair()
    params = redirect_params(
        await authorize(c, session, client_id, challenge, resource=f"{base}/mcp")
    )
    r = await c.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
            "client_id": client_id,
            "resource": f"{base}/mcp",
        },
    )
    assert r.status_code == 200, r.text
    return client_id, r.json()
