"""The CLI's failure type, its exit codes, and the messages that name the hop that failed."""

from __future__ import annotations

import re

# The exit codes (docs/cli.md lists them).
EXIT_OK = 0
EXIT_ERROR = 1  # a query error, a refused credential, an unreachable gateway or service
EXIT_USAGE = 2  # a bad flag or argument, no endpoint
EXIT_INCOMPLETE = (
    3  # an incomplete result (stopped early, time budget, timeout) without --allow-partial
)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), after printing the last complete snapshot


class CliError(Exception):
    """A failure the user can act on: printed as ``bzrk: <message>`` with no traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class UsageError(CliError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


class AuthError(CliError):
    """Missing, expired or refused credentials (exit 1, like every error)."""


def token_refused(endpoint: str, source: str) -> AuthError:
    """The gateway refused the bearer token that was sent (``source`` says where it came from)."""
    hint = (
        "run `bzrk login` again"
        if source == "the stored login"
        else f"check the token in {source} (or run `bzrk login` and unset it)"
    )
    return AuthError(
        f"the gateway at {endpoint} refused the token from {source}: it is invalid, expired "
        f"or not valid for this gateway; {hint}"
    )


_REASONS = (
    (re.compile(r"connection refused|connect call failed|errno 111", re.I), "connection refused"),
    (
        re.compile(r"name or service not known|nodename nor servname|dns|errno -[23]", re.I),
        "host not found",
    ),
    (re.compile(r"timed out|timeout|deadline", re.I), "timed out"),
    (re.compile(r"certificate|ssl|tls", re.I), "TLS handshake failed"),
    (re.compile(r"network is unreachable|no route to host", re.I), "network unreachable"),
    (re.compile(r"connection reset|broken pipe|socket closed|eof", re.I), "connection closed"),
)


def transport_reason(text: str) -> str:
    """A short reason for a connection failure, from a library's long error text."""
    for pattern, reason in _REASONS:
        if pattern.search(text):
            return reason
    return text.split(";")[0].strip() or "no answer"
