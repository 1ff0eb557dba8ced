"""The framework-free auth decisions: bearer verification with an explicit clock, surfaces,
PKCE, redirect URIs, refresh rotation, device codes, rate limits — and that no token is
stored in clear."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bzrk.auth import accounts, device, grants, oauth
from bzrk.auth.bearer import (
    CLI_TOKEN,
    OAUTH_TOKEN,
    SERVICE_PRINCIPAL,
    Identity,
    canonical_resource,
    check_surface,
    verify_bearer,
)
from bzrk.auth.errors import InvalidToken, OAuthError, WrongAudience
from bzrk.auth.internal import Principal
from bzrk.auth.ratelimit import RateLimiter, Rule
from bzrk.meta.store import MetaStore, utcnow

MCP = "http://127.0.0.1:9500/mcp"


@pytest.fixture
def meta(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = MetaStore.for_data_dir(tmp_path)
    store.migrate()
    yield store
    store.close()


@pytest.fixture
def user_id(meta: MetaStore) -> str:
    return accounts.create_user(meta, "ann", None, "member")


def test_service_principal_token_expiry_is_exact(meta: MetaStore) -> None:
    now = utcnow()
    sp = accounts.create_service_principal(meta, "ci", "member")
    issued = accounts.create_service_principal_token(meta, sp, "t", now + timedelta(hours=1))
    identity = verify_bearer(issued.value, now + timedelta(minutes=59), meta)
    assert identity.principal == Principal(SERVICE_PRINCIPAL, sp, "ci", ("member",))
    assert identity.principal.key == f"sp:{sp}"
    with pytest.raises(InvalidToken):
        verify_bearer(issued.value, now + timedelta(hours=1), meta)


def test_one_character_off_is_unknown(meta: MetaStore) -> None:
    sp = accounts.create_service_principal(meta, "ci", "member")
    value = accounts.create_service_principal_token(meta, sp, "t").value
    tampered = value[:-1] + ("A" if value[-1] != "A" else "B")
    with pytest.raises(InvalidToken):
        verify_bearer(tampered, utcnow(), meta)


def test_tokens_are_stored_hashed(meta: MetaStore, user_id: str) -> None:
    sp = accounts.create_service_principal(meta, "ci", "member")
    sp_token = accounts.create_service_principal_token(meta, sp, "t").value
    with meta.begin() as conn:
        pair = grants.issue_pair(
            conn,
            kind=grants.CLI,
            user_id=user_id,
            client_id="bzrk-cli",
            resource=None,
            scope="query",
            now=utcnow(),
            lifetimes=grants.Lifetimes(),
        )
    dump = "\n".join(meta.engine.raw_connection().iterdump())  # type: ignore[attr-defined]
    for secret in (sp_token, pair.access_token, pair.refresh_token):
        assert secret not in dump and secret[10:] not in dump


@pytest.mark.parametrize(
    ("credential", "resource", "surface", "allowed"),
    [
        (SERVICE_PRINCIPAL, None, "rest", True),
        (SERVICE_PRINCIPAL, None, "mcp", True),
        (CLI_TOKEN, None, "grpc", True),
        (CLI_TOKEN, None, "mcp", True),
        (OAUTH_TOKEN, MCP, "mcp", True),
        (OAUTH_TOKEN, "HTTP://127.0.0.1:9500/mcp/", "mcp", True),
        (OAUTH_TOKEN, MCP, "rest", False),
        (OAUTH_TOKEN, MCP, "grpc", False),
        (OAUTH_TOKEN, MCP, "admin", False),
        (OAUTH_TOKEN, "http://127.0.0.1:9501/mcp", "mcp", False),
        (OAUTH_TOKEN, None, "mcp", False),
    ],
)
def test_which_token_works_where(
    credential: str, resource: str | None, surface: str, allowed: bool
) -> None:
    identity = Identity(
        Principal("user", "ann-id", "ann", ("member",)), credential, "id", resource=resource
    )
    if allowed:
        check_surface(identity, surface, MCP)
    else:
        with pytest.raises(WrongAudience):
            check_surface(identity, surface, MCP)


def test_canonical_resource() -> None:
    assert canonical_resource("HTTPS://Example.COM/mcp/") == "https://example.com/mcp"
    assert canonical_resource("https://example.com/mcp#x") == "https://example.com/mcp"
    assert canonical_resource("https://example.com/") == "https://example.com"


def test_pkce_rfc7636_appendix_b() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert oauth.pkce_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
    assert not oauth.pkce_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN")
    assert not oauth.pkce_matches("short", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")


@pytest.mark.parametrize(
    ("uri", "ok"),
    [
        ("http://127.0.0.1:6276/oauth/callback", True),
        ("http://localhost:63298/callback", True),
        ("http://[::1]:8080/cb", True),
        ("https://app.example.com/cb", True),
        ("cursor://anysphere.cursor-mcp/oauth/callback", True),
        ("http://app.example.com/cb", False),
        ("javascript:alert(1)", False),
        ("https://app.example.com/cb#x", False),
        ("/relative", False),
    ],
)
def test_redirect_uri_rules(uri: str, ok: bool) -> None:
    if ok:
        oauth._check_redirect_uri(uri)
    else:
        with pytest.raises(OAuthError):
            oauth._check_redirect_uri(uri)


def test_refresh_rotation_and_reuse(meta: MetaStore, user_id: str) -> None:
    now, life = utcnow(), grants.Lifetimes()
    with meta.begin() as conn:
        first = grants.issue_pair(
            conn,
            kind=grants.CLI,
            user_id=user_id,
            client_id="bzrk-cli",
            resource=None,
            scope="query",
            now=now,
            lifetimes=life,
        )
    second = grants.refresh(
        meta, first.refresh_token, client_id="bzrk-cli", resource=None, now=now, lifetimes=life
    )
    with pytest.raises(OAuthError, match="another client"):
        grants.refresh(
            meta, second.refresh_token, client_id="other", resource=None, now=now, lifetimes=life
        )
    with pytest.raises(OAuthError, match="already used"):
        grants.refresh(
            meta, first.refresh_token, client_id="bzrk-cli", resource=None, now=now, lifetimes=life
        )
    with pytest.raises(InvalidToken):
        verify_bearer(second.access_token, now, meta)
    with pytest.raises(OAuthError, match="revoked"):
        grants.refresh(
            meta, second.refresh_token, client_id="bzrk-cli", resource=None, now=now, lifetimes=life
        )


def test_device_code_states(meta: MetaStore, user_id: str) -> None:
    now, life = utcnow(), grants.Lifetimes(device_poll_interval_s=5)
    started = device.start(meta, "bzrk-cli", "", now, life)
    assert device.normalize_user_code(started.user_code.lower()) == started.user_code.replace(
        "-", ""
    )

    def poll(at: float) -> str:
        try:
            return device.poll(
                meta, started.device_code, "bzrk-cli", now + timedelta(seconds=at), life
            ).access_token
        except OAuthError as exc:
            return exc.error

    assert poll(0) == "authorization_pending"
    assert poll(1) == "slow_down"  # interval is now 10 s
    assert poll(6) == "slow_down"  # 5 s after the last poll is not enough now; interval 15 s
    assert device.decide(meta, started.user_code, user_id, True, now)
    assert poll(21).startswith("bzrk_at_")
    assert poll(40) == "invalid_grant"  # used once
    assert poll(601) == "expired_token"


def test_rate_limiter_refills_and_stays_bounded() -> None:
    limiter, rule = RateLimiter(max_keys=3), Rule(burst=2, per_second=0.5)
    assert [limiter.allow("login", "ip", rule, 0.0) for _ in range(3)] == [0, 0, 2.0]
    assert limiter.allow("login", "ip", rule, 2.0) == 0  # one token back after 2 s
    assert limiter.allow("login", "other", rule, 2.0) == 0  # buckets are per key
    for i in range(10):
        limiter.allow("login", f"k{i}", rule, 3.0)
    assert len(limiter._buckets) == 3


def test_password_check_is_uniform(meta: MetaStore, user_id: str) -> None:
    accounts.create_user(meta, "bob", "correct horse", "member")
    assert accounts.authenticate_password(meta, "bob", "correct horse") is not None
    assert accounts.authenticate_password(meta, "bob", "wrong") is None
    assert accounts.authenticate_password(meta, "nobody", "correct horse") is None
    assert accounts.authenticate_password(meta, "ann", "") is None  # no password set


@pytest.mark.parametrize(
    ("host", "private"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("[::1]", True),
        ("169.254.169.254", True),
        ("8.8.8.8", False),
        ("client.example.com", False),
        (None, True),
    ],
)
def test_metadata_document_hosts(host: str | None, private: bool) -> None:
    assert oauth.is_private_address(host) is private


def test_reserve_books_in_order_and_refuses_past_the_cap() -> None:
    limiter = RateLimiter()
    rule = Rule(burst=2, per_second=0.5)  # then one every 2 s
    waits = [limiter.reserve("login", "k", rule, 100.0, max_wait_s=5) for _ in range(6)]
    # Two at once, then queued 2 s and 4 s after; a 6 s wait would pass the cap: refused.
    assert waits == [0.0, 0.0, 2.0, 4.0, None, None]
    assert limiter.reserve("login", "k", rule, 104.0, max_wait_s=5) == 2.0  # time refilled two
    assert limiter.reserve("login", "other", rule, 104.0, max_wait_s=5) == 0.0  # its own bucket
