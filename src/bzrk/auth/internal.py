"""The internal hop: short-lived EdDSA JWTs the gateway signs and the services verify.

The gateway signs ``{sub=<principal key>, name, roles, kind, aud=<service>, iss, iat, exp,
jti}`` with an Ed25519 key kept in the data dir; query and ingest verify with the public key and
refuse anything else. ``verify_internal_token`` is the one interface services call.
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


USER, SERVICE_PRINCIPAL, INTERNAL = "user", "service_principal", "internal"
# A principal's key is ``<prefix>:<id>``: what ownership, grants, runs and audit records name.
KEY_PREFIXES = {USER: "user", SERVICE_PRINCIPAL: "sp", INTERNAL: "internal"}
_KINDS_BY_PREFIX = {prefix: kind for kind, prefix in KEY_PREFIXES.items()}


def principal_key(kind: str, principal_id: str) -> str:
    """``user:<id>``, ``sp:<id>`` or ``internal:<id>``."""
    return f"{KEY_PREFIXES[kind]}:{principal_id}"


def parse_key(key: str) -> tuple[str, str]:
    """``(kind, id)`` of a principal key; ``ValueError`` for anything else."""
    prefix, sep, principal_id = key.partition(":")
    if not sep or not principal_id or prefix not in _KINDS_BY_PREFIX:
        raise ValueError(f"not a principal key: {key!r} (expected user:<id> or sp:<id>)")
    return _KINDS_BY_PREFIX[prefix], principal_id


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for, as the gateway vouched.

    Identity is the kind and the id (:attr:`key`, e.g. ``user:0197…``); ``name`` (a username
    or service-principal name) is for display only, since a user and a service principal may
    share one.
    """

    kind: str  # user | service_principal | internal
    id: str
    name: str = ""
    roles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KEY_PREFIXES or not self.id:
            raise ValueError(f"a principal needs a known kind and an id, not {self.kind!r}")

    @property
    def key(self) -> str:
        return principal_key(self.kind, self.id)

    @property
    def display_name(self) -> str:
        return self.name or self.key

    @property
    def is_admin(self) -> bool:
        """Cluster admin (the ``admin`` role): every database, every admin operation."""
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
            "sub": principal.key,
            "name": principal.name,
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
        try:
            kind, principal_id = parse_key(str(claims["sub"]))
        except ValueError as exc:
            raise InvalidInternalToken(str(exc)) from exc
        return Principal(
            kind, principal_id, str(claims.get("name", "")), tuple(claims.get("roles", ()))
        )


def verify_internal_token(
    keys: InternalKeys, authorization: str | None, audience: str
) -> Principal:
    """Check an ``Authorization: Bearer <internal JWT>`` value for ``audience``."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise InvalidInternalToken("missing bearer token")
    return keys.verify(authorization[7:].strip(), audience)
