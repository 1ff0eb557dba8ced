"""Text-splitting scalars: parse_path, parse_command_line, and datetime_list_timezones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import T, Typed, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_SEP = "[\\\\\\\\/]"  # a path separator, \ or /, as an RE2 class inside an SQL string


def parse_path(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Scheme, root (drive), directory, file name, extension and NTFS alternate stream."""
    path = T("ifNull({0}, '')", to_string(args[0]))
    fields = [
        ("Scheme", "__scheme"),
        ("RootPath", "extract(__rest, '^([A-Za-z]:" + _SEP + ")')"),
        ("DirectoryPath", "extract(__rest, '^(.*)" + _SEP + "')"),
        ("DirectoryName", "extract(extract(__rest, '^(.*)" + _SEP + "'), '([^\\\\\\\\/]*)$')"),
        ("Filename", "__file"),
        ("Extension", "if(position(__file, '.') > 0, extract(__file, '\\\\.([^.]*)$'), '')"),
        (
            "AlternateDataStreamName",
            "if(position(__leaf, ':') > 0, substring(__leaf, position(__leaf, ':') + 1), '')",
        ),
    ]
    bag = (
        "concat('{{', "
        + ", ',', ".join(f"'\"{name}\":', toJSONString({expr})" for name, expr in fields)
        + ", '}}')"
    )
    return Typed(
        T(
            "arrayMap(__scheme -> arrayMap(__rest -> arrayMap(__leaf -> arrayMap(__file -> "
            + bag
            + ", [splitByChar(':', __leaf)[1]])[1], [extract(__rest, '([^\\\\\\\\/]*)$')])[1], "
            "[if(__scheme != '', substring({0}, length(__scheme) + 4), {0})])[1], "
            "[extract({0}, '^([A-Za-z][A-Za-z0-9+.-]*)://')])[1]",
            path,
        ),
        "dynamic",
    )


def parse_command_line(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Windows command-line arguments: blanks separate, double quotes group (quotes dropped)."""
    if len(args) > 1:
        kind = args[1].sql
        if not (isinstance(kind, S.Lit) and str(kind.value).lower() == "windows"):
            raise unsupported(node, "parse_command_line supports the 'windows' parser only")
    return Typed(
        T(
            "toJSONString(arrayMap(__a -> replaceAll(__a, '\"', ''), "
            "extractAll(ifNull({0}, ''), '(?:[^\\\\s\"]+|\"[^\"]*\"?)+')))",
            to_string(args[0]),
        ),
        "dynamic",
    )


def datetime_list_timezones(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """The IANA zone names the engine knows (ClickHouse's tz database), sorted."""
    return Typed(
        T(
            "(SELECT toJSONString(arraySort(groupArray(time_zone))) FROM system.time_zones "
            "WHERE time_zone != 'Factory')"
        ),
        "dynamic",
    )


TEXT_FUNCTIONS = {
    "parse_path": parse_path,
    "parse_command_line": parse_command_line,
    "datetime_list_timezones": datetime_list_timezones,
}
