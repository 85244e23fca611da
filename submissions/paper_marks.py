"""The paper view's marks (issue 38): each number the provenance ledger classed
is marked in the paper's stored, sanitised HTML by its class, with a link to
where it came from (the trace step, the file, or the ledger's row).

Done at render time from the stored ledger, on the HTML that `nh3` cleaned at
intake: the page splices a mark around the number's own characters of a text
node and never injects other text. Each mark is built from escaped values and
cleaned with `nh3` again under an allow-list of its own, so the page's XSS and
CSP guarantees hold whatever a ledger holds.

Which number is which: the ledger places each number by its markdown line
(`where`), the HTML knows only its tables. The ledger's rows of numbers are
matched, in order, to the HTML's table rows in order: a row of numbers goes to
the next table row (at most `ROW_LOOKAHEAD` further on) whose cells past the
first hold those numbers in that order. A row that matches none is left
unmarked (its numbers stay in the ledger's table below the paper), so a number
is never marked in the wrong place, and never twice: each HTML occurrence is
used once. Numbers inside links, code and formulas are left alone (they are
still counted, to keep the order, but never wrapped).

Linear in the HTML's size: one scan of its tags and text (a tag is matched up
to its closing `>` outside quotes, so no rescan), one search of numbers in the
tables' cells.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nh3

from common.claims import NUMBER_RE, is_setting_row

# At most this many of the ledger's numbers are marked on a page (a paper of a
# hundred thousand table cells is still one linear scan, and a page people read).
MARKS_MAX = 2000
# How many table rows on the ledger's next row of numbers may be looked for.
ROW_LOOKAHEAD = 200

_TOKEN_RE = re.compile(r"<(?:[^\"'>]|\"[^\"]*\"|'[^']*')*>|[^<]+|<")
_TAG_RE = re.compile(r"<\s*(/?)\s*([a-zA-Z][a-zA-Z0-9]*)")
_CLASS_RE = re.compile(r"\bclass\s*=\s*\"([^\"]*)\"")
# Text inside these is never marked (the claims rules leave links out; code and
# formulas are not the paper's prose).
_LEFT_ALONE = frozenset({"a", "code", "pre", "kbd", "samp"})
_MARK_TAGS = {"mark", "a"}
_MARK_ATTRIBUTES = {"mark": {"class", "id", "data-class"}, "a": {"href", "title", "aria-label"}}


@dataclass(frozen=True)
class Mark:
    """How one number is marked: its class, what a reader is told, where it links."""

    klass: str
    label: str  # "measured: printed by step 14 (Bash)"
    href: str
    common: bool = False  # one significant digit: never counts towards the verdict


@dataclass
class _Found:
    piece: int  # the index of the text token
    start: int
    end: int
    core: str  # the digits, as the ledger's text has them
    alone: bool  # inside a link, code or a formula: counted, never marked


@dataclass
class _Row:
    label: str = ""
    cells: int = 0
    numbers: list[_Found] = field(default_factory=list)


def _core(text: str) -> str:
    return re.sub(r"[\s%]", "", text.replace("−", "-")).lstrip("+")


@dataclass
class _Walk:
    """The HTML's tokens and its tables' rows of numbers."""

    pieces: list[str] = field(default_factory=list)
    rows: list[_Row] = field(default_factory=list)
    row: _Row | None = None
    in_cell: bool = False
    alone: int = 0
    math_spans: list[bool] = field(default_factory=list)

    def tag(self, token: str) -> None:
        found = _TAG_RE.match(token)
        if found is None:
            return
        closing, name = found.group(1) == "/", found.group(2).lower()
        if name == "tr":
            self._end_row()
            if not closing:
                self.row = _Row()
        elif name in ("td", "th"):
            self.in_cell = not closing and self.row is not None
            if self.in_cell and self.row is not None:
                self.row.cells += 1
        elif name == "table" and closing:
            self._end_row()
        elif name in _LEFT_ALONE:
            self.alone = max(self.alone + (-1 if closing else 1), 0)
        elif name == "span":
            self._span(token, closing)

    def _span(self, token: str, closing: bool) -> None:
        if closing:
            if self.math_spans and self.math_spans.pop():
                self.alone = max(self.alone - 1, 0)
            return
        classes = _CLASS_RE.search(token)
        math = classes is not None and "math" in classes.group(1).split()
        self.math_spans.append(math)
        self.alone += 1 if math else 0

    def _end_row(self) -> None:
        if self.row is not None:
            self.rows.append(self.row)
        self.row, self.in_cell = None, False

    def text(self, piece: int, token: str) -> None:
        row = self.row
        if row is None or not self.in_cell:
            return
        if row.cells == 1:
            row.label += html_lib.unescape(token)
            return
        for match in NUMBER_RE.finditer(token):
            row.numbers.append(
                _Found(piece, match.start(), match.end(), _core(match.group(0)), self.alone > 0)
            )


def _walk(html: str) -> _Walk:
    walk = _Walk()
    for match in _TOKEN_RE.finditer(html):
        token = match.group(0)
        walk.pieces.append(token)
        if token.startswith("<") and len(token) > 1:
            walk.tag(token)
        else:
            walk.text(len(walk.pieces) - 1, token)
    walk._end_row()
    return walk


def _in_order(wanted: list[str], row: _Row) -> list[_Found] | None:
    """The row's occurrences of `wanted`, in order, or None."""
    if is_setting_row(row.label):
        return None
    found, at = [], 0
    for core in wanted:
        while at < len(row.numbers) and row.numbers[at].core != core:
            at += 1
        if at == len(row.numbers):
            return None
        found.append(row.numbers[at])
        at += 1
    return found


def _ledger_rows(entries: list[tuple[int, dict[str, Any]]]) -> list[list[tuple[int, str]]]:
    """The entries by markdown line, in the paper's order: (entry index, digits)."""
    by_line: dict[int, list[tuple[int, str]]] = {}
    for index, entry in entries:
        line = str(entry.get("where", "")).rsplit(":", 1)[-1]
        if line.isdigit():
            by_line.setdefault(int(line), []).append((index, _core(str(entry.get("text", "")))))
    return [by_line[line] for line in sorted(by_line)]


def _fragment(number: str, index: int, mark: Mark) -> str:
    klass = html_lib.escape(mark.klass)
    common = " prov-common" if mark.common else ""
    label = html_lib.escape(mark.label)
    aria = html_lib.escape(f"{html_lib.unescape(number)}, {mark.label}")
    fragment = (
        f'<mark class="prov prov-{klass}{common}" id="prov-{index}" data-class="{klass}">'
        f'<a href="{html_lib.escape(mark.href)}" title="{label}" aria-label="{aria}">'
        f"{number}</a></mark>"
    )
    # Defence in depth: whatever the ledger says, a mark is a mark and a link.
    return nh3.clean(
        fragment,
        tags=_MARK_TAGS,
        attributes=_MARK_ATTRIBUTES,
        url_schemes={"http", "https"},
        link_rel=None,
    )


def paper_marked(
    html: str,
    entries: list[dict[str, Any]],
    *,
    paper: str,
    mark_of: Callable[[int, dict[str, Any]], Mark],
) -> tuple[str, int]:
    """`html` (the paper `paper`'s stored, sanitised HTML) with each of the
    ledger's `entries` for that paper marked (`mark_of(index, entry)`: its
    class, label and link), and how many were marked."""
    own = [
        (index, entry)
        for index, entry in enumerate(entries[:MARKS_MAX])
        if str(entry.get("where", "")).rsplit(":", 1)[0] == paper
    ]
    if not own or not html:
        return html, 0
    by_index = dict(own)
    walk = _walk(html)
    splices: dict[int, list[tuple[int, int, str]]] = {}
    at = 0
    for wanted in _ledger_rows(own):
        cores = [core for _, core in wanted]
        for offset, row in enumerate(walk.rows[at : at + ROW_LOOKAHEAD]):
            found = _in_order(cores, row)
            if found is None:
                continue
            at += offset + 1
            for (index, _), place in zip(wanted, found, strict=True):
                if place.alone:
                    continue
                number = walk.pieces[place.piece][place.start : place.end]
                fragment = _fragment(number, index, mark_of(index, by_index[index]))
                splices.setdefault(place.piece, []).append((place.start, place.end, fragment))
            break
    for at_piece, cuts in splices.items():
        text, parts, last = walk.pieces[at_piece], [], 0
        for start, end, fragment in sorted(cuts):
            parts += [text[last:start], fragment]
            last = end
        parts.append(text[last:])
        walk.pieces[at_piece] = "".join(parts)
    return "".join(walk.pieces), sum(len(cuts) for cuts in splices.values())
