"""Talking to the gateway over HTTP: bearer tokens (given, stored, refreshed) and JSON calls.

Every client command holds one :class:`Gateway`. Its token is ``--token``/``BZRK_TOKEN`` when
given, else the profile's stored login, refreshed silently with the refresh token when it is
about to expire or the gateway refuses it.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from bzrk.cli.credentials import StoredLogin, TokenStore
from bzrk.cli.errors import AuthError, CliError, token_refused, transport_reason
from bzrk.cli.profiles import Connection

CLIENT_ID = "bzrk-cli"
USER_AGENT = "bzrk-cli"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


def error_message(response: httpx.Response) -> str:
    """The gateway's error text: ``{"error": {"message"}}``, OAuth ``error_description``, or text."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if body.get("error_description"):
            return str(body["error_description"])
        if isinstance(error, str):
            return error
        if body.get("message"):
            return str(body["message"])
    return response.text[:300]


class Gateway:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.store = TokenStore(connection.credential_key)
        self._http = httpx.Client(
            base_url=connection.endpoint, timeout=TIMEOUT, headers={"user-agent": USER_AGENT}
        )
        self._login: StoredLogin | None = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- tokens ---------------------------------------------------------------------------

    @property
    def uses_stored_login(self) -> bool:
        return self.connection.explicit_token is None

    def token(self) -> str:
        if self.connection.explicit_token:
            return self.connection.explicit_token
        login = self._login or self.store.load()
        if login is None:
            raise AuthError("not logged in: run `bzrk login` (or pass --token / set BZRK_TOKEN)")
        if login.expired():
            login = self.refresh(login)
        self._login = login
        return login.access_token

    def refresh(self, login: StoredLogin | None = None) -> StoredLogin:
        login = login or self._login or self.store.load()
        if login is None or not login.refresh_token:
            raise AuthError("login expired: run `bzrk login` again")
        response = self.post_form(
            "/oauth/token",
            {
                "grant_type": "refresh_token",
                "refresh_token": login.refresh_token,
                "client_id": CLIENT_ID,
            },
        )
        if response.status_code != 200:
            raise AuthError("Refresh token rejected. Run `bzrk login` again.")
        fresh = stored_login(self.connection.endpoint, response.json())
        self.store.save(fresh)
        self._login = fresh
        return fresh

    # --- requests -------------------------------------------------------------------------

    def post_form(self, path: str, form: dict[str, str]) -> httpx.Response:
        try:
            return self._http.post(path, data=form)
        except httpx.HTTPError as exc:
            raise unreachable(self.connection.endpoint, exc) from None

    def get_anonymous(self, path: str) -> httpx.Response:
        try:
            return self._http.get(path)
        except httpx.HTTPError as exc:
            raise unreachable(self.connection.endpoint, exc) from None

    def call(self, method: str, path: str, json: Any = None) -> Any:
        """An authenticated JSON call; refreshes once on 401; errors become :class:`CliError`."""
        response = self._send(method, path, json)
        if response.status_code == 401 and self.uses_stored_login:
            self.refresh()
            response = self._send(method, path, json)
        endpoint = self.connection.endpoint
        if response.status_code == 401:
            raise token_refused(endpoint, self.connection.token_source)
        if response.status_code == 403:
            raise AuthError(
                f"the gateway at {endpoint} refused: permission denied: "
                f"{error_message(response)} (HTTP 403)"
            )
        if response.status_code in (502, 503, 504):
            raise CliError(
                f"the gateway at {endpoint} could not reach the service behind it: "
                f"{error_message(response)} (HTTP {response.status_code})"
            )
        if response.status_code >= 400:
            raise CliError(f"{error_message(response)} (HTTP {response.status_code})")
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise CliError(f"unexpected answer from {path}: {response.text[:200]}") from None

    def _send(self, method: str, path: str, json: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.token()}"}
        try:
            return self._http.request(method, path, json=json, headers=headers)
        except httpx.HTTPError as exc:
            raise unreachable(self.connection.endpoint, exc) from None


def unreachable(endpoint: str, exc: Exception) -> CliError:
    return CliError(
        f"cannot reach the gateway at {endpoint}: {transport_reason(str(exc) or type(exc).__name__)}"
    )


def stored_login(endpoint: str, body: dict[str, Any]) -> StoredLogin:
    try:
        return StoredLogin(
            endpoint=endpoint,
            access_token=str(body["access_token"]),
            refresh_token=body.get("refresh_token"),
            expires_at=time.time() + float(body.get("expires_in") or 3600),
        )
    except (KeyError, TypeError, ValueError):
        raise CliError("the gateway answered the token request without an access token") from None
