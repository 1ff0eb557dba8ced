"""The operator table: which function compiles each tabular operator.

Adding an operator is one module under ``operators/`` (a function ``(ctx, op, relation) ->
Relation``, or ``(ctx, op) -> Relation`` for one that starts a pipeline) and one entry here,
keyed by the operator's syntax node class (``bzrk.kql.syntax``).
"""

from __future__ import annotations

from collections.abc import Mapping

from bzrk.engine.compile.context import Operator, Source
from bzrk.engine.compile.operators import (
    annotate,
    combine,
    expand,
    extend,
    fieldstats,
    find,
    graph,
    graph_match,
    log_stats,
    make_series,
    parsing,
    partition,
    plugins,
    project,
    reduce,
    results,
    rows,
    scan,
    search,
    sources,
    summarize,
    top_hitters,
    topnested,
    trace_find,
    union_sources,
    where,
)
from bzrk.kql import syntax as K

# Pipe operators: `T | op`.
OPERATORS: Mapping[type, Operator] = {
    K.Where: where.op_where,
    K.Extend: extend.op_extend,
    K.Project: extend.op_project,
    K.ProjectAway: project.op_project_away,
    K.ProjectKeep: project.op_project_keep,
    K.ProjectRename: project.op_project_rename,
    K.ProjectReorder: project.op_project_reorder,
    K.ProjectByNames: project.op_project_by_names,
    K.Sort: rows.op_sort,
    K.Take: rows.op_take,
    K.Tail: rows.op_tail,
    K.Top: rows.op_top,
    K.Count: rows.op_count,
    K.Distinct: rows.op_distinct,
    K.Sample: rows.op_sample,
    K.SampleDistinct: rows.op_sample_distinct,
    K.Summarize: summarize.op_summarize,
    K.TopNested: topnested.op_top_nested,
    K.TopHitters: top_hitters.op_top_hitters,
    K.Reduce: reduce.op_reduce,
    K.MvExpand: expand.op_mv_expand,
    K.MvApply: expand.op_mv_apply,
    K.MakeSeries: make_series.op_make_series,
    K.Union: combine.op_union_pipe,
    K.Join: combine.op_join,
    K.Lookup: combine.op_join,
    K.Parse: parsing.op_parse,
    K.ParseKv: parsing.op_parse_kv,
    K.Scan: scan.op_scan,
    K.Partition: partition.op_partition,
    K.Search: search.op_search,
    K.Evaluate: plugins.op_evaluate,
    K.MakeGraph: graph.op_make_graph,
    K.GraphMatch: graph_match.op_graph_match,
    K.GraphToTable: graph.op_graph_to_table,
    K.GraphMarkComponents: graph.op_graph_mark_components,
    K.Render: results.op_render,
    K.As: results.op_as,
    K.Serialize: results.op_serialize,
    K.GetSchema: results.op_getschema,
    K.Fork: results.op_fork,
    K.Facet: results.op_facet,
    K.FieldStats: fieldstats.op_fieldstats,
    K.TraceFind: trace_find.op_trace_find,
    K.Annotate: annotate.op_annotate,
    K.OtelLogStats: log_stats.op_otel_log_stats,
    K.Invoke: results.op_invoke,
}

# Operators that start a pipeline: `print …`, `datatable(…)[…]`, `range …`, `union …`, …
SOURCES: Mapping[type, Source] = {
    K.Print: sources.src_print,
    K.DataTable: sources.src_datatable,
    K.Range: sources.src_range,
    K.Union: combine.src_union,
    K.Search: search.src_search,
    K.Find: find.src_find,
    K.ExternalData: union_sources.src_external_data,
}

__all__ = ["OPERATORS", "SOURCES"]
