"""The built-in catalogue: scalar functions, aggregates and plugins with their signatures.

Declarations are data: `builtins.json` is generated from Kusto.Language by
`scripts/gen_kql_catalog.js`, and `berserk.py` adds Berserk's own functions in the same shape.
How a function becomes SQL is the engine's business, never the catalogue's.

>>> lookup_function("strlen").signatures[0].return_type
'long'
>>> lookup_aggregate("count").result_name_kind
'PrefixAndFirstArgument'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

_DATA = Path(__file__).with_name("builtins.json")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One declared parameter.

    `type_kind` is Kusto's ParameterTypeKind (`Declared` uses `types`; others are families
    such as `Number`, `Summable`, `Scalar`, `CommonScalar`, `Tabular`); `arg_kind` is Kusto's
    ArgumentKind (`Expression`, `Constant`, `Column`, `StarAllowed`, ...). `min`/`max` give how
    often it may occur (max > 1: repeatable).
    """

    name: str
    type_kind: str
    types: tuple[str, ...]
    arg_kind: str
    min: int
    max: int

    @property
    def repeatable(self) -> bool:
        return self.max > 1


@dataclass(frozen=True, slots=True)
class Signature:
    """One overload. `return_kind` is Kusto's ReturnTypeKind (`Declared` → `return_type`;
    `Parameter0`, `Parameter0Promoted`, `Widest`, `Common`, `CommonNonDynamic`,
    `Parameter0Array`, `Computed`/`Custom` → `computed_type` when the oracle could tell)."""

    return_kind: str
    return_type: str | None
    computed_type: str | None
    params: tuple[Parameter, ...]

    @property
    def min_args(self) -> int:
        return sum(p.min for p in self.params)

    @property
    def max_args(self) -> int:
        return (
            sum(min(p.max, 64) if p.repeatable else p.max for p in self.params)
            if any(p.repeatable for p in self.params)
            else sum(p.max for p in self.params)
        )

    def accepts_count(self, n: int) -> bool:
        # a repeatable parameter has its own bound too: `jaccard_index(set, set)` takes two
        return self.min_args <= n <= sum(p.max for p in self.params)

    def param_for(self, n: int) -> list[Parameter]:
        """The parameter each of `n` arguments binds to (repeatable blocks cycle)."""
        params = self.params
        rep = [i for i, p in enumerate(params) if p.repeatable]
        if not rep:
            return list(params[:n])
        first, last = rep[0], rep[-1]
        prefix, block, suffix = params[:first], params[first : last + 1], params[last + 1 :]
        middle = n - len(prefix) - len(suffix)
        if middle < 0:
            return list(params[:n])
        out = list(prefix)
        out.extend(block[i % len(block)] for i in range(middle))
        out.extend(suffix)
        return out


@dataclass(frozen=True, slots=True)
class FunctionSymbol:
    """A built-in: `kind` is "scalar", "aggregate" or "plugin".

    `result_name_kind`/`result_prefix` are Kusto's naming rule for an unnamed call's column
    (`PrefixAndFirstArgument` + "sum" → `sum_x`; `FirstArgument` → the first argument's name).
    """

    name: str
    kind: str
    result_name_kind: str
    result_prefix: str
    hidden: bool
    signatures: tuple[Signature, ...]

    @property
    def min_args(self) -> int:
        return min(s.min_args for s in self.signatures)

    @property
    def max_args(self) -> int:
        """The most arguments any overload takes, or -1 when that is past 64 (no practical
        bound: `strcat`'s 64 strings are stated, `percentiles`' 32,767 values are not)."""
        most = max(sum(p.max for p in s.params) for s in self.signatures)
        return -1 if most > 64 else most


# Where the engine takes more than Kusto.Language declares: (function, parameter) → the kind
# the engine accepts. ADX runs `make_timespan(1, 12, 30, 55.123)` (docs-emulator
# make-timespan-function-00: the reference types `seconds` as real), which Kusto.Language
# refuses as KS134.
_ENGINE_KINDS = {("make_timespan", "seconds"): "Number"}


def _load(kind: str, rows: list[list[object]]) -> dict[str, FunctionSymbol]:
    out: dict[str, FunctionSymbol] = {}
    for name, rnk, prefix, hidden, sigs in rows:
        signatures = tuple(
            Signature(
                rk,
                rt,
                probed,
                tuple(
                    Parameter(pn, _ENGINE_KINDS.get((str(name), pn), tk), tuple(ts), ak, mn, mx)
                    for pn, tk, ts, ak, mn, mx, _opt in params
                ),
            )
            for rk, rt, probed, params in sigs  # type: ignore[attr-defined]
        )
        out[str(name)] = FunctionSymbol(
            str(name), kind, str(rnk), str(prefix), bool(hidden), signatures
        )
    return out


def _load_all() -> tuple[
    dict[str, FunctionSymbol], dict[str, FunctionSymbol], dict[str, FunctionSymbol]
]:
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    from bzrk.kql.catalog import berserk

    functions = _load("scalar", data["functions"])
    aggregates = _load("aggregate", data["aggregates"])
    plugins = _load("plugin", data["plugins"])
    functions.update(_load("scalar", berserk.FUNCTIONS))
    aggregates.update(_load("aggregate", berserk.AGGREGATES))
    return functions, aggregates, plugins


FUNCTIONS, AGGREGATES, PLUGINS = _load_all()

# Scalar functions whose result expands into several columns: fn → ((suffix, type), ...);
# an unnamed call `f(x)` yields columns `f_x_<suffix>` (generated by scripts/gen_kql_tuples.js).
TUPLE_RESULTS: dict[str, tuple[tuple[str, str], ...]] = {
    name: tuple((suffix, t) for suffix, t in cols)
    for name, cols in json.loads(_DATA.with_name("tuples.json").read_text(encoding="utf-8")).items()
    if name not in ("series_decompose_forecast",)  # one series (A/series-decompose-forecast-*)
}


def lookup_function(name: str) -> FunctionSymbol | None:
    return FUNCTIONS.get(name)


def lookup_aggregate(name: str) -> FunctionSymbol | None:
    return AGGREGATES.get(name)


def lookup_plugin(name: str) -> FunctionSymbol | None:
    return PLUGINS.get(name)


# Plugins Kusto.Language does not list but the engine documents (`evaluate schema_merge()`).
EXTRA_PLUGINS: dict[str, FunctionSymbol] = {
    "schema_merge": FunctionSymbol(
        "schema_merge", "plugin", "None", "", False, (Signature("Custom", None, None, ()),)
    ),
}
