"""ClickHouse expressions that spell a KQL value as KQL writes it as text.

One place for the SQL that the compiler's `tostring` (compile/typed.py) and the stored
record's `$raw` (storage/schema.py) share. Each template takes its value as ``{0}`` (a
``DateTime64(7)`` or an ``Int64`` of 100 ns ticks) and is NULL where the value is.
"""

from __future__ import annotations

# Kusto prints datetimes with all seven fraction digits (`reverse(datetime)` and datetimes
# inside dynamic values show `2017-10-15T12:00:00.0000000Z` in the emulator).
DATETIME_TEXT = (
    "concat(formatDateTime({0}, '%Y-%m-%dT%H:%i:%S'), '.', "
    "leftPad(toString(positiveModulo(reinterpretAsInt64({0}), 10000000)), 7, '0'), 'Z')"
)

# `[-][d.]hh:mm:ss[.fffffff]`: days only when there are any, fraction digits only when the
# value has a fraction of a second.
TIMESPAN_TEXT = (
    "concat(if({0} < 0, '-', ''), "
    "if(intDiv(abs({0}), 864000000000) > 0, concat(toString(intDiv(abs({0}), 864000000000)), '.'), ''), "
    "leftPad(toString(intDiv(abs({0}), 36000000000) % 24), 2, '0'), ':', "
    "leftPad(toString(intDiv(abs({0}), 600000000) % 60), 2, '0'), ':', "
    "leftPad(toString(intDiv(abs({0}), 10000000) % 60), 2, '0'), "
    "if(abs({0}) % 10000000 = 0, '', concat('.', leftPad(toString(abs({0}) % 10000000), 7, '0'))))"
)
