"""A value used many times in one expression, bound once: ``arrayMap(v -> body, [value])[1]``.

Compiled SQL is a tree whose sub-trees may be shared objects: a ``let`` name stands for its
value's SQL at every use, so ``let a1 = a0 + a0; let a2 = a1 + a1; …`` is a small graph whose
rendered text doubles per level (22 levels spell ``a0`` four million times, and ClickHouse
refuses a query tree past 500,000 nodes; its ``WITH`` aliases are expanded the same way). When
an expression would render more than :data:`MAX_SHARED_NODES` nodes, its most repeated large
sub-tree becomes the parameter of a one-element ``arrayMap``, which ClickHouse evaluates once
(and folds when it is constant); the expression then grows linearly with the chain.

>>> from bzrk.engine import sql as S
>>> x = S.Func("plus", [S.Col("a"), S.Func("abs", [S.Col("b")])])
>>> S.render_expr(bind_repeated(S.BinOp("*", x, x), "__v", limit=5))
'arrayElement(arrayMap(__v -> (`__v` * `__v`), array(plus(`a`, abs(`b`)))), 1)'
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable

from bzrk.engine import sql as S

# Expressions rendering more nodes than this have their repeated parts bound once.
MAX_SHARED_NODES = 256
# Repeated sub-trees smaller than this are cheaper to spell twice.
_MIN_BOUND_NODES = 4


def bind_repeated(
    expr: S.Expr, prefix: str, *, limit: int = MAX_SHARED_NODES, rounds: int = 8
) -> S.Expr:
    """``expr`` with its most repeated large sub-trees bound once, while it renders more
    than ``limit`` nodes (at most ``rounds`` bindings, named ``prefix``, ``prefix1``, …)."""
    for round_ in range(rounds):
        sizes: dict[int, int] = {}
        if S.expanded_size(expr, sizes) <= limit:
            return expr
        target = _most_repeated(expr, sizes)
        if target is None:
            return expr
        name = prefix if round_ == 0 else f"{prefix}{round_}"
        param = S.Col(name)
        body = _replaced(expr, target, param)
        expr = S.Func(
            "arrayElement",
            [S.Func("arrayMap", [S.Lambda([name], body), S.Func("array", [target])]), S.Lit(1)],
        )
    return expr


def _most_repeated(expr: S.Expr, sizes: dict[int, int]) -> S.Expr | None:
    """The sub-tree whose repetition costs the most rendered nodes (None: nothing repeats).

    Sub-trees under a lambda may read its parameters and are not candidates, nor are
    queries (they read their own sources).
    """
    uses: Counter[int] = Counter()
    nodes: dict[int, S.Expr] = {}
    # Each node's number of renderings: the sum over parents of the parent's renderings
    # times how often the parent spells it; nodes are visited parents first.
    order = _parents_first(expr)
    renderings: Counter[int] = Counter({id(expr): 1})
    for node in order:
        count = renderings[id(node)]
        if isinstance(node, S.Lambda | S.ScalarSubquery) or not isinstance(node, S.Expr):
            continue
        kids = list(S.children(node))
        slots = S.slot_counts(node) if isinstance(node, S.Template) else [1] * len(kids)
        for kid, times in zip(kids, slots, strict=True):
            if isinstance(kid, S.Expr):
                renderings[id(kid)] += count * times
                nodes[id(kid)] = kid
    for key, count in renderings.items():
        if count > 1 and key in nodes:
            uses[key] = count
    best: tuple[int, int] | None = None
    for key, count in uses.items():
        size = sizes.get(key, 0)
        if size < _MIN_BOUND_NODES or isinstance(nodes[key], S.Lit | S.Col):
            continue
        saving = (count - 1) * size
        if best is None or saving > best[0]:
            best = (saving, key)
    return nodes[best[1]] if best is not None else None


def _parents_first(expr: S.Expr) -> list[S.Expr | S.Query]:
    """The distinct nodes of ``expr`` ordered so that every node comes after all its parents."""
    indegree: Counter[int] = Counter()
    nodes: dict[int, S.Expr | S.Query] = {id(expr): expr}
    stack: list[S.Expr | S.Query] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, S.Lambda | S.ScalarSubquery) or not isinstance(node, S.Expr):
            continue
        for kid in S.children(node):
            indegree[id(kid)] += 1
            if id(kid) not in nodes:
                nodes[id(kid)] = kid
                stack.append(kid)
    ready: list[S.Expr | S.Query] = [expr]
    order: list[S.Expr | S.Query] = []
    while ready:
        node = ready.pop()
        order.append(node)
        if isinstance(node, S.Lambda | S.ScalarSubquery) or not isinstance(node, S.Expr):
            continue
        for kid in S.children(node):
            indegree[id(kid)] -= 1
            if indegree[id(kid)] == 0:
                ready.append(kid)
    return order


def _replaced(expr: S.Expr, target: S.Expr, by: S.Expr) -> S.Expr:
    """``expr`` with every occurrence of the node ``target`` (by identity) replaced by ``by``."""
    done: dict[int, S.Expr] = {}

    def visit(node: S.Expr) -> S.Expr:
        if node is target:
            return by
        key = id(node)
        if key in done:
            return done[key]
        result = _rebuilt(node, visit)
        done[key] = result
        return result

    return visit(expr)


def _rebuilt(node: S.Expr, visit: Callable[[S.Expr], S.Expr]) -> S.Expr:
    if isinstance(
        node, S.Lambda | S.ScalarSubquery | S.Lit | S.Col
    ) or not dataclasses.is_dataclass(node):
        return node
    changes = {}
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        rebuilt = _rebuilt_value(value, visit)
        if rebuilt is not value:
            changes[field.name] = rebuilt
    return dataclasses.replace(node, **changes) if changes else node


def _rebuilt_value(value: object, visit: Callable[[S.Expr], S.Expr]) -> object:
    if isinstance(value, S.Expr):
        return visit(value)
    if isinstance(value, list | tuple):
        items = [_rebuilt_value(v, visit) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    return value
