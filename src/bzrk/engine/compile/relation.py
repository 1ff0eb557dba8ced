"""The values the compiler passes around: relations (a CTE and its schema), table sources and results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths, registry_facts
from bzrk.engine.compile.summarize_budget import SummarizeBudget
from bzrk.engine.events import Column, Visualization
from bzrk.kql import syntax as K


@dataclass
class Relation:
    """A compiled tabular value: a CTE name and its schema."""

    name: str
    columns: list[tuple[str, str]]
    ordered: bool = False
    # Bag columns whose native path values ride along as hidden columns (bag_paths.py).
    bags: dict[str, bag_paths.BagPaths] = field(default_factory=dict)
    # Set when this relation is a stored table read as is (every row, no filter).
    stored: S.TableRef | None = None
    # Types `annotate` declared for dynamic paths: ("log", "level") -> "string" (annotated.py).
    annotations: dict[tuple[str, ...], str] = field(default_factory=dict)

    def source(self, alias: str | None = None) -> S.Source:
        return S.TableRef(None, self.name, alias)

    def visible_columns(self) -> list[tuple[str, str]]:
        """The columns a user sees (not `$raw`, the record again, nor hidden `__` columns)."""
        return [(n, t) for n, t in self.columns if not n.startswith(("$", "__"))]

    def column(self, name: str) -> S.Col:
        """How a reader spells column ``name`` (a bag with native paths carries them along)."""
        paths = self.bags.get(name)
        return S.Col(name) if paths is None else bag_paths.NativeBag(name, paths=paths)


@dataclass
class TableSource:
    """A bzrk table as the resolver names it: its ClickHouse location and KQL schema."""

    database: str
    table: str
    columns: list[tuple[str, str]]
    # JSON columns the compiler may read paths of natively: column -> {typed path: CH type}.
    bags: dict[str, dict[str, str]] = field(default_factory=dict)
    # The table's JSON path registry (storage/json_paths.py: columns `bag`, `json_path`),
    # quoted and qualified; None reads every path's sub-object.
    path_registry: str | None = None
    # How each column stores a record's absent field (storage/schema.py ABSENCE): "null",
    # "[]", "{}", "never", or a sentinel such as "''". KQL reads every one of them as null.
    absent: dict[str, str] = field(default_factory=dict)
    # Columns of the schema the table computes on read instead of storing: name -> ClickHouse
    # expression over its stored columns (storage/schema.py COMPUTED: ``$raw``).
    computed: dict[str, str] = field(default_factory=dict)
    # Computed columns whose distinct values are those of stored columns, disjoint: name ->
    # those columns (storage/schema.py DISTINCT_PARTS: an id's bytes and text). ``dcount``
    # counts each of them instead of computing the column (sql.DistinctCount).
    distinct_parts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Runs SQL against the table's store: a run reads the registry's facts through it
    # (registry_facts.RegistryFacts) instead of asking them inside its SQL. None: the SQL asks.
    registry_reader: Callable[[str], list[dict[str, Any]]] | None = field(
        default=None, compare=False, repr=False
    )


class TableResolver:
    """Maps a KQL table name to a ClickHouse table; the storage package provides the real one."""

    def resolve(self, name: str) -> TableSource | None:
        return None

    def table_names(self) -> tuple[str, ...]:
        """Every table of the database (what a leading `search` without `in` looks in)."""
        return ()


# A request's event-time window in 100 ns ticks since the Unix epoch: [start, end).
QueryWindow = tuple[int, int]


@dataclass
class CompiledTable:
    """A result table as a plan tree, rendered to SQL only per run (:meth:`render`)."""

    name: str
    # The final SELECT with its CTE chain, after the fuse and prune passes. Stored-table reads
    # hold S.ScanBounds and the final SELECT may end in an S.RowCap: both take their values
    # when the plan is rendered for a run.
    plan: S.Query
    columns: tuple[Column, ...]
    # The final SELECT ends in a RowCap (it had no LIMIT of its own): a row cap can go there.
    cappable: bool = False
    # The rows the RowCap lets through (None: no LIMIT).
    row_cap: int | None = None
    # Its rows are groups (the statement aggregates): few and narrow, so a run may read in
    # ClickHouse's own block size instead of the small blocks a stream of raw rows needs.
    grouped: bool = False
    # One row whatever the input (the statement ends in `count` or a `summarize` without
    # `by`): nothing to stream.
    one_row: bool = False

    def capped(self, cap: int) -> CompiledTable:
        """This table with its result cut at ``cap`` rows, inside the final SELECT."""
        return replace(self, row_cap=cap, cappable=False)

    def render(
        self, bounds: S.Expr | None = None, facts: registry_facts.FactValues | None = None
    ) -> str:
        """The runnable SQL, every stored-table read limited to ``bounds`` (None: all rows),
        with the registry ``facts`` a run read (None: the SQL asks for them)."""
        return S.render(self.plan, S.Bindings(bounds, self.row_cap, facts))

    @property
    def sql(self) -> str:
        """The SQL over every row (for reading and tests; a run renders its own window)."""
        return self.render()

    def bound(
        self, bounds: S.Expr | None, facts: registry_facts.FactValues | None = None
    ) -> RenderedTable:
        """This table rendered for one run over ``bounds`` (with the run's registry facts)."""
        bindings = S.Bindings(bounds, self.row_cap, facts)
        return RenderedTable(
            self.name, self.render(bounds, facts), self.columns, self.plan, bindings, self.grouped
        )


@dataclass(frozen=True, slots=True)
class RenderedTable:
    """A result table's SQL for one run: rendered once, sent as it is."""

    name: str
    sql: str
    columns: tuple[Column, ...]
    # The plan and the run's values it was rendered from (for the run's EXPLAIN).
    plan: S.Query
    bindings: S.Bindings
    grouped: bool = False  # CompiledTable.grouped

    def explain_sql(self) -> str:
        """The ``EXPLAIN`` of this run's query (rendered only when the service asks for it)."""
        return S.render_explain(self.plan, self.bindings)


@dataclass(frozen=True, slots=True)
class RenderedQuery:
    """Every result table of a query rendered for one run."""

    tables: list[RenderedTable]
    visualization: Visualization | None = None


@dataclass
class CompiledQuery:
    tables: list[CompiledTable] = field(default_factory=list)
    visualization: Visualization | None = None
    # Every summarize under a memory budget (only when the compiler was given a BudgetPolicy).
    budgets: list[SummarizeBudget] = field(default_factory=list)
    # Whether the SQL depends on the request's time window (bin_auto sizes its bins from it,
    # make-series without from/to spans it), and the window it was compiled for then: such a
    # plan serves only requests over the same window.
    window_dependent: bool = False
    window: QueryWindow | None = None
    # The path-registry facts the SQL depends on (bag_paths.py), read afresh by every run:
    # a cached plan never holds them.
    facts: registry_facts.RegistryFacts | None = None
    # What must exist in the backend before a run (key -> create(backend)), such as
    # parse_user_agent's dictionaries; the query service calls each before every run's plan,
    # so create() is idempotent and returns at once for a backend it has served.
    preparations: dict[str, Callable[[Any], None]] = field(default_factory=dict)

    def bound(self, bounds: S.Expr | None) -> RenderedQuery:
        """This query rendered for one run, every stored-table read limited to ``bounds``, with
        the registry's facts as they are now (one small query when the plan has any)."""
        facts = self.facts.read() if self.facts is not None else None
        return self._rendered(bounds, facts)

    def bound_from_memory(self, bounds: S.Expr | None) -> RenderedQuery | None:
        """:meth:`bound` without blocking: None when the plan's registry facts are not in
        memory (then :meth:`bound` reads them, in a worker thread)."""
        if self.facts is None:
            return self._rendered(bounds, None)
        facts = self.facts.in_memory()
        return None if facts is None else self._rendered(bounds, facts)

    def _rendered(
        self, bounds: S.Expr | None, facts: registry_facts.FactValues | None
    ) -> RenderedQuery:
        return RenderedQuery([t.bound(bounds, facts) for t in self.tables], self.visualization)


@dataclass
class UserFunction:
    params: tuple[K.Param, ...]
    body: tuple[K.Statement, ...]
