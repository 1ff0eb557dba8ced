"""KQL errors: the one exception type `KqlError`, its codes and factories, spans and locations.

Every problem the language layer reports is built by a small factory here (one place for codes
and texts, as Kusto's `DiagnosticFacts`), then placed with `.at(span)`. `SourceText` turns the
character span into the byte/line/column `Location` of the gRPC `Error` message.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import NamedTuple


class Span(NamedTuple):
    """Half-open range of character offsets into the query text."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Location:
    """Byte range plus 1-based line/column (characters) of both ends, as the gRPC `Location`."""

    start_byte: int
    end_byte: int
    start_line: int
    start_column: int
    end_line: int
    end_column: int


class SourceText:
    """Query text with a line index; converts character spans to `Location`s."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self._line_starts.append(i + 1)

    def _byte_offset(self, pos: int) -> int:
        return len(self.text[:pos].encode("utf-8", "surrogatepass"))

    def _line_col(self, pos: int) -> tuple[int, int]:
        line = bisect_right(self._line_starts, pos) - 1
        return line + 1, pos - self._line_starts[line] + 1

    def location(self, span: Span) -> Location:
        start = max(0, min(span.start, len(self.text)))
        end = max(start, min(span.end, len(self.text)))
        sl, sc = self._line_col(start)
        el, ec = self._line_col(end)
        return Location(self._byte_offset(start), self._byte_offset(end), sl, sc, el, ec)


MAX_ERRORS = 20


class KqlError(Exception):
    """A located KQL language error (parse or semantic).

    Attributes:
        code: stable machine code (`ParseError`, `UnknownName`, ...).
        title: short human category.
        message: a sentence quoting the offending text.
        kusto_code: the closest Kusto.Language diagnostic code (`KS...`), when there is one.
        span: character span in the query text (None until placed).
        location: byte/line/column location (set when the text is known).
    """

    def __init__(self, code: str, title: str, message: str, kusto_code: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.title = title
        self.message = message
        self.kusto_code = kusto_code
        self.span: Span | None = None
        self.location: Location | None = None
        self.text: str | None = None
        # every problem found (this one first), capped at MAX_ERRORS; statements after a
        # broken one are still checked, so a user sees all their mistakes at once
        self.errors: list[KqlError] = [self]

    def at(self, span: Span) -> KqlError:
        if self.span is None:
            self.span = span
        return self

    def locate(self, source: SourceText) -> KqlError:
        """Fill `location` from the source (for this error and every collected one)."""
        for err in self.errors:
            if err.span is not None and err.location is None:
                err.location = source.location(err.span)
                err.text = source.text
        return self

    @property
    def snippet(self) -> str:
        if self.span is None or self.text is None:
            return ""
        return self.text[self.span.start : self.span.end]

    def __str__(self) -> str:
        if self.location is None:
            return f"{self.code}: {self.message}"
        loc = self.location
        return f"{self.code}: {self.message} (line {loc.start_line}, column {loc.start_column})"


def collected(errors: list[KqlError]) -> KqlError:
    """The first error, carrying all of them (capped at MAX_ERRORS)."""
    first = errors[0]
    first.errors = errors[:MAX_ERRORS]
    return first


def _quote(text: str, limit: int = 60) -> str:
    # lone surrogates (from undecodable input) must not make the message unencodable
    text = text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\n", " ")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"'{text}'"


# --- lexical and syntax errors -------------------------------------------------------------


def bad_token(ch: str) -> KqlError:
    return KqlError("ParseError", "Syntax error", f"Unexpected character {_quote(ch)}.", "KS002")


def unterminated_string() -> KqlError:
    return KqlError("ParseError", "Syntax error", "Unterminated string literal.", "KS001")


def unexpected(found: str, expected: str) -> KqlError:
    what = _quote(found) if found else "end of query"
    return KqlError("ParseError", "Syntax error", f"Expected {expected}, found {what}.", "KS003")


def missing_expression(found: str) -> KqlError:
    what = _quote(found) if found else "end of query"
    return KqlError("ParseError", "Syntax error", f"Expected an expression, found {what}.", "KS006")


def bad_literal(text: str, kind: str) -> KqlError:
    return KqlError(
        "ParseError", "Syntax error", f"Invalid {kind} literal {_quote(text)}.", "KS007"
    )


def no_query_expression() -> KqlError:
    return KqlError(
        "ParseError",
        "Syntax error",
        "The query has no tabular or scalar expression to return.",
        "KS142",
    )


def too_deep() -> KqlError:
    return KqlError(
        "QueryTooComplex",
        "Query too complex",
        "The query is nested too deeply to analyze.",
        "KS000",
    )


def too_slow() -> KqlError:
    return KqlError(
        "QueryTooComplex",
        "Query too complex",
        "Analyzing the query took longer than its planning budget; simplify it.",
        "KS000",
    )


def too_long(n: int, limit: int) -> KqlError:
    return KqlError(
        "QueryTooComplex",
        "Query too complex",
        f"The query has {n} tokens; at most {limit} are accepted.",
        "KS000",
    )


def unsupported_operator(name: str) -> KqlError:
    return KqlError(
        "UnsupportedOperator",
        "Unsupported operator",
        f"The operator {_quote(name)} is not supported.",
    )


# --- semantic errors -------------------------------------------------------------------------


def unknown_name(name: str) -> KqlError:
    return KqlError(
        "UnknownName",
        "Unknown name",
        f"The name {_quote(name)} does not refer to any known column, table, variable or function.",
        "KS142",
    )


def unknown_table(name: str) -> KqlError:
    return KqlError(
        "UnknownTable", "Unknown table", f"Unknown table or database {_quote(name)}.", "KS204"
    )


def unknown_function(name: str) -> KqlError:
    return KqlError(
        "UnknownFunction",
        "Unknown function",
        f"The name {_quote(name)} does not refer to any known function.",
        "KS109",
    )


def unknown_plugin(name: str) -> KqlError:
    return KqlError("UnknownFunction", "Unknown plugin", f"Unknown plugin {_quote(name)}.", "KS212")


def wrong_argument_count(name: str, given: int, lo: int, hi: int) -> KqlError:
    expect = str(lo) if lo == hi else (f"{lo} or more" if hi < 0 else f"{lo} to {hi}")
    return KqlError(
        "WrongArgumentCount",
        "Wrong number of arguments",
        f"Function {_quote(name)} expects {expect} argument(s), got {given}.",
        "KS119",
    )


def type_mismatch(what: str, expected: str, actual: str, kusto_code: str = "KS107") -> KqlError:
    return KqlError(
        "TypeMismatch",
        "Type mismatch",
        f"{what}: expected {expected}, found {actual}.",
        kusto_code,
    )


def argument_count_shape(name: str, rule: str) -> KqlError:
    """Kusto.Language's KS121: a count the signature allows but the function's shape does not
    (``case`` takes predicate/value pairs and an else, ``bag_pack`` key/value pairs)."""
    return KqlError(
        "WrongArgumentCount",
        "Wrong number of arguments",
        f"Function {_quote(name)} takes {rule}.",
        "KS121",
    )


def column_name_expected(name: str) -> KqlError:
    """Kusto.Language's KS109 for an argument that must name a column (``bag_pack_columns``)."""
    return KqlError(
        "TypeMismatch",
        "Column name expected",
        f"Every argument of {name}() must name a column.",
        "KS109",
    )


def wrong_data_count(columns: int, values: int) -> KqlError:
    """Kusto.Language's KS173: a datatable whose values do not fill whole rows."""
    return KqlError(
        "InvalidArgument",
        "Incomplete datatable row",
        f"The datatable has {values} value(s); they must come in multiples of its {columns} column(s).",
        "KS173",
    )


def operator_not_defined(op: str, *operands: str) -> KqlError:
    """Kusto.Language's KS106 for an operator without a signature for these operand types."""
    types = ", ".join(operands[:-1]) + f" and {operands[-1]}"
    message = f"The operator '{op}' is not defined for the operand types {types}."
    if op.lower() in ("==", "!=", "<>", "in", "!in"):
        message += " Try adding explicit casts (tostring(), tolong(), todatetime(), …)."
    return KqlError("TypeMismatch", "Type mismatch", message, "KS106")


def unknown_visualization(chart: str) -> KqlError:
    """Kusto.Language's KS005 after `render`: a visualization it does not know."""
    return KqlError(
        "InvalidArgument",
        "Unknown visualization",
        f"{_quote(chart)} is no visualization of render (timechart, barchart, table, …).",
        "KS005",
    )


def invalid_parameter(name: str, value: str, expected: str) -> KqlError:
    """Kusto.Language's KS005: an operator parameter outside its values (`union kind=foo`)."""
    return KqlError(
        "InvalidArgument",
        "Invalid parameter",
        f"The value {_quote(value)} of {name} is not one of: {expected}.",
        "KS005",
    )


def join_key_types(name: str, left: str, right: str, kusto_code: str = "KS227") -> KqlError:
    """Kusto.Language's KS227 (``on k``) and KS242 (``on $left.a == $right.b``): join keys
    whose types differ on the two sides."""
    return KqlError(
        "TypeMismatch",
        "Type mismatch",
        f"The join key {_quote(name)} has type {left} on the left and {right} on the right;"
        " the keys must have one type (convert one side).",
        kusto_code,
    )


def element_access_not_allowed(actual: str) -> KqlError:
    """Kusto.Language's KS147: ``[]`` or ``.name`` on a value that is not dynamic."""
    return KqlError(
        "TypeMismatch",
        "Type mismatch",
        f"The element access operator is not allowed on a value of type {actual};"
        " only a dynamic value has elements (a string holding JSON: parse_json(x).name).",
        "KS147",
    )


def no_common_type(name: str, types: list[str]) -> KqlError:
    """Kusto.Language's KS232: arguments that must share a type have none (``coalesce(1, 'a')``)."""
    return KqlError(
        "TypeMismatch",
        "Type mismatch",
        f"No common type can be determined from the arguments of {name}() ({', '.join(types)}).",
        "KS232",
    )


def incompatible_arguments(name: str, types: list[str]) -> KqlError:
    """Kusto.Language's KS127: no overload of ``name`` takes these argument types."""
    return KqlError(
        "TypeMismatch",
        "Type mismatch",
        f"The function '{name}' is not compatible with arguments ({', '.join(types)}).",
        "KS127",
    )


def not_tabular(text: str) -> KqlError:
    return KqlError(
        "TypeMismatch", "Type mismatch", f"{_quote(text)} is not a tabular expression.", "KS105"
    )


def not_scalar(text: str) -> KqlError:
    return KqlError(
        "TypeMismatch", "Type mismatch", f"{_quote(text)} is not a scalar expression.", "KS106"
    )


def duplicate_column(name: str) -> KqlError:
    return KqlError(
        "DuplicateName",
        "Duplicate column",
        f"The column {_quote(name)} is declared more than once.",
        "KS171",
    )


def aggregate_outside_summarize(name: str) -> KqlError:
    return KqlError(
        "TypeMismatch",
        "Aggregate out of place",
        f"The aggregate function {_quote(name)} is only allowed in summarize, make-series or similar operators.",
        "KS122",
    )


def column_outside_aggregate(name: str) -> KqlError:
    """Kusto.Language's KS236: `summarize r = x + 1` reads `x` outside an aggregate."""
    return KqlError(
        "TypeMismatch",
        "Type mismatch",
        f"summarize reads the column '{name}' outside an aggregate function;"
        f" use an aggregate such as take_any({name})",
        "KS236",
    )


def invalid_argument(message: str, kusto_code: str = "KS110") -> KqlError:
    return KqlError("InvalidArgument", "Invalid argument", message, kusto_code)
