"""The site's one CSV writer (`csv_lines`, `csv_text`), used by every CSV
export: every cell, the header's included, goes through `csv_cell`, so text
that a spreadsheet would read as a formula (`=`, `+`, `-`, `@`, tab, CR first)
is escaped with a quote; numbers stay numbers."""

import csv
import datetime as dt
import io
import json
from collections.abc import Iterable, Iterator, Sequence
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


# Rows written per chunk of `csv_lines`: a streamed export never holds a table.
ROWS_PER_CHUNK = 5000


def csv_lines(
    header: Sequence[object], rows: Iterable[Sequence[object]], *, lineterminator: str = "\r\n"
) -> Iterator[str]:
    """CSV text in chunks of `ROWS_PER_CHUNK` rows, the header first; every
    cell escaped (`csv_row`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=lineterminator)
    writer.writerow(csv_row(header))
    for n, row in enumerate(rows, start=1):
        writer.writerow(csv_row(row))
        if n % ROWS_PER_CHUNK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def csv_text(
    header: Sequence[object], rows: Iterable[Sequence[object]], *, lineterminator: str = "\r\n"
) -> str:
    """The whole CSV text of `csv_lines`."""
    return "".join(csv_lines(header, rows, lineterminator=lineterminator))
