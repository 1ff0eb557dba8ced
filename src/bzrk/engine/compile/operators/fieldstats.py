"""Berserk's ``fieldstats``: which fields a sample of rows has, of which type, how often.

``T | fieldstats [col, bag, bag.sub, …] [with limit=N depth=M field="*glob*"]`` answers one
row per field path: ``AttributePath`` (dotted: ``resource.service.name``), ``Type`` (the KQL
type its values are stored as, ``dynamic`` for an object or array or when records disagree),
``Cardinality`` (distinct values), ``Frequency`` (the share of sampled rows that have it, 0-1)
and ``Hint`` (``{"types": [...], "examples": [...]}``: the stored types and up to three
frequent values). ``limit`` is the number of rows sampled (default 2000), ``depth`` how many
levels below each named column paths go (default 5; with no column the record's columns are
the first level, so ``depth=1`` lists only them), ``field`` keeps paths matching a glob
(case-insensitive). No column, ``_`` or ``$raw`` means every column of the input.

The sample is ``limit`` rows drawn across the whole input: the rows with the smallest hash of
their scalar values (:func:`sample`), so a table holding logs, spans and metrics sorted by
service is sampled across all three, and the same input gives the same sample wherever a plan
reads it twice. A filter or time window before it bounds what is read. The paths of a bag come
from its JSON text, one level of keys at a time (``JSONExtractKeysAndValuesRaw``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.typed import T, Typed, to_string
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext

DEFAULT_SAMPLE = 2_000
DEFAULT_DEPTH = 5
MAX_DEPTH = 8
OUTPUT = [
    ("AttributePath", "string"),
    ("Type", "string"),
    ("Cardinality", "long"),
    ("Frequency", "real"),
    ("Hint", "dynamic"),
]

# A JSON value's type (ClickHouse's JSONType) → the KQL type a user sees.
_KQL_TYPE = (
    "multiIf({0} IN ('Int64', 'UInt64'), 'long', {0} = 'Double', 'real', {0} = 'Bool', 'bool', "
    "{0} = 'String', 'string', 'dynamic')"
)


def op_fieldstats(ctx: CompileContext, op: K.FieldStats, relation: Relation) -> Relation:
    params = {p.name: p for p in op.params}
    sample = _int_param(ctx, params.get("limit"), DEFAULT_SAMPLE, "limit")
    depth = min(_int_param(ctx, params.get("depth"), DEFAULT_DEPTH, "depth"), MAX_DEPTH)
    glob = _glob_param(ctx, params.get("field"))
    targets = _targets(ctx, op, relation, depth)

    # 1. the sample: each target's value (text, NULL when the row lacks it), and the row count.
    columns: list[tuple[S.Expr, str]] = []
    for i, (_, value, _, _) in enumerate(targets):
        text = value.sql if value.type == "dynamic" else T("if(isNull({0}), NULL, {1})", value.sql,
                                                           to_string(value))  # fmt: skip
        columns.append((text, f"v{i}"))
    out = [(f"v{i}", "string") for i in range(len(targets))]
    sampled = ctx.select(sample_rows(ctx, relation, sample), columns, out)
    counted = ctx.select(
        sampled,
        [
            *((S.Col(n), n) for n, _ in out),
            (T("count() OVER ()"), "n"),
            (T("rowNumberInAllBlocks()"), "r"),
        ],
        [*out, ("n", "long"), ("r", "long")],
    )

    # 2. one row per (row, field): (path, stored type, value text).
    entries = [_entries(path, kql_type, S.Col(f"v{i}"), d)
               for i, (path, _, kql_type, d) in enumerate(targets)]  # fmt: skip
    fields = T("arrayConcat(" + ", ".join(f"{{{i}}}" for i in range(len(entries))) + ")", *entries)
    exploded = S.Select(
        columns=[
            (T("f.1"), "path"),
            (T("f.2"), "type"),
            (T("f.3"), "value"),
            (S.Col("n"), "n"),
            (S.Col("r"), "r"),
        ],
        from_=counted.source(),
        array_join=[(fields, "f")],
        where=T("f.1 ILIKE {0}", S.Lit(glob)) if glob is not None else None,
    )
    flat = ctx.new_cte(exploded, [("path", "string"), ("type", "string"), ("value", "string"),
                                  ("n", "long"), ("r", "long")])  # fmt: skip

    # 3. per path.
    hint = T(
        "concat('{{\"types\":', toJSONString(arraySort(groupUniqArray(type))), "
        "',\"examples\":', toJSONString(topKIf(3)(value, value IS NOT NULL)), '}}')"
    )
    result = ctx.select(
        flat,
        [
            (S.Col("path"), "AttributePath"),
            (T("if(uniqExact(type) = 1, any(type), 'dynamic')"), "Type"),
            (T("toInt64(uniqExact(value))"), "Cardinality"),
            (T("toFloat64(uniqExact(r) / any(n))"), "Frequency"),
            (hint, "Hint"),
        ],
        OUTPUT,
        group_by=[S.Col("path")],
        order_by=[(S.Col("Frequency"), True, False), (S.Col("AttributePath"), False, False)],
    )
    result.ordered = True
    return result


def _targets(
    ctx: CompileContext, op: K.FieldStats, relation: Relation, depth: int
) -> list[tuple[str, Typed, str, int]]:
    """(path, value, KQL type, levels below it) of every field root the operator names."""
    named = [c for c in op.columns if not (isinstance(c, K.NameRef) and c.name in ("_", "$raw"))]
    if not named:
        return [
            (name, ctx.expr(relation, K.NameRef(op.span, name)), kql_type, depth - 1)
            for name, kql_type in relation.visible_columns()
        ]
    targets = []
    for node in named:
        path = _path_name(node)
        if path is None:
            raise unsupported(node, "fieldstats takes columns and paths (resource.k8s)",
                              code="InvalidArgument")  # fmt: skip
        value = ctx.expr(relation, node)
        targets.append((path, value, value.type, depth))
    return targets


def _entries(path: str, kql_type: str, text: S.Expr, depth: int) -> S.Expr:
    """The fields of one target in one row: ``[(path, type, value)]``, empty when absent."""
    if kql_type != "dynamic" or depth <= 0:
        shown = "dynamic" if kql_type == "dynamic" else kql_type
        return T("if(isNull({0}) OR {0} = 'null', [], [tuple({1}, {2}, {0})])", text,
                 S.Lit(path), S.Lit(shown))  # fmt: skip
    # A bag: its keys, and the keys of objects under them, `depth` levels down (an object
    # at the last level is one dynamic field); each level parses only the sub-objects. A
    # stored bag's keys are flat (bag_paths.STORED_BAGS: `resource.service.name` is one key,
    # one level), so its leaf paths are read whole.
    root = path.split(".", 1)[0]
    levels = bag_paths.FLAT_LEVELS if root in bag_paths.STORED_BAGS else depth
    level = bag_paths.keys_and_values(levels)
    entry = (
        "arrayMap(e -> tuple(concat({1}, '.', e.1), " + _KQL_TYPE.format("JSONType(e.2)") + ", "
        "if(JSONType(e.2) = 'String', JSONExtractString(e.2), e.2)), "
        f"arrayFilter(e -> JSONType(e.2) != 'Null', {level}))"
    )
    as_object = T(entry, text, S.Lit(path))
    # A value that is no object (an array, a scalar) is one field of the bag's own path.
    whole = T("if(isNull({0}) OR {0} = 'null', [], [tuple({1}, 'dynamic', {0})])", text,
              S.Lit(path))  # fmt: skip
    return T("if(startsWith(ifNull({0}, ''), '{{'), {1}, {2})", text, as_object, whole)


def _path_name(node: K.Expr) -> str | None:
    if isinstance(node, K.NameRef):
        return node.name
    if isinstance(node, K.Member):
        head = _path_name(node.target)
        return None if head is None else f"{head}.{node.name}"
    if (
        isinstance(node, K.Index)
        and isinstance(node.index, K.Literal)
        and isinstance(node.index.value, str)
    ):
        head = _path_name(node.target)
        return None if head is None else f"{head}.{node.index.value}"
    return None


def sample_rows(ctx: CompileContext, relation: Relation, size: int) -> Relation:
    """``size`` rows of ``relation`` spread over all of it, the same rows at every read.

    A bare ``LIMIT`` takes the first rows in storage order, which in a table sorted by
    (service, metric_name, span_name, timestamp) can all be one signal of one service. Ordering by a hash
    of each row's scalar values picks rows independently of that order, and deterministically
    (``rand()`` would pick other rows each time a CTE is read). Bags are left out of the hash:
    they cost a serialisation per row and the scalars already tell rows apart.
    """
    names = [n for n, _ in relation.columns if not n.startswith("__")]
    scalars = [n for n, t in relation.columns if n in names and t != "dynamic"] or names
    key = T(
        "sipHash64(tuple(" + ", ".join(f"{{{i}}}" for i in range(len(scalars))) + "))",
        *(relation.column(n) for n in scalars),
    )
    return ctx.select(
        relation,
        [(relation.column(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=[(key, False, False)],
        limit=S.Lit(size),
    )


def sample_size(ctx: CompileContext, param: K.OperatorParam | None) -> int:
    """The ``limit=`` parameter: how many rows are sampled (checked as fieldstats checks it)."""
    return _int_param(ctx, param, DEFAULT_SAMPLE, "limit")


def _int_param(ctx: CompileContext, param: K.OperatorParam | None, default: int, name: str) -> int:
    if param is None:
        return default
    value = param.value.value if isinstance(param.value, K.Literal) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise unsupported(param, f"fieldstats {name} must be a positive whole number",
                          code="InvalidArgument")  # fmt: skip
    return value


def _glob_param(ctx: CompileContext, param: K.OperatorParam | None) -> str | None:
    if param is None:
        return None
    value = param.value.value if isinstance(param.value, K.Literal) else None
    if not isinstance(value, str) or not value:
        raise unsupported(param, 'fieldstats field must be a glob string ("*status*")',
                          code="InvalidArgument")  # fmt: skip
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


__all__ = ["OUTPUT", "op_fieldstats", "sample_rows", "sample_size"]
