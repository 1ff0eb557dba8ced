"""The gateway's limits, lifetimes and rate-limit rules: config objects with finite defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from bzrk.auth.grants import Lifetimes
from bzrk.auth.ratelimit import Rule
from bzrk.server.settings import Settings

MiB = 1024**2


@dataclass(frozen=True, slots=True)
class Limits:
    max_body_bytes: int = 16 * MiB
    # Per forwarded route, what the service behind it accepts (api/mcp and api/http: 1 MiB,
    # api/adx: 4 MiB; the ingest admin API takes small JSON): the gateway answers 413 itself
    # instead of streaming a body the service will refuse half-way. A test pins these to the
    # services' own limits. First matching prefix wins; a path ending in "/" is a prefix.
    route_body_bytes: tuple[tuple[str, int], ...] = (
        ("/mcp", MiB),
        ("/query", MiB),
        ("/v1/rest/", 4 * MiB),
        ("/v2/rest/", 4 * MiB),
        ("/api/v1/admin/", 64 * 1024),
    )
    # After a 413 the rest of the body is read and dropped so the connection can carry the next
    # request; a body declared (or found) larger than this is not read: the connection closes.
    max_drain_bytes: int = 64 * MiB
    # OAuth, login, registration and admin bodies are small forms or JSON documents.
    max_form_bytes: int = 64 * 1024
    max_metadata_document_bytes: int = 64 * 1024
    metadata_document_timeout_s: float = 5.0
    upstream_connect_timeout_s: float = 5.0
    upstream_read_timeout_s: float = 330.0

    def body_limit(self, path: str) -> int:
        """The largest body accepted on ``path``."""
        for route, limit in self.route_body_bytes:
            if path == route or (route.endswith("/") and path.startswith(route)):
                return min(limit, self.max_body_bytes)
        return self.max_body_bytes


@dataclass(frozen=True, slots=True)
class RateRules:
    """Per client address, except ``login_pair`` (per username *and* address).

    Sign-ins are never keyed by the username alone: anyone could then lock a user out by
    guessing wrong. Past a sign-in bucket's burst an attempt waits for the next token (up to
    ``login_max_delay_s``) instead of being refused; only past that cap it gets 429.
    """

    login_ip: Rule = Rule(burst=20, per_second=0.2)  # noqa: RUF009 (Rule is frozen)
    login_pair: Rule = Rule(burst=5, per_second=0.1)  # noqa: RUF009 (Rule is frozen)
    login_max_delay_s: float = 20.0
    token_ip: Rule = Rule(burst=60, per_second=2.0)  # noqa: RUF009 (Rule is frozen)
    device_ip: Rule = Rule(burst=20, per_second=0.5)  # noqa: RUF009 (Rule is frozen)
    register_ip: Rule = Rule(burst=20, per_second=0.1)  # noqa: RUF009 (Rule is frozen)


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    limits: Limits = field(default_factory=Limits)
    lifetimes: Lifetimes = field(default_factory=Lifetimes)
    rates: RateRules = field(default_factory=RateRules)
    # Client ID Metadata Documents on internal addresses or plain http: tests and local dev
    # only (setting oauth_allow_private_metadata_documents; gateway/metadata_documents.py).
    allow_private_metadata_documents: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> GatewayConfig:
        limits = Limits(
            max_body_bytes=settings.gateway_max_body_bytes,
            upstream_read_timeout_s=settings.query_max_timeout_ms / 1000 + 30,
        )
        lifetimes = Lifetimes(cli_access_s=settings.cli_access_token_ttl_s)
        return cls(
            limits=limits,
            lifetimes=lifetimes,
            allow_private_metadata_documents=settings.oauth_allow_private_metadata_documents,
        )
