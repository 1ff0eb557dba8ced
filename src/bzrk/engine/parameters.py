"""Query parameters: values for ``declare query_parameters(...)`` become ``let`` statements.

Callers send parameters as the ADX REST API does: plain values (strings, numbers, booleans) or
KQL literal text inside strings (``"dynamic([1, 2])"``, ``"datetime(2024-01-01)"``). A value
for a ``string`` parameter is always the string itself. Any other text must parse as one
literal (a constant or a type constructor of constants) — never a query fragment — so a
parameter cannot change the query's shape.
"""

from __future__ import annotations

import json
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


def _literal_text(param: K.Param, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if param.type not in ("long", "int") else str(int(value))
    if not isinstance(value, str):
        return f"dynamic({json.dumps(value)})"
    if param.type == "string":
        return _string_literal(value)
    return value


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
