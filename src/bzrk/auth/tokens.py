"""Opaque token formats and how they are stored: ``bzrk_sp_…``, ``ing_…``, CLI and OAuth tokens.

Tokens are random; the store keeps only a SHA-256 hash and a short display prefix. Lookup is by
hash (an index hit, not a scan), and the final equality check is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SERVICE_PRINCIPAL_PREFIX = "bzrk_sp_"
INGEST_PREFIX = "ing_"
CLI_ACCESS_PREFIX = "bzrk_at_"
CLI_REFRESH_PREFIX = "bzrk_rt_"
OAUTH_ACCESS_PREFIX = "bzrk_oat_"
OAUTH_REFRESH_PREFIX = "bzrk_ort_"

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def generate(prefix: str, length: int = 42) -> str:
    """A new token: ``prefix`` + ``length`` random base62 characters (~250 bits)."""
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def display_prefix(token: str) -> str:
    """What listings show of a token: its kind prefix and four characters."""
    cut = (
        token.index("_", token.index("_") + 1) + 1
        if token.startswith("bzrk_")
        else token.index("_") + 1
    )
    return token[: cut + 4]


def matches(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), stored_hash)


def shown(token: str) -> str:
    """:func:`display_prefix` of a token of ours, ``(unrecognised)`` for anything else."""
    ours = token.startswith("ing_") or (token.startswith("bzrk_") and token.count("_") >= 2)
    known = ours and len(token) > 16
    return display_prefix(token) if known else "(unrecognised)"
