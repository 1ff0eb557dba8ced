"""The ClickHouse settings every compiled query relies on for KQL's semantics.

Every run of a compiled plan sends them (the query service, and tools that time its SQL such as
``bench/show_sql.py``); without them the same SQL answers otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable

from bzrk.engine import sql as S

# Settings every compiled query relies on for KQL semantics.
SEMANTIC_SETTINGS: dict[str, str | int | float] = {
    # `extend x = x + 1, y = x` must see the input column, not the new alias.
    "prefer_column_name_to_alias": 1,
    # Outer joins fill missing sides with nulls, as KQL does, not with type defaults.
    "join_use_nulls": 1,
    # mv-expand of several arrays pads the shorter ones with nulls.
    "enable_unaligned_array_join": 1,
    "output_format_arrow_low_cardinality_as_dictionary": 0,
    # Inlined KQL expressions can be long; ClickHouse folds the repeated parts.
    "max_query_size": 16 * 1024 * 1024,
    # The binder accepts expressions 300 levels deep (kql/binder/core.py MAX_BIND_DEPTH),
    # which ClickHouse parses and analyses as about three AST levels each.
    "max_ast_depth": 4000,
    "max_parser_depth": 4000,
    # Dynamic values are JSON text; Kusto writes '/' unescaped, and a bag path read natively
    # (compile/bag_paths.py) must spell its text as the whole bag's text does.
    "output_format_json_escape_forward_slashes": 0,
    # A string becomes a JSON value as the string it is: a cast to `JSON` (`$raw`, made from
    # the record's columns) otherwise guesses a DateTime64 for "2026-12-07T21:32:46Z", as
    # inserts would (storage/schema.py INSERT_SETTINGS).
    "input_format_try_infer_dates": 0,
    "input_format_try_infer_datetimes": 0,
}


def plan_settings(plans: Iterable[S.Query]) -> dict[str, str | int | float]:
    """Settings a run needs for what its plans hold, beyond :data:`SEMANTIC_SETTINGS`.

    A plan that computes a CTE once (``AS MATERIALIZED``: a CTE numbering its rows, read twice,
    compile/passes/materialize.py) needs ``enable_materialized_cte``; it is sent only then, so
    a ClickHouse server that predates the setting still answers every other plan.
    """
    if any(plan.materialized for plan in plans):
        return {"enable_materialized_cte": 1}
    return {}
