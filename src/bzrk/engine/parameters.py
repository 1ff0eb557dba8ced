"""Query parameters: values for ``declare query_parameters(...)`` become ``let`` statements.

Callers send parameters as the ADX REST API does: plain values (strings, numbers, booleans) or
KQL literal text inside strings (``"dynamic([1, 2])"``, ``"datetime(2024-01-01)"``). A value
for a ``string`` parameter is always the string itself. Any other text must parse as one
literal (a constant or a type constructor of constants) — never a query fragment — so a
parameter cannot change the query's shape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from bzrk.kql import syntax as K
from bzrk.kql.diagnostics import Span

_CONSTRUCTORS = frozenset(
    {
        "datetime", "timespan", "time", "dynamic", "guid", "bool", "boolean", "int", "long",
        "real", "double", "decimal", "string", "todatetime", "totimespan", "toint", "tolong",
        "toreal", "todouble", "todecimal", "tobool", "toguid", "todynamic", "parse_json",
    }
)  # fmt: skip


class ParameterError(ValueError):
    """A parameter value is not a literal of its declared type; the message names it."""


def _is_constant(expr: K.Expr) -> bool:
    if isinstance(expr, K.Literal):
        return True
    if isinstance(expr, K.Unary):
        return _is_constant(expr.operand)
    if isinstance(expr, K.Paren):
        return _is_constant(expr.expr)
    if isinstance(expr, K.Call):
        return (
            expr.target is None
            and expr.name.lower() in _CONSTRUCTORS
            and all(_is_constant(a) for a in expr.args)
        )
    return False


def _string_literal(value: str) -> str:
    # A KQL double-quoted string: JSON escaping is a valid subset.
    return json.dumps(value)


# Declared type -> the binder's name of it.
_TYPE_NAMES = {"double": "real", "boolean": "bool", "date": "datetime", "time": "timespan"}
# Declared type -> the literal types a value of it may be given as.
_ACCEPTS = {
    "int": frozenset({"int", "long"}),
    "long": frozenset({"int", "long"}),
    "real": frozenset({"int", "long", "real", "decimal"}),
    "decimal": frozenset({"int", "long", "real", "decimal"}),
}
_LONG_RANGE = (-(2**63), 2**63 - 1)
_INT_RANGE = (-(2**31), 2**31 - 1)


def _declared(param: K.Param) -> str:
    kind = param.type.lower()
    return _TYPE_NAMES.get(kind, kind)


def _refused(param: K.Param, value: Any) -> ParameterError:
    shown = json.dumps(value) if not isinstance(value, str) else value
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return ParameterError(f"parameter '{param.name}': {shown} is not a {param.type} value")


def _literal_text(param: K.Param, value: Any) -> str:
    """KQL literal text for a JSON ``value`` of ``param``; refused unless of the declared type."""
    kind = _declared(param)
    if value is None:
        return f"{kind}(null)" if kind != "string" else '""'
    if kind == "dynamic":
        return f"dynamic({json.dumps(value)})" if not isinstance(value, str) else value
    if isinstance(value, bool):
        if kind != "bool":
            raise _refused(param, value)
        return "true" if value else "false"
    if isinstance(value, int | float):
        if kind in ("int", "long"):
            low, high = _INT_RANGE if kind == "int" else _LONG_RANGE
            integral = isinstance(value, int) or (math.isfinite(value) and value == int(value))
            if not integral or not low <= int(value) <= high:
                raise _refused(param, value)
            return str(int(value))
        if kind in ("real", "decimal") and (isinstance(value, int) or math.isfinite(value)):
            return repr(float(value)) if kind == "real" else repr(value)
        raise _refused(param, value)
    if not isinstance(value, str):
        raise _refused(param, value)
    if kind == "string":
        return _string_literal(value)
    return value


def _check_type(param: K.Param, text: str, expr: K.Expr) -> None:
    """Refuse literal text whose value is not of the parameter's declared type."""
    from bzrk.kql import KqlError, analyze

    kind = _declared(param)
    if kind in ("dynamic", "string"):
        return
    try:
        schema = analyze(f"print v = {text}").result_schema
    except KqlError as exc:
        raise _refused(param, text) from exc
    given = schema.columns[0].type if schema is not None and schema.columns else None
    if given != kind and given not in _ACCEPTS.get(kind, frozenset()):
        raise _refused(param, text)
    if kind in ("int", "long") and isinstance(expr, K.Literal | K.Unary):
        literal = expr.operand if isinstance(expr, K.Unary) else expr
        number = literal.value if isinstance(literal, K.Literal) else None
        low, high = _INT_RANGE if kind == "int" else _LONG_RANGE
        if isinstance(number, int | float) and not low <= number <= high + 1:
            raise _refused(param, text)


def _parse_constant(param: K.Param, text: str) -> K.Expr:
    from bzrk.kql.diagnostics import KqlError
    from bzrk.kql.parser import parse

    try:
        query = parse(f"print {text}")
    except KqlError as exc:
        raise ParameterError(
            f"parameter '{param.name}': '{text}' is not a {param.type} literal"
        ) from exc
    statement = query.statements[0] if len(query.statements) == 1 else None
    pipeline = statement.expr if isinstance(statement, K.ExprStatement) else None
    source = pipeline.source if isinstance(pipeline, K.Pipeline) else None
    if not (isinstance(source, K.Print) and not pipeline.operators and len(source.items) == 1):  # type: ignore[union-attr]
        raise ParameterError(f"parameter '{param.name}': '{text}' is not a single literal")
    expr = source.items[0].expr
    if not _is_constant(expr):
        raise ParameterError(f"parameter '{param.name}': '{text}' is not a constant")
    _check_type(param, text, expr)
    return expr


def bind_parameters(query: K.Query, values: Mapping[str, Any]) -> K.Query:
    """``query`` with each declared parameter defined by a ``let`` before its declaration.

    Raises:
        ParameterError: a required parameter has no value, or a value is not a literal.
    """
    statements: list[K.Statement] = []
    for statement in query.statements:
        if isinstance(statement, K.DeclareParameters):
            for param in statement.params:
                if param.name in values:
                    expr = _parse_constant(param, _literal_text(param, values[param.name]))
                elif param.default is not None:
                    expr = param.default
                else:
                    raise ParameterError(
                        f"query parameter '{param.name}' ({param.type}) has no value and no default"
                    )
                statements.append(
                    K.LetStatement(
                        param.span, param.name, Span(param.span.start, param.span.end), expr
                    )
                )
        statements.append(statement)
    return K.Query(query.span, tuple(statements))
