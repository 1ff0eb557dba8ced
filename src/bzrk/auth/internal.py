"""The internal hop: short-lived EdDSA JWTs the gateway signs and the services verify.

The gateway signs ``{sub, roles, aud=<service>, iss="bzrk-gateway", iat, exp, jti}`` with an
Ed25519 key kept in the data dir; query and ingest verify with the public key and refuse
anything else. ``verify_internal_token`` is the one interface services call.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ISSUER = "bzrk-gateway"
ALGORITHM = "EdDSA"


class InvalidInternalToken(Exception):
    """The internal token is missing, forged, expired or meant for another service."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for, as the gateway vouched."""

    subject: str
    roles: tuple[str, ...]
    kind: str = "user"  # user | service_principal | oauth_client

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


@dataclass(frozen=True, slots=True)
class InternalKeys:
    private_key: Ed25519PrivateKey | None
    public_key: Ed25519PublicKey

    @classmethod
    def load_or_create(cls, data_dir: Path) -> InternalKeys:
        path = data_dir / "internal-signing-key.pem"
        if path.exists():
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            assert isinstance(key, Ed25519PrivateKey)
        else:
            key = Ed25519PrivateKey.generate()
            pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            path.touch(mode=0o600)
            path.write_bytes(pem)
        return cls(key, key.public_key())

    def sign(
        self, principal: Principal, audience: str, ttl_s: int = 60, now: float | None = None
    ) -> str:
        if self.private_key is None:
            raise RuntimeError("these keys can only verify")
        issued = int(now if now is not None else time.time())
        claims = {
            "iss": ISSUER,
            "sub": principal.subject,
            "aud": audience,
            "roles": list(principal.roles),
            "kind": principal.kind,
            "iat": issued,
            "exp": issued + ttl_s,
            "jti": secrets.token_hex(8),
        }
        return jwt.encode(claims, self.private_key, algorithm=ALGORITHM)

    def verify(self, token: str, audience: str, now: float | None = None) -> Principal:
        try:
            claims = jwt.decode(
                token,
                self.public_key,
                algorithms=[ALGORITHM],
                audience=audience,
                issuer=ISSUER,
                options={"require": ["exp", "iat", "sub", "aud", "iss"], "verify_exp": now is None},
            )
        except jwt.PyJWTError as exc:
            raise InvalidInternalToken(str(exc)) from exc
        if now is not None and claims["exp"] <= now:
            raise InvalidInternalToken("Signature has expired")
        return Principal(claims["sub"], tuple(claims.get("roles", ())), claims.get("kind", "user"))


def verify_internal_token(
    keys: InternalKeys, authorization: str | None, audience: str
) -> Principal:
    """Check an ``Authorization: Bearer <internal JWT>`` value for ``audience``."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise InvalidInternalToken("missing bearer token")
    return keys.verify(authorization[7:].strip(), audience)
