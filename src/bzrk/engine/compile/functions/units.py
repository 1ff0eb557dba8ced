"""convert_* functions: unit factors relative to one base unit per quantity (.NET UnitsNet names)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import T, Typed, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

# Size of each unit in the quantity's base unit (metre, kilogram, joule, newton, m/s, m³, degree).
FACTORS: dict[str, dict[str, float]] = {
    "length": {
        "Meter": 1.0,
        "Kilometer": 1e3,
        "Centimeter": 1e-2,
        "Millimeter": 1e-3,
        "Micrometer": 1e-6,
        "Nanometer": 1e-9,
        "Decimeter": 0.1,
        "Decameter": 10.0,
        "Hectometer": 100.0,
        "Foot": 0.3048,
        "Inch": 0.0254,
        "Yard": 0.9144,
        "Mile": 1609.344,
        "NauticalMile": 1852.0,
        "Mil": 2.54e-5,
        "Microinch": 2.54e-8,
        "Hand": 0.1016,
        "LightYear": 9.46073047258e15,
        "Angstrom": 1e-10,
    },
    "mass": {
        "Kilogram": 1.0,
        "Gram": 1e-3,
        "Milligram": 1e-6,
        "Microgram": 1e-9,
        "Tonne": 1e3,
        "Pound": 0.45359237,
        "Ounce": 0.028349523125,
        "Stone": 6.35029318,
        "ShortTon": 907.18474,
        "LongTon": 1016.0469088,
        "Grain": 6.479891e-5,
    },
    "energy": {
        "Joule": 1.0,
        "Kilojoule": 1e3,
        "Megajoule": 1e6,
        "Calorie": 4.184,
        "Kilocalorie": 4184.0,
        "BritishThermalUnit": 1055.05585262,
        "WattHour": 3600.0,
        "KilowattHour": 3.6e6,
        "ElectronVolt": 1.602176634e-19,
        "Erg": 1e-7,
        "FootPound": 1.3558179483314,
    },
    "force": {
        "Newton": 1.0,
        "Decanewton": 10.0,
        "Kilonewton": 1e3,
        "Meganewton": 1e6,
        "Dyn": 1e-5,
        "KilogramForce": 9.80665,
        "PoundForce": 4.4482216152605,
        "Poundal": 0.138254954376,
    },
    "speed": {
        "MeterPerSecond": 1.0,
        "KilometerPerHour": 1 / 3.6,
        "MilePerHour": 0.44704,
        "Knot": 1852 / 3600,
        "CentimeterPerHour": 0.01 / 3600,
        "CentimeterPerSecond": 0.01,
        "FootPerSecond": 0.3048,
        "KilometerPerSecond": 1e3,
        "MeterPerHour": 1 / 3600,
        "MeterPerMinute": 1 / 60,
    },
    "volume": {
        "CubicMeter": 1.0,
        "Liter": 1e-3,
        "Milliliter": 1e-6,
        "CubicCentimeter": 1e-6,
        "CubicFoot": 0.028316846592,
        "CubicInch": 1.6387064e-5,
        "UsGallon": 0.003785411784,
        "ImperialGallon": 0.00454609,
        "AcreFoot": 1233.48183754752,
        "CubicKilometer": 1e9,
    },
    "angle": {
        "Degree": 1.0,
        "Radian": 57.29577951308232,
        "Arcminute": 1 / 60,
        "Arcsecond": 1 / 3600,
        "Gradian": 0.9,
        "Revolution": 360.0,
    },
}

# Temperatures: to Kelvin as k = (x + offset) * scale, back as x = k / scale - offset.
TEMPERATURES: dict[str, tuple[float, float]] = {
    "Kelvin": (0.0, 1.0),
    "DegreeCelsius": (273.15, 1.0),
    "DegreeFahrenheit": (459.67, 5 / 9),
    "DegreeRankine": (0.0, 5 / 9),
}


def _const(value: Typed, node: K.Node) -> str:
    if isinstance(value.sql, S.Lit) and isinstance(value.sql.value, str):
        return value.sql.value
    raise unsupported(node, "unit names must be constants")


def _converter(quantity: str):  # type: ignore[no-untyped-def]
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        x = cast_to(a[0], "real").sql
        source, target = _const(a[1], n), _const(a[2], n)
        if quantity == "temperature":
            if source not in TEMPERATURES or target not in TEMPERATURES:
                return Typed(S.Cast(S.Lit(None), "Nullable(Float64)"), "real")
            (so, ss), (to, ts) = TEMPERATURES[source], TEMPERATURES[target]
            return Typed(
                T(
                    "((({0} + {1}) * {2}) / {3} - {4})",
                    x,
                    S.Lit(so),
                    S.Lit(ss),
                    S.Lit(ts),
                    S.Lit(to),
                ),
                "real",
            )
        table = FACTORS[quantity]
        if source not in table or target not in table:
            return Typed(S.Cast(S.Lit(None), "Nullable(Float64)"), "real")
        return Typed(T("({0} * {1} / {2})", x, S.Lit(table[source]), S.Lit(table[target])), "real")

    return build


UNIT_FUNCTIONS = {f"convert_{q}": _converter(q) for q in [*FACTORS, "temperature"]}
