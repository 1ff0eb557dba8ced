"""The `scan` operator: KQL's step state machine as one ClickHouse `arrayFold` per partition.

The ordered input rows are gathered into one array (per mv-apply/partition group); the fold
visits every (row, step) pair, steps in reverse order as the documented matching logic says,
carrying the state of each step (an active flag, its match id and one record slot per step)
and the list of emitted (row index, match id, step, declared values). An ARRAY JOIN turns that
list back into rows. Each record slot holds the input columns and the declared columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.literals import literal
from bzrk.engine.compile.rewrite import qualified_refs
from bzrk.engine.compile.row_order import numbered, partition_column
from bzrk.engine.compile.scope import Scope
from bzrk.engine.compile.typed import Typed, cast_to
from bzrk.engine.errors import THROWN
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation

_ACC = "__scan_acc"
_EL = "__scan_el"
_ROWS = "__scan_rows"

# arrayFold evaluates its lambda once per (row, step) and copies the growing output list at
# each one, so a group costs O(rows²): about 3 s for 10 000 rows, 12 s for 30 000. Larger
# groups are refused with a clear error instead of running into the query timeout.
MAX_GROUP_ROWS = 20_000


def _sql(expr: S.Expr) -> str:
    return S.render_expr(expr)


def _tup(items: list[str]) -> str:
    return "tuple(" + ", ".join(items) + ")"


def _el(expr: str, index: int) -> str:
    return f"tupleElement({expr}, {index})"


def op_scan(ctx: CompileContext, op: K.Scan, relation: Relation) -> Relation:

    if not op.steps:
        raise unsupported(op, "scan needs at least one step")
    params = {p.name.lower(): p.value for p in op.params}
    match_id = params.get("with_match_id")
    match_col = match_id.name if isinstance(match_id, K.NameRef) else None
    part = partition_column(ctx, relation)
    relation = numbered(ctx, relation)
    inputs = [(n, t) for n, t in relation.columns if n not in ("__rn", part)]
    scope0 = ctx.scope()
    declared: list[tuple[str, str, Typed]] = []
    for decl in op.declares:
        kql_type = normalize_kql_type(decl.type) if decl.type else "dynamic"
        if decl.default is not None:
            default = cast_to(ExprCompiler(scope0).compile(decl.default), kql_type)
        else:
            default = literal(kql_type, None)
        declared.append((decl.name, kql_type, default))
    names = [n for n, _ in inputs] + [n for n, _, _ in declared]
    types = [t for _, t in inputs] + [t for _, t, _ in declared]
    steps = list(op.steps)
    n = len(steps)
    step_names = [s.name for s in steps]
    if len(set(step_names)) != n:
        raise unsupported(op, "scan step names must be unique", code="InvalidArgument")

    slot_type = "Tuple(" + ", ".join([clickhouse_type(t) for t in types] + ["UInt8"]) + ")"
    state_type = "Tuple(UInt8, Int64, " + ", ".join([slot_type] * n) + ")"
    out_type = f"Tuple(UInt64, Int64, UInt8, {slot_type})"
    acc_type = "Tuple(" + ", ".join([state_type] * n + ["Int64", f"Array({out_type})"]) + ")"
    empty_values = [
        "''" if t == "string" else f"CAST(NULL, {S.quote_string(clickhouse_type(t))})"
        for _, t in inputs
    ] + [_sql(d.sql) for _, _, d in declared]
    empty_slot = _tup([*empty_values, "0"])
    empty_state = _tup(["0", "-1"] + [empty_slot] * n)
    row = f"arrayElement({_ROWS}, {_el(_EL, 1)})"

    def state_scope(state: str) -> Scope:
        columns: dict[str, Typed] = {}
        for i, (name, kql_type) in enumerate(inputs):
            columns[name] = Typed(S.verbatim(_el(row, i + 2)), kql_type)
        for name, kql_type, default in declared:
            columns[name] = Typed(default.sql, kql_type)
        for k, step_name in enumerate(step_names):
            slot = _el(state, 3 + k)
            for i, (name, kql_type) in enumerate(zip(names, types, strict=True)):
                columns[f"{step_name}.{name}"] = Typed(S.verbatim(_el(slot, i + 1)), kql_type)
        return ctx.scope(columns=columns)

    def record(step: K.ScanStep, state: str) -> str:
        """The slot a match stores (and outputs): the row, with the step's assignments."""
        compiler = ExprCompiler(state_scope(state))
        assigned: dict[str, str] = {}
        for item in step.assignments:
            target = item.names[0]
            if target not in names:
                raise unsupported(item, f"unknown scan column '{target}'", code="UnknownName")
            kql_type = types[names.index(target)]
            value = compiler.compile(qualified_refs(item.expr, set(step_names)))
            assigned[target] = _sql(cast_to(value, kql_type).sql)
        defaults = [_el(row, i + 2) for i in range(len(inputs))] + [
            _sql(d.sql) for _, _, d in declared
        ]
        values = [assigned.get(name, dflt) for name, dflt in zip(names, defaults, strict=True)]
        return _tup([*values, "1"])

    def condition(step: K.ScanStep, state: str) -> str:
        compiler = ExprCompiler(state_scope(state))
        cond = compiler.compile(qualified_refs(step.condition, set(step_names)))
        return f"ifNull({_sql(compiler.as_bool(cond))}, false)"

    def acc_with(states: dict[int, str], counter: str, outputs: str) -> str:
        parts = [states.get(j, _el(_ACC, j + 1)) for j in range(n)] + [counter, outputs]
        return f"CAST({_tup(parts)}, {S.quote_string(acc_type)})"

    def emit(outputs: str, k: int, mid: str, slot: str, mode: str) -> str:
        entry = _tup([_el(_EL, 1), mid, str(k + 1), slot])
        if mode == "none":
            return outputs
        if mode == "last":
            # Repeated matches of an output=last step replace the step's previous output.
            last = f"arrayElement({outputs}, -1)"
            repeat = (
                f"length({outputs}) > 0 AND {_el(last, 3)} = {k + 1} AND {_el(last, 2)} = {mid}"
            )
            outputs = f"if({repeat}, arrayPopBack({outputs}), {outputs})"
        return f"arrayPushBack({outputs}, {entry})"

    counter = _el(_ACC, n + 1)
    outputs = _el(_ACC, n + 2)
    branches: list[str] = []
    for k, step in enumerate(steps):
        cur = _el(_ACC, k + 1)
        # Check 2: the step's own active sequence (or the first step) matches again.
        rec2 = record(step, cur)
        slots2 = [rec2 if j == k else _el(cur, 3 + j) for j in range(n)]
        if k == 0:
            active = f"{_el(cur, 1)} = 1"
            mid2 = f"if({active}, {_el(cur, 2)}, {counter} + 1)"
            counter2 = f"if({active}, {counter}, {counter} + 1)"
            cond2 = condition(step, cur)
        else:
            mid2 = _el(cur, 2)
            counter2 = counter
            cond2 = f"{_el(cur, 1)} = 1 AND {condition(step, cur)}"
        state2 = _tup(["1", mid2, *slots2])
        acc2 = acc_with({k: state2}, counter2, emit(outputs, k, mid2, rec2, step.output))
        body = f"if({cond2}, {acc2}, {_ACC})"
        if k > 0:
            # Check 1: the previous step's sequence advances to this step.
            prev = _el(_ACC, k)
            rec1 = record(step, prev)
            slots1 = [rec1 if j == k else _el(prev, 3 + j) for j in range(n)]
            state1 = _tup(["1", _el(prev, 2), *slots1])
            out_mode = "all" if step.output == "last" else step.output
            acc1 = acc_with(
                {k: state1, k - 1: empty_state},
                counter,
                emit(outputs, k, _el(prev, 2), rec1, out_mode),
            )
            cond1 = f"{_el(prev, 1)} = 1 AND {condition(step, prev)}"
            body = f"if({cond1}, {acc1}, {body})"
        branches.append(f"{_el(_EL, 2)} = {k + 1}, {body}")
    fold_body = "multiIf(" + ", ".join(branches) + f", {_ACC})"
    init = acc_with(
        dict.fromkeys(range(n), empty_state),
        "-1",
        f"CAST([], {S.quote_string(f'Array({out_type})')})",
    )
    order = ", ".join(str(k + 1) for k in reversed(range(n)))
    too_many = S.quote_string(
        f"{THROWN}scan: a group has more than {MAX_GROUP_ROWS} rows; narrow the input first "
        "(where, partition by, summarize)"
    )
    pairs = (
        f"arraySlice(arrayFlatten(arrayMap(__scan_i -> arrayMap(__scan_k -> tuple(__scan_i, toUInt8(__scan_k)), "
        f"[{order}]), range(1, length({_ROWS}) + 1))), "
        f"1 + throwIf(length({_ROWS}) > {MAX_GROUP_ROWS}, {too_many}))"
    )
    fold = f"arrayFold(({_ACC}, {_EL}) -> {fold_body}, {pairs}, {init})"

    group_cols: list[S.Expr] = [S.Col(part)] if part else []
    # Each value is cast to its column's declared type, so the state tuples have one shape.
    tuple_row = S.verbatim(
        _tup(
            ["`__rn`"]
            + [
                f"CAST({S.quote_identifier(name)}, {S.quote_string(clickhouse_type(kql_type))})"
                for name, kql_type in inputs
            ]
        )
    )
    gathered = ctx.new_cte(
        S.Select(
            columns=[(S.Col(part), part) for part in ([part] if part else [])]
            + [
                (
                    S.Template(
                        "arraySort(__scan_r -> tupleElement(__scan_r, 1), groupArray({0}))",
                        [tuple_row],
                    ),
                    _ROWS,
                )
            ],
            from_=relation.source(),
            group_by=group_cols or None,
        ),
        [],
    )
    folded = ctx.new_cte(
        S.Select(
            columns=[(S.Col(part), part) for part in ([part] if part else [])]
            + [(S.Col(_ROWS), _ROWS), (S.verbatim(_el(fold, n + 2)), "__scan_out")],
            from_=gathered.source(),
        ),
        [],
    )
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    for i, (name, column_type) in enumerate(zip(names, types, strict=True)):
        columns.append((S.verbatim(_el(_el("`__scan_o`", 4), i + 1)), name))
        out.append((name, column_type))
    if match_col:
        columns.append((S.verbatim(_el("`__scan_o`", 2)), match_col))
        out.append((match_col, "long"))
    if part:
        columns.append((S.Col(part), part))
        out.append((part, dict(relation.columns)[part]))
    query = S.Select(
        columns=columns,
        from_=folded.source(),
        array_join=[(S.Col("__scan_out"), "__scan_o")],
    )
    return ctx.new_cte(query, out, ordered=True)
