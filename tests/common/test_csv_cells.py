"""The site's one CSV writer (common.csv_cells): the header's cells and the
rows' are escaped alike, so neither can start a spreadsheet formula."""

import csv
import io

import pytest

from common.csv_cells import ROWS_PER_CHUNK, csv_lines, csv_text

FORMULAS = ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx")


def _read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("formula", FORMULAS)
def test_a_header_or_cell_starting_like_a_formula_is_escaped(formula):
    header, *rows = _read(csv_text(["name", formula], [[formula, -1.5], ["plain", 3]]))

    assert header == ["name", "'" + formula]
    assert rows == [["'" + formula, "-1.5"], ["plain", "3"]]


def test_the_writer_streams_in_chunks_with_the_line_ending_asked():
    rows = [[n] for n in range(ROWS_PER_CHUNK + 1)]
    chunks = list(csv_lines(["n"], rows, lineterminator="\n"))

    assert len(chunks) == 2
    assert "".join(chunks).splitlines()[:2] == ["n", "0"]
    assert "\r" not in "".join(chunks)
    assert csv_text(["n"], [[1]]) == "n\r\n1\r\n"
