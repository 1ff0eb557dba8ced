"""The gateway's limits, lifetimes and rate-limit rules: config objects with finite defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from bzrk.auth.grants import Lifetimes
from bzrk.auth.ratelimit import Rule
from bzrk.server.settings import Settings


@dataclass(frozen=True, slots=True)
class Limits:
    max_body_bytes: int = 16 * 1024**2
    # OAuth, login, registration and admin bodies are small forms or JSON documents.
    max_form_bytes: int = 64 * 1024
    max_metadata_document_bytes: int = 64 * 1024
    metadata_document_timeout_s: float = 5.0
    upstream_connect_timeout_s: float = 5.0
    upstream_read_timeout_s: float = 330.0


@dataclass(frozen=True, slots=True)
class RateRules:
    """Per client IP unless named ``*_user`` (per username)."""

    login_ip: Rule = Rule(burst=20, per_second=0.2)  # noqa: RUF009 (Rule is frozen)
    login_user: Rule = Rule(burst=5, per_second=1 / 30)  # noqa: RUF009 (Rule is frozen)
    token_ip: Rule = Rule(burst=60, per_second=2.0)  # noqa: RUF009 (Rule is frozen)
    device_ip: Rule = Rule(burst=20, per_second=0.5)  # noqa: RUF009 (Rule is frozen)
    register_ip: Rule = Rule(burst=20, per_second=0.1)  # noqa: RUF009 (Rule is frozen)


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    limits: Limits = field(default_factory=Limits)
    lifetimes: Lifetimes = field(default_factory=Lifetimes)
    rates: RateRules = field(default_factory=RateRules)
    # CIMD documents over plain http are fetched only from loopback, and only when allowed.
    allow_loopback_metadata_documents: bool = False

    @classmethod
    def from_settings(cls, settings: Settings, public_url: str) -> GatewayConfig:
        limits = Limits(
            max_body_bytes=settings.gateway_max_body_bytes,
            upstream_read_timeout_s=settings.query_max_timeout_ms / 1000 + 30,
        )
        lifetimes = Lifetimes(cli_access_s=settings.cli_access_token_ttl_s)
        from urllib.parse import urlsplit

        from bzrk.auth.oauth import is_loopback_host

        # A gateway on loopback http (bzrk dev, tests) may fetch loopback http documents.
        parts = urlsplit(public_url)
        dev = parts.scheme == "http" and is_loopback_host(parts.hostname)
        return cls(limits=limits, lifetimes=lifetimes, allow_loopback_metadata_documents=dev)
