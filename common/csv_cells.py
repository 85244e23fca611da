"""CSV cells for every export of the site: text that a spreadsheet would
read as a formula (`=`, `+`, `-`, `@`, tab, CR first) is escaped with a
quote, numbers stay numbers. One helper, used by every CSV writer."""

import datetime as dt
import json
from collections.abc import Iterable
from decimal import Decimal

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_FIRST = frozenset(FORMULA_PREFIXES)
# Types written as they are: numbers cannot start a formula.
_PLAIN = frozenset({int, float, Decimal})


def csv_cell(value: object) -> object:
    """A value as a CSV cell: text that starts like a formula is escaped, numbers stay."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, list | dict):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_row(row: Iterable[object]) -> list[object]:
    """`csv_cell` of every value; the common types are handled inline, since
    the full export writes about ten million cells."""
    return [
        value
        if type(value) in _PLAIN
        else (
            ("'" + value if value[:1] in _FORMULA_FIRST else value)
            if type(value) is str
            else csv_cell(value)
        )
        for value in row
    ]
