"""The engine's exception tree, the translation of backend errors into it, and what a user
is told about each.

EngineError
├── BackendError            ClickHouse said no (carries the ClickHouse error code)
│   ├── QueryTimeout        max_execution_time passed
│   ├── QueryCancelled      KILL QUERY or a client that went away
│   └── MemoryLimit         max_memory_usage passed
└── BackendUnavailable      the engine could not be reached or opened

A :class:`BackendError`'s message is ClickHouse's own text, which names generated SQL, settings
and engine internals: it goes to the log with the run id, never to a user. :func:`told` gives
the coded error a user sees instead, from the one table :data:`TOLD` keyed by ClickHouse's
error code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class EngineError(Exception):
    code = "EngineError"

    def __init__(self, message: str, *, query_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.query_id = query_id


class BackendError(EngineError):
    code = "ExecutionError"

    def __init__(
        self, message: str, *, clickhouse_code: int | None = None, query_id: str | None = None
    ) -> None:
        super().__init__(message, query_id=query_id)
        self.clickhouse_code = clickhouse_code


class QueryTimeout(BackendError):
    code = "QueryTimeout"


class QueryCancelled(BackendError):
    code = "QueryCancelled"


class MemoryLimit(BackendError):
    code = "MemoryLimitExceeded"


class BackendUnavailable(EngineError):
    code = "BackendUnavailable"


_CODE_RE = re.compile(r"Code:\s*(\d+)")
_BY_CLICKHOUSE_CODE: dict[int, type[BackendError]] = {
    159: QueryTimeout,  # TIMEOUT_EXCEEDED
    394: QueryCancelled,  # QUERY_WAS_CANCELLED
    241: MemoryLimit,  # MEMORY_LIMIT_EXCEEDED
}


def _clean(message: str) -> str:
    # ClickHouse appends a stack trace and version tag; users need the first sentence only.
    message = message.split("Stack trace", 1)[0]
    message = re.sub(r"\s*\(version [^)]*\)\s*$", "", message.strip())
    return message.strip()


@contextmanager
def map_backend_errors(query_id: str | None) -> Iterator[None]:
    """Re-raise chDB / clickhouse-connect failures as :class:`BackendError` subclasses."""
    try:
        yield
    except EngineError:
        raise
    except Exception as exc:  # the backends raise RuntimeError / DatabaseError subclasses
        text = str(exc)
        match = _CODE_RE.search(text)
        code = int(match.group(1)) if match else None
        cls = _BY_CLICKHOUSE_CODE.get(code, BackendError) if code is not None else BackendError
        raise cls(_clean(text), clickhouse_code=code, query_id=query_id) from exc


# A message the compiled SQL raises on purpose (``throwIf(cond, THROWN + text)``: assert(),
# scan's group limit) starts with this marker; its text is the user's or bzrk's own.
THROWN = "kql: "
_THROWN_RE = re.compile(
    re.escape(THROWN) + r"(.*?)(?:: while executing|\s*\(FUNCTION_THROW|$)", re.S
)


@dataclass(frozen=True, slots=True)
class Told:
    """What a user is told about a failure: a stable code, a title and a sentence."""

    code: str
    title: str
    message: str


_TYPE = Told(
    "TypeMismatch",
    "Type mismatch",
    "a function or operator got a value of a type it cannot use",
)
_ARGUMENT = Told(
    "InvalidArgument",
    "Invalid argument",
    "a function got an argument it cannot use (out of range, empty, or of the wrong kind)",
)
_CONVERSION = Told("InvalidArgument", "Invalid value", "a value could not be converted or parsed")
_TOO_COMPLEX = Told(
    "QueryTooComplex",
    "Query too complex",
    "the query is too large or too deeply nested to run; simplify it",
)
_TOO_LARGE = Told(
    "ResultTooLarge",
    "Result too large",
    "the query produced more rows or bytes than its limit; add a filter, take or summarize",
)

# ClickHouse error code -> what the user is told. Codes not listed are "ExecutionError".
TOLD: dict[int, Told] = {
    6: _CONVERSION,  # CANNOT_PARSE_TEXT
    26: _CONVERSION,  # CANNOT_PARSE_QUOTED_STRING
    27: _CONVERSION,  # CANNOT_PARSE_INPUT_ASSERTION_FAILED
    32: _CONVERSION,  # ATTEMPT_TO_READ_AFTER_EOF
    38: _CONVERSION,  # CANNOT_PARSE_DATE
    41: _CONVERSION,  # CANNOT_PARSE_DATETIME
    70: _CONVERSION,  # CANNOT_CONVERT_TYPE
    72: _CONVERSION,  # CANNOT_PARSE_NUMBER
    117: _CONVERSION,  # INCORRECT_DATA
    321: _CONVERSION,  # VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
    43: _TYPE,  # ILLEGAL_TYPE_OF_ARGUMENT
    44: _TYPE,  # ILLEGAL_COLUMN
    53: _TYPE,  # TYPE_MISMATCH
    386: _TYPE,  # NO_COMMON_TYPE
    35: _ARGUMENT,  # TOO_FEW_ARGUMENTS_FOR_FUNCTION
    36: _ARGUMENT,  # BAD_ARGUMENTS
    42: _ARGUMENT,  # NUMBER_OF_ARGUMENTS_DOESNT_MATCH
    69: _ARGUMENT,  # ARGUMENT_OUT_OF_BOUND
    128: _ARGUMENT,  # TOO_LARGE_ARRAY_SIZE
    190: _ARGUMENT,  # SIZES_OF_ARRAYS_DONT_MATCH
    427: Told("InvalidArgument", "Invalid regular expression", "a regular expression is invalid"),
    153: Told("InvalidArgument", "Division by zero", "an integer division by zero"),
    407: Told(
        "ArithmeticOverflow",
        "Arithmetic overflow",
        "a decimal or datetime computation overflowed (a datetime ends at 2299-12-31 here, "
        "where ADX's ends at 9999; convert a decimal to real with todouble() to compute in real)",
    ),
    62: _TOO_COMPLEX,  # SYNTAX_ERROR: the SQL of a query past ClickHouse's parser limits
    167: _TOO_COMPLEX,  # TOO_DEEP_AST
    168: _TOO_COMPLEX,  # TOO_BIG_AST
    306: _TOO_COMPLEX,  # TOO_DEEP_RECURSION
    158: _TOO_LARGE,  # TOO_MANY_ROWS
    307: _TOO_LARGE,  # TOO_MANY_BYTES
    396: _TOO_LARGE,  # TOO_MANY_ROWS_OR_BYTES
    159: Told("QueryTimeout", "Query timed out", "the query ran longer than its time limit"),
    394: Told("QueryCancelled", "Query cancelled", "the query was cancelled"),
    241: Told(
        "MemoryLimitExceeded",
        "Memory limit exceeded",
        "the query needed more memory than its limit; narrow the window or the groups",
    ),
    164: Told(
        "InvalidArgument",
        "Read-only query",
        "the query tried to write data or to change a setting, and queries run read-only",
    ),
    202: Told("QueueFull", "Too many queries", "too many queries are running; retry later"),
    209: Told("BackendUnavailable", "Engine unavailable", "the query engine did not answer"),
    210: Told("BackendUnavailable", "Engine unavailable", "the query engine could not be reached"),
}
# A SYNTAX_ERROR from the parser's limits (the SQL of a huge or deep query), not from bad SQL.
_PARSER_LIMIT_RE = re.compile(
    r"Max query size exceeded|Maximum parse depth|too (deep|big|large)", re.I
)
# ClickHouse codes that mean bzrk wrote SQL the engine does not know (a bzrk bug).
_OURS = frozenset({46, 47, 48, 60, 81, 179, 184, 215})  # UNKNOWN_FUNCTION, UNKNOWN_IDENTIFIER, …


def told(exc: EngineError, run_id: str = "") -> Told:
    """What a user is told about ``exc`` (never ClickHouse's text, SQL or settings).

    >>> told(BackendError("Code: 43. DB::Exception: Illegal type", clickhouse_code=43)).code
    'TypeMismatch'
    """
    if not isinstance(exc, BackendError):
        if isinstance(exc, BackendUnavailable):
            return Told(exc.code, "Engine unavailable", "the query engine is unavailable")
        return Told(exc.code, "Execution error", exc.message)
    code = exc.clickhouse_code
    if code == 395:  # FUNCTION_THROW_IF_VALUE_IS_NON_ZERO: a message of our own SQL
        match = _THROWN_RE.search(exc.message)
        text = match.group(1).strip() if match else "an assertion in the query failed"
        return Told("AssertionFailed", "Assertion failed", text)
    reference = f" (run id {run_id})" if run_id else ""
    # a syntax error within the parser's limits is SQL bzrk wrote wrongly
    ours = code in _OURS or (code == 62 and not _PARSER_LIMIT_RE.search(exc.message))
    if code in TOLD and not ours:
        return TOLD[code]
    if ours:
        return Told(
            "InternalError",
            "Internal error",
            f"the query could not be run: bzrk generated SQL the engine refused{reference}",
        )
    return Told("ExecutionError", "Execution error", f"the query failed while running{reference}")
