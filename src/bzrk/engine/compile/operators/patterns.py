"""Pattern statements: `declare pattern` and the invocations `p("a").path` / `p("a")`.

A declaration is kept in the context's ``patterns``; an invocation picks the case
whose literal arguments (and path) equal the invocation's and compiles that case's query,
with the pattern's parameters bound to the invocation's values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def declare_pattern(ctx: CompileContext, statement: K.DeclarePattern) -> None:
    if not statement.cases:
        raise unsupported(
            statement, "a pattern without cases needs its definitions from the application"
        )
    ctx.patterns[statement.name] = statement


def _call_of(node: K.Node) -> tuple[K.Call, K.Expr | None] | None:
    if isinstance(node, K.Member) and isinstance(node.target, K.Call):
        return node.target, K.Literal(node.span, "string", node.name, node.name)
    if isinstance(node, K.Index) and isinstance(node.target, K.Call):
        return node.target, node.index
    if isinstance(node, K.Call):
        return node, None
    return None


def _constant(ctx: CompileContext, node: K.Expr) -> Any:
    if isinstance(node, K.Literal):
        return node.value
    value = ctx.lets.get(node.name) if isinstance(node, K.NameRef) else None
    if (
        value is not None
        and hasattr(value, "sql")
        and isinstance(getattr(value.sql, "value", None), str | int | float | bool)
    ):
        return value.sql.value
    raise unsupported(node, "pattern arguments must be constants", code="InvalidArgument")


def pattern_relation(ctx: CompileContext, node: K.Node) -> Relation:
    found = _call_of(node)
    assert found is not None
    call, path = found
    declaration = ctx.patterns[call.name]
    if len(call.args) != len(declaration.params):
        raise unsupported(
            call,
            f"pattern '{call.name}' takes {len(declaration.params)} arguments",
            code="WrongArgumentCount",
        )
    if bool(declaration.path_params) != (path is not None):
        raise unsupported(
            node, f"pattern '{call.name}' is invoked with a wrong path", code="InvalidArgument"
        )
    values = [_constant(ctx, a) for a in call.args]
    path_value = _constant(ctx, path) if path is not None else None
    for case in declaration.cases:
        case_values = [_constant(ctx, a) for a in case.args]
        case_path = _constant(ctx, case.path) if case.path is not None else None
        if case_values == values and case_path == path_value:
            bindings = {
                param.name: ExprCompiler(ctx.scope()).compile(arg)
                for param, arg in zip(declaration.params, call.args, strict=True)
            }
            with ctx.bound(bindings):
                return ctx.tabular(case.body)
    raise unsupported(
        node, f"pattern '{call.name}' has no case for these arguments", code="InvalidArgument"
    )
