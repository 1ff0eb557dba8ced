"""KQL statements → one ClickHouse query (a chain of CTEs) per result table.

:class:`QueryCompiler` is the entry point: it runs the statements of a parsed query (`let`,
`set`, `declare pattern`, tabular expressions) and finishes each tabular statement as a result
table. Each operator becomes one CTE reading the previous one, so the SQL reads in the same
order as the KQL pipeline; the operators themselves are in ``operators/``, found through the
table in ``operators/table.py``, and see the query's state as a
:class:`~bzrk.engine.compile.context.CompileContext`.
"""

from __future__ import annotations

from bzrk.engine.compile import bag_paths, bag_search, registry_facts
from bzrk.engine.compile.context import CompileContext
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.operators.patterns import declare_pattern, pattern_relation
from bzrk.engine.compile.operators.table import OPERATORS, SOURCES
from bzrk.engine.compile.relation import (
    CompiledQuery,
    CompiledTable,
    Relation,
    TableResolver,
    TableSource,
)
from bzrk.engine.events import PRIMARY_RESULT
from bzrk.kql import syntax as K

__all__ = ["CompiledQuery", "CompiledTable", "QueryCompiler", "TableResolver", "TableSource"]


class QueryCompiler(CompileContext):
    """Compiles one parsed KQL query.

    >>> from bzrk.kql.parser import parse
    >>> table = QueryCompiler().compile(parse("print x = 1")).tables[0]
    >>> table.sql
    'SELECT toInt64(1) AS `x`'
    >>> table.capped(2001).sql
    'SELECT toInt64(1) AS `x`\\nLIMIT 2001'
    """

    operators = OPERATORS
    sources = SOURCES
    pattern_source = staticmethod(pattern_relation)

    def compile(self, query: K.Query) -> CompiledQuery:
        result = CompiledQuery()
        self.bag_paths = bag_paths.collect_paths(query)
        self.bag_searches = bag_search.collect(query)
        for statement in query.statements:
            if isinstance(statement, K.LetStatement):
                self.lets[statement.name] = self.let_value(statement.value)
            elif isinstance(statement, K.ExprStatement):
                relation = self.tabular(statement.expr)
                if getattr(relation, "graph", None) is not None:
                    raise unsupported(statement, "a query cannot end with a graph")
                result.tables.append(
                    self.result_table(relation, self._table_name(relation, len(result.tables)))
                )
                result.tables.extend(self.pending_results)
                self.pending_results = []
            elif isinstance(statement, K.SetOption):
                # Options that expressions read (bin_auto's size and origin) stay visible.
                if statement.value is not None:
                    self.options[statement.name.lower()] = statement.value
            elif isinstance(statement, K.DeclareParameters):
                continue
            elif isinstance(statement, K.DeclarePattern):
                declare_pattern(self, statement)
            else:
                raise unsupported(statement, f"{type(statement).__name__} is not supported")
        result.visualization = self.visualization
        result.budgets = list(self.budgets)
        result.facts = registry_facts.plan_facts(
            [t.plan for t in result.tables], self.registry_readers
        )
        result.preparations = dict(self.preparations)
        if self.window_read:
            result.window_dependent = True
            result.window = self.request_window
        return result

    def _table_name(self, relation: Relation, index: int) -> str:
        named = self.result_names.get(relation.name)
        if named:
            return named
        return PRIMARY_RESULT if index == 0 else f"Table_{index}"
