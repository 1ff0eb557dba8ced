"""parse_user_agent: a user-agent string read with uap-core's regexes, as ADX answers it.

The regexes live in ClickHouse ``regexp_tree`` dictionaries (``storage/user_agents.py``), which
the query service creates before the first run that reads them; the call is one ``dictGet`` per
part asked for, so it stays columnar. The answer is ADX's bag: ``{"Browser": {"Family",
"MajorVersion", "MinorVersion", "Patch"}, "OperatingSystem": {"Family", "MajorVersion",
"MinorVersion", "Patch", "PatchMinor"}, "Device": {"Family", "Brand", "Model"}}``, holding the
parts asked for in the order asked; what no regex names is ``Other``, a missing version ``""``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.builders import Builder, registrar
from bzrk.engine.compile.typed import T, Typed, to_string
from bzrk.storage import user_agents
from bzrk.storage.naming import quote_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

# look-for value -> (the bag's key, the dictionary, the bag's field names in attribute order)
_PARTS: dict[str, tuple[str, user_agents.Kind, tuple[str, ...]]] = {
    "browser": (
        "Browser",
        user_agents.BROWSER,
        ("Family", "MajorVersion", "MinorVersion", "Patch"),
    ),
    "os": (
        "OperatingSystem",
        user_agents.OS,
        ("Family", "MajorVersion", "MinorVersion", "Patch", "PatchMinor"),
    ),
    "device": ("Device", user_agents.DEVICE, ("Family", "Brand", "Model")),
}


def _look_for(value: Typed, node: K.Call) -> list[str]:
    """The parts asked for: a constant string or array of strings among :data:`_PARTS`."""
    asked: object = None
    if isinstance(value.sql, S.Lit) and isinstance(value.sql.value, str):
        asked = value.sql.value
        if value.type == "dynamic":
            try:
                asked = json.loads(value.sql.value)
            except ValueError:
                asked = None
    parts = [asked] if isinstance(asked, str) else asked
    if (
        not isinstance(parts, list)
        or not parts
        or not all(isinstance(p, str) and p.lower() in _PARTS for p in parts)
    ):
        raise unsupported(
            node.args[1] if len(node.args) > 1 else node,
            "parse_user_agent looks for 'browser', 'os' or 'device', or a constant array of them",
            code="InvalidArgument",
        )
    return list(dict.fromkeys(p.lower() for p in parts))


def parse_user_agent(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    host = c.scope.host
    if host is not None:
        host.prepare("user_agents", user_agents.ensure)
    agent = to_string(args[0])
    members = []
    for part in _look_for(args[1], node):
        key, kind, fields = _PARTS[part]
        attributes = "(" + ", ".join(quote_string(a) for a in kind.attributes) + ")"
        # One dictGet per part: its tuple is bound to a lambda's parameter (ClickHouse would
        # match the regexes again for each repeated dictGet: 4× slower for the browser part).
        values = [f"trimBoth(tupleElement(__ua, {i}))" for i in range(1, len(fields) + 1)]
        values[0] = f"if({values[0]} = '', 'Other', {values[0]})"
        shape = ", ".join(f"{name} String" for name in fields)
        members.append(
            T(
                f"concat({quote_string(json.dumps(key) + ':')}, arrayMap(__ua -> toJSONString("
                f"CAST(tuple({', '.join(values)}), 'Tuple({shape})')), "
                f"[dictGet({kind.dictionary}, {attributes}, {{0}})])[1])",
                agent,
            )
        )
    bag = T("concat('{{', arrayStringConcat({0}, ','), '}}')", S.Func("array", members))
    return Typed(bag, "dynamic")


USER_AGENT_FUNCTIONS: dict[str, Builder] = {}
reg = registrar(USER_AGENT_FUNCTIONS)
reg("parse_user_agent", parse_user_agent)
