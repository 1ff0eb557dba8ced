"""The device authorization grant (RFC 8628) behind ``bzrk login``.

The CLI asks for a device code and shows the user code; a logged-in user types it on the
``/device`` page and approves or denies; meanwhile the CLI polls the token endpoint and gets
``authorization_pending``, ``slow_down`` (polled faster than the interval, which then grows by
5 s), ``expired_token``, ``access_denied`` or, once, a CLI access + refresh token.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from bzrk.auth import grants, tokens
from bzrk.auth.errors import OAuthError
from bzrk.auth.timestamps import aware, is_past
from bzrk.meta import schema
from bzrk.meta.store import MetaStore, new_id

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
# RFC 8628 §6.1: no vowels or look-alikes, so codes spell no words and read back unambiguously.
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
PENDING, APPROVED, DENIED, USED = "pending", "approved", "denied", "used"
SLOW_DOWN_STEP_S = 5


@dataclass(frozen=True, slots=True)
class DeviceAuthorization:
    device_code: str
    user_code: str
    expires_in: int
    interval: int


def normalize_user_code(value: str) -> str:
    return "".join(ch for ch in value.upper() if ch in USER_CODE_ALPHABET)


def display_user_code(code: str) -> str:
    return f"{code[:4]}-{code[4:]}"


def start(
    meta: MetaStore, client_id: str, scope: str, now: datetime, lifetimes: grants.Lifetimes
) -> DeviceAuthorization:
    if client_id != grants.CLI_CLIENT_ID:
        raise OAuthError("invalid_client", "the device flow is for the bzrk CLI", status=401)
    device_code = secrets.token_urlsafe(32)
    user_code = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(8))
    with meta.begin() as conn:
        conn.execute(
            sa.insert(schema.device_codes).values(
                id=new_id(),
                device_code_hash=tokens.hash_token(device_code),
                user_code=user_code,
                client_id=client_id,
                scope=scope or "query",
                status=PENDING,
                interval_s=lifetimes.device_poll_interval_s,
                created_at=now,
                expires_at=now + timedelta(seconds=lifetimes.device_code_s),
            )
        )
    return DeviceAuthorization(
        device_code,
        display_user_code(user_code),
        lifetimes.device_code_s,
        lifetimes.device_poll_interval_s,
    )


def decide(meta: MetaStore, user_code: str, user_id: str, approve: bool, now: datetime) -> bool:
    """Record the user's answer for a pending, unexpired code; False if there is none."""
    t = schema.device_codes
    with meta.begin() as conn:
        result = conn.execute(
            sa.update(t)
            .where(
                t.c.user_code == normalize_user_code(user_code),
                t.c.status == PENDING,
                t.c.expires_at > now,
            )
            .values(status=APPROVED if approve else DENIED, user_id=user_id)
        )
    return result.rowcount == 1


def poll(
    meta: MetaStore, device_code: str, client_id: str, now: datetime, lifetimes: grants.Lifetimes
) -> grants.TokenPair:
    """One token-endpoint poll; raises the RFC 8628 §3.5 error while there is no token."""
    t = schema.device_codes
    # Decide inside the transaction, raise after it: the poll time must be committed either way.
    error: OAuthError | None = None
    with meta.begin() as conn:
        row = conn.execute(
            sa.select(t).where(t.c.device_code_hash == tokens.hash_token(device_code))
        ).first()
        if row is None or row.client_id != client_id:
            raise OAuthError("invalid_grant", "unknown device code")
        if is_past(row.expires_at, now):
            raise OAuthError("expired_token", "the device code expired; run bzrk login again")
        too_fast = (
            row.last_polled_at is not None
            and aware(row.last_polled_at) + timedelta(seconds=row.interval_s) > now
        )
        values: dict[str, object] = {"last_polled_at": now}
        if too_fast:
            values["interval_s"] = row.interval_s + SLOW_DOWN_STEP_S
        if row.status == APPROVED and not too_fast:
            values["status"] = USED
        changed = conn.execute(
            sa.update(t).where(t.c.id == row.id, t.c.status == row.status).values(values)
        )
        if changed.rowcount == 0:
            error = OAuthError("authorization_pending", "try again")
        elif too_fast:
            error = OAuthError(
                "slow_down", f"poll at most every {row.interval_s + SLOW_DOWN_STEP_S} s"
            )
        elif row.status == PENDING:
            error = OAuthError("authorization_pending", "waiting for the user to approve")
        elif row.status == DENIED:
            error = OAuthError("access_denied", "the user denied the request")
        elif row.status == USED:
            error = OAuthError("invalid_grant", "device code already used")
        else:
            return grants.issue_pair(
                conn,
                kind=grants.CLI,
                user_id=row.user_id,
                client_id=client_id,
                resource=None,
                scope=row.scope,
                now=now,
                lifetimes=lifetimes,
            )
    raise error
