"""How bzrk names become ClickHouse names, and the one place identifiers and strings are quoted.

A bzrk database ``<name>`` is the ClickHouse database ``bzrk_<name>`` (the prefix is
configurable so tests can isolate stores); a bzrk table keeps its name. Names are checked
against :data:`NAME_PATTERN` before they reach any SQL, and every identifier is still quoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,62}$")
DEFAULT_PREFIX = "bzrk_"


class InvalidName(ValueError):
    """A database or table name bzrk does not accept."""


def check_name(kind: str, name: str) -> str:
    if not NAME_PATTERN.match(name):
        raise InvalidName(
            f"invalid {kind} name {name!r}: use 1-63 letters, digits, '_' or '-', "
            "starting with a letter or '_'"
        )
    return name


def quote_identifier(name: str) -> str:
    """A ClickHouse identifier in backquotes, escaping backslash and backquote."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def quote_string(value: str) -> str:
    """A ClickHouse string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True, slots=True)
class TableNaming:
    """Maps bzrk (database, table) to ClickHouse names."""

    prefix: str = DEFAULT_PREFIX

    def database(self, database: str) -> str:
        return self.prefix + check_name("database", database)

    def qualified(self, database: str, table: str) -> str:
        """```bzrk_<database>`.`<table>``` — what SQL uses in ``FROM``."""
        return (
            f"{quote_identifier(self.database(database))}."
            f"{quote_identifier(check_name('table', table))}"
        )
