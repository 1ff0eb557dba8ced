"""The binder's result: the syntax tree plus side tables keyed by node (identity).

Nodes hash by identity, so `bound.types[expr]` etc. are direct lookups. See
docs/architecture.md ("KQL syntax tree and bound plan") for the engine-facing contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bzrk.kql import syntax
from bzrk.kql.catalog import FunctionSymbol, Signature
from bzrk.kql.symbols import GlobalState, Symbol, TableSchema, UserFunctionSymbol


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What a `syntax.Call` resolved to.

    `kind` is "scalar", "aggregate", "plugin", "user" (a let-bound lambda; `user` is set),
    or "special" (language forms handled by name: `toscalar`, `materialize`, `table`,
    `database`, `cluster`, `column_ifexists`, ...; `function` may be None).
    `columns` lists the output column names an aggregate produces (several for `arg_max`,
    `percentiles`, `take_any(a, b)`).
    """

    kind: str
    function: FunctionSymbol | None
    signature: Signature | None
    result_type: str
    user: UserFunctionSymbol | None = None
    columns: tuple[str, ...] = ()


@dataclass(slots=True)
class BoundQuery:
    """A parsed and bound query.

    Attributes:
        query: the syntax tree.
        globals: the state it was bound against.
        types: scalar expression → KQL type name.
        schemas: tabular expression or query operator → its output `TableSchema`
            (for an operator: the schema *after* it; `inputs` holds the schema before it).
        inputs: query operator → the schema flowing into it.
        symbols: `NameRef`/`Member`/`Index` → the `Symbol` it resolves to.
        calls: `Call` → `CallInfo`.
        names: `NamedExpr` (projection / aggregate / by item; for `distinct`, the item
            expression) → the output column name(s) it produces, after KQL's naming rules.
        results: one `(statement, schema)` per result-producing statement, in order.
    """

    query: syntax.Query
    globals: GlobalState
    types: dict[syntax.Node, str] = field(default_factory=dict)
    schemas: dict[syntax.Node, TableSchema] = field(default_factory=dict)
    inputs: dict[syntax.Node, TableSchema] = field(default_factory=dict)
    symbols: dict[syntax.Node, Symbol] = field(default_factory=dict)
    calls: dict[syntax.Node, CallInfo] = field(default_factory=dict)
    names: dict[syntax.Node, tuple[str, ...]] = field(default_factory=dict)
    results: list[tuple[syntax.Statement, TableSchema]] = field(default_factory=list)

    def type_of(self, expr: syntax.Node) -> str | None:
        return self.types.get(expr)

    def schema_of(self, node: syntax.Node) -> TableSchema | None:
        return self.schemas.get(node)

    def symbol_of(self, node: syntax.Node) -> Symbol | None:
        return self.symbols.get(node)

    def call_of(self, node: syntax.Node) -> CallInfo | None:
        return self.calls.get(node)

    @property
    def result_schema(self) -> TableSchema | None:
        """The schema of the last result-producing statement (the primary result)."""
        return self.results[-1][1] if self.results else None
