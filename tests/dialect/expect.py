"""The assertion vocabulary of the corpora (``expect:`` in the YAML files).

Keys, all optional, combined with "and":

* ``error: CODE | any`` — the query fails with that error code (any coded error for ``any``);
  without ``error`` a failing query is a problem.
* ``columns: [..]`` exact column names in order; ``has_columns: [..]`` these are present;
  ``types: {col: kql type}``.
* ``rows: N | ">0" | ">=N" | "<=N" | "<N"`` the row count.
* ``each: {col: check}`` every row passes; ``any: {col: check}`` at least one row passes all.
  A check is a literal (equality) or a mapping of ``eq ne gt ge lt le between in contains
  contains_ci startswith match len len_le len_ge type isnull isnotnull nonempty``.
* ``unique: [cols]`` no two rows share these values; ``sorted: {col: asc|desc}``.
* ``values: [[..], ..]`` exact rows (order-insensitive unless ``ordered: true``); datetime and
  timespan cells may be written as text (``"2024-01-15T10:30:00Z"``, ``"01:00:00"``).
* ``visualization: timechart`` the render type.
* ``profile: fieldstats`` the columns and invariants of a ``fieldstats`` table.
* ``oracle: name`` a check against the demo generator (``demo_facts.ORACLES``) or the known-answer
  dataset.
* ``tables: {Name: {...}}`` / ``tables_by_index: [{...}, ..]`` / ``tables_min: N`` /
  ``first: {...}`` checks of a multi-table result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from .results import Result, Table, datetime_ticks, is_number, timespan_ticks

FIELDSTATS_COLUMNS = ["AttributePath", "Type", "Cardinality", "Frequency", "Hint"]
Oracles = Mapping[str, Callable[[Any, Table], list[str]]]


def check(expect: Mapping[str, Any], result: Result, oracles: Oracles, facts: Any) -> list[str]:
    wanted_error = expect.get("error")
    if result.error_code is not None:
        if wanted_error in ("any", result.error_code):
            return []
        return [f"{result.error_code}: {result.error_message}"]
    if wanted_error is not None:
        return [f"expected error {wanted_error}, the query ran ({_shape(result)})"]
    problems: list[str] = []
    if result.status not in ("complete", "stopped_early"):
        problems.append(f"the answer is partial (status {result.status}): not judged on its rows")
        return problems
    if "tables" in expect:
        for name, sub in expect["tables"].items():
            table = result.table(name)
            if table is None:
                problems.append(
                    f"no result table {name!r} (have {[t.name for t in result.tables]})"
                )
            else:
                problems += [f"{name}: {p}" for p in check_table(sub, table, oracles, facts)]
        return problems
    if "tables_by_index" in expect:
        subs = expect["tables_by_index"]
        if len(result.tables) != len(subs):
            return [f"expected {len(subs)} result tables, got {len(result.tables)}"]
        for i, (sub, table) in enumerate(zip(subs, result.tables, strict=True)):
            problems += [f"table {i}: {p}" for p in check_table(sub, table, oracles, facts)]
        return problems
    if "tables_min" in expect and len(result.tables) < expect["tables_min"]:
        problems.append(
            f"expected at least {expect['tables_min']} tables, got {len(result.tables)}"
        )
    if "first" in expect:
        problems += check_table(expect["first"], result.primary, oracles, facts)
    if "visualization" in expect and result.visualization != expect["visualization"]:
        problems.append(f"visualization {result.visualization!r}, want {expect['visualization']!r}")
    rest = {k: v for k, v in expect.items() if k not in ("tables_min", "first", "visualization")}
    if rest:
        problems += check_table(rest, result.primary, oracles, facts)
    return problems


def check_table(expect: Mapping[str, Any], t: Table, oracles: Oracles, facts: Any) -> list[str]:
    problems: list[str] = []
    if expect.get("profile") == "fieldstats":
        problems += _fieldstats(t)
    if "columns" in expect and t.columns != list(expect["columns"]):
        return [f"columns {t.columns}, want {list(expect['columns'])}"]
    missing = [c for c in expect.get("has_columns", ()) if c not in t.columns]
    if missing:
        return [f"missing columns {missing} (have {t.columns})"]
    for col, kql_type in expect.get("types", {}).items():
        if col in t.columns and t.types[t.columns.index(col)] != kql_type:
            problems.append(f"column {col} is {t.types[t.columns.index(col)]}, want {kql_type}")
    if "rows" in expect and not _count_ok(len(t.rows), expect["rows"]):
        problems.append(f"{len(t.rows)} rows, want {expect['rows']}")
    for col, spec in expect.get("each", {}).items():
        if col not in t.columns:
            problems.append(f"no column {col!r} (have {t.columns})")
            continue
        i = t.columns.index(col)
        bad = [row[i] for row in t.rows if not passes(row[i], spec, t.types[i])]
        if bad:
            problems.append(
                f"{col}: {len(bad)} of {len(t.rows)} rows fail {spec!r}, e.g. {bad[:3]!r}"
            )
    if "any" in expect:
        spec = expect["any"]
        if any(c not in t.columns for c in spec):
            problems.append(f"no column among {list(spec)} (have {t.columns})")
        elif not any(
            all(
                passes(row[t.columns.index(c)], s, t.types[t.columns.index(c)])
                for c, s in spec.items()
            )
            for row in t.rows
        ):
            problems.append(f"no row has {spec!r}")
    if "unique" in expect and all(c in t.columns for c in expect["unique"]):
        keys = [tuple(row[t.columns.index(c)] for c in expect["unique"]) for row in t.rows]
        if len(keys) != len(set(map(repr, keys))):
            problems.append(f"rows are not unique by {expect['unique']}")
    for col, direction in expect.get("sorted", {}).items():
        if col in t.columns:
            values = [v for v in t.col(col) if v is not None]
            want = sorted(values, reverse=direction == "desc")
            if values != want:
                problems.append(f"not sorted by {col} {direction}")
    if "values" in expect:
        problems += _values(t, expect["values"], bool(expect.get("ordered")))
    if "oracle" in expect:
        try:
            problems += oracles[expect["oracle"]](facts, t)
        except (IndexError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"oracle {expect['oracle']}: the result does not fit ({exc!r})")
        except AssertionError as exc:
            problems.append(f"oracle {expect['oracle']}: {exc}")
    return problems


def _shape(result: Result) -> str:
    if not result.tables:
        return "no tables"
    t = result.tables[0]
    return f"{len(t.rows)} rows of {t.columns[:6]}"


def _count_ok(n: int, spec: Any) -> bool:
    if isinstance(spec, int):
        return n == spec
    m = re.match(r"^(>=|<=|>|<|==)?\s*(\d+)$", str(spec).strip())
    if not m:
        raise ValueError(f"bad row spec {spec!r}")
    op, k = m.group(1) or "==", int(m.group(2))
    return {">=": n >= k, "<=": n <= k, ">": n > k, "<": n < k, "==": n == k}[op]


def _coerce(want: Any, kql_type: str | None) -> Any:
    if isinstance(want, str) and kql_type == "datetime":
        ticks = datetime_ticks(want)
        return want if ticks is None else ticks
    if isinstance(want, str) and kql_type == "timespan":
        ticks = timespan_ticks(want)
        return want if ticks is None else ticks
    return want


def same(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return got is want or (got == want and type(got) is type(want))
    if is_number(got) and is_number(want):
        return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(got, float) and isinstance(want, float):
        return math.isnan(got) and math.isnan(want)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(same(a, b) for a, b in zip(got, want, strict=True))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in got)
    return bool(got == want)


# Flags of a value spec: a null (or NaN) value passes whatever the checks say, where the
# vendor documents one ("null rates: < 2 points per bin", "NaN in percentiles: empty histogram").
_ALLOWANCES = {
    "or_null": lambda v: v is None,
    "or_nan": lambda v: isinstance(v, float) and math.isnan(v),
}


def passes(value: Any, spec: Any, kql_type: str | None = None) -> bool:
    if not isinstance(spec, Mapping):
        return same(value, _coerce(spec, kql_type))
    if any(spec.get(flag) and allows(value) for flag, allows in _ALLOWANCES.items()):
        return True
    for op, arg in spec.items():
        if op in _ALLOWANCES:
            continue
        arg = _coerce(arg, kql_type)
        if not _op(op, value, arg):
            return False
    return True


def _op(op: str, v: Any, arg: Any) -> bool:
    numeric = is_number(v)
    if op == "eq":
        return same(v, arg)
    if op == "ne":
        return not same(v, arg)
    if op in ("gt", "ge", "lt", "le"):
        if not numeric:
            return False
        return {"gt": v > arg, "ge": v >= arg, "lt": v < arg, "le": v <= arg}[op]
    if op == "between":
        return numeric and arg[0] <= v <= arg[1]
    if op == "in":
        return any(same(v, a) for a in arg)
    if op == "isnull":
        return (v is None) is bool(arg)
    if op == "isnotnull":
        return (v is not None) is bool(arg)
    if op == "nonempty":
        return (v not in (None, "", [], {})) is bool(arg)
    if op == "contains":
        return (isinstance(v, (str, list)) and arg in v) or (isinstance(v, dict) and arg in v)
    if op == "contains_ci":
        return isinstance(v, str) and arg.lower() in v.lower()
    if op == "startswith":
        return isinstance(v, str) and v.startswith(arg)
    if op == "match":
        return isinstance(v, str) and re.match(arg, v) is not None
    if op == "len":
        return hasattr(v, "__len__") and len(v) == arg
    if op == "len_le":
        return hasattr(v, "__len__") and len(v) <= arg
    if op == "len_ge":
        return hasattr(v, "__len__") and len(v) >= arg
    if op == "type":
        names = {"list": list, "dict": dict, "str": str, "string": str, "int": int, "float": float}
        return isinstance(v, names[arg])
    raise ValueError(f"unknown check {op!r}")


def _values(t: Table, want: list[list[Any]], ordered: bool) -> list[str]:
    coerced = [
        [_coerce(w, t.types[i] if i < len(t.types) else None) for i, w in enumerate(row)]
        for row in want
    ]
    got = t.rows
    if not ordered:
        got, coerced = sorted(got, key=_key), sorted(coerced, key=_key)
    if len(got) != len(coerced) or not all(
        same(list(a), list(b)) for a, b in zip(got, coerced, strict=True)
    ):
        return [f"rows {t.rows[:6]!r}, want {want!r}"]
    return []


def _key(row: list[Any]) -> str:
    return repr([(type(v).__name__ if v is not None else "", str(v)) for v in row])


def _fieldstats(t: Table) -> list[str]:
    if t.columns != FIELDSTATS_COLUMNS:
        return [f"fieldstats columns {t.columns}, want {FIELDSTATS_COLUMNS}"]
    problems = []
    if not t.rows:
        problems.append("fieldstats returned no rows")
    paths = t.col("AttributePath")
    if len(paths) != len(set(paths)) and not any(p.endswith("[]") for p in paths):
        problems.append("an AttributePath appears twice")
    bad = [
        row
        for row in t.rows
        if not isinstance(row[0], str) or not row[0] or not isinstance(row[1], str)
    ]
    bad += [
        row
        for row in t.rows
        if not (is_number(row[2]) and row[2] >= 0 and is_number(row[3]) and row[3] >= 0)
    ]
    if bad:
        problems.append(f"malformed fieldstats rows, e.g. {bad[:2]!r}")
    return problems
