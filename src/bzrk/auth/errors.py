"""The auth package's exception tree; the gateway translates it to HTTP at its boundary.

``AuthError``
  ├─ ``InvalidToken``   – a bearer token is missing, malformed, unknown, expired or revoked (401)
  ├─ ``WrongAudience``  – a valid token presented on a surface it was not issued for (401)
  ├─ ``Forbidden``      – authenticated, but the role does not allow the operation (403)
  └─ ``OAuthError``     – an OAuth/device-flow protocol error with an RFC 6749 ``error`` code
"""

from __future__ import annotations


class AuthError(Exception):
    """Base of every authentication and authorization failure."""


class InvalidToken(AuthError):
    """The bearer token does not authenticate anyone (the reason is for logs, not clients)."""


class WrongAudience(InvalidToken):
    """The token is valid but was issued for another resource."""


class Forbidden(AuthError):
    """The caller is known but may not do this."""


class OAuthError(AuthError):
    """An OAuth 2.1 / RFC 8628 error response: ``{"error": code, "error_description": ...}``."""

    def __init__(self, error: str, description: str = "", status: int = 400) -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error
        self.description = description
        self.status = status

    def as_json(self) -> dict[str, str]:
        body = {"error": self.error}
        if self.description:
            body["error_description"] = self.description
        return body
