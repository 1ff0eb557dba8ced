"""The CLI's failure type: a message for stderr and the exit code it ends with."""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


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
