"""What names mean where a scalar expression is compiled, and the host that compiles the rest.

A :class:`Scope` carries the row's columns and the lets. Its ``host`` (the compile context) is
how an expression reaches beyond itself: a tabular argument (``toscalar(T)``, ``x in (T)``,
``column_names_of(T)``), a user function to inline, a ``set`` option.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bzrk.engine.compile.typed import Typed
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.engine.compile.relation import Relation, UserFunction


@dataclass(frozen=True, slots=True)
class QueryEnvironment:
    """Who runs the query, and where: what ``current_database()`` and ``current_principal()``
    answer. Planned into the SQL, so a cached plan is keyed by it (``plancache.plan_key``)."""

    database: str = "default"
    principal: str = ""  # the principal key, ``user:<id>`` / ``sp:<id>``; empty for none


class ExpressionHost(Protocol):
    """The services of the compile context an expression may call."""

    def tabular(self, node: K.Node, input_rel: Relation | None = None) -> Relation:
        """Compile a tabular expression."""
        ...

    def inline_function(self, c: ExprCompiler, node: K.Call, fn: UserFunction) -> Typed:
        """Compile a call of the scalar user function ``fn`` in ``c``'s scope."""
        ...

    def option(self, name: str) -> K.Expr | None:
        """A ``set`` option's value, None when the query does not set it."""
        ...

    def query_window(self) -> tuple[int, int] | None:
        """The request's time window ``[start, end)`` in ticks, None when it has no start.

        Asking makes the compiled plan depend on the window (bin_auto sizes bins from it).
        """
        ...

    def environment(self) -> QueryEnvironment:
        """The database and principal the query runs as."""
        ...

    def prepare(self, key: str, create: Callable[[Any], None]) -> None:
        """Have ``create(backend)`` run before the query does, once per backend: the SQL reads
        an object that exists once per backend (``parse_user_agent``'s dictionaries)."""
        ...


@dataclass
class Scope:
    """What names mean where an expression is compiled."""

    columns: dict[str, Typed] = field(default_factory=dict)
    lets: Mapping[str, Any] = field(default_factory=dict)
    # The operator's input row, when it differs from `columns` (extend items add to columns).
    input_columns: dict[str, Typed] | None = None
    row_window: Callable[[str, list[Typed], K.Call], Typed] | None = None
    # None where no tabular argument, user function or option can be reached.
    host: ExpressionHost | None = None
    # Types `annotate` declared for dynamic member paths (see ..annotated).
    annotations: Mapping[tuple[str, ...], str] = field(default_factory=dict)
