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

Linear in the HTML's size: only the tables are read, a row and a cell at a time
(each lazily up to its closing tag, which nh3's HTML always has), a cell's tags
only when it has any; the marks are spliced in one pass.
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
MARKS_MAX = 500
# How many table rows on the ledger's next row of numbers may be looked for.
ROW_LOOKAHEAD = 200

_TOKEN_RE = re.compile(r"<(?:[^\"'>]|\"[^\"]*\"|'[^']*')*>|[^<]+|<")
_TAG_RE = re.compile(r"<\s*(/?)\s*([a-zA-Z][a-zA-Z0-9]*)")
_CLASS_RE = re.compile(r"\bclass\s*=\s*\"([^\"]*)\"")
_ANY_TAG_RE = re.compile(r"<(?:[^\"'>]|\"[^\"]*\"|'[^']*')*>")
# A row, a cell: lazy up to the closing tag, which nh3's HTML always has (and a
# table is never nested in a paper's markdown).
_ROW_RE = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.DOTALL)
_CELL_RE = re.compile(r"<t([dh])\b(?:[^\"'>]|\"[^\"]*\")*>(.*?)</t\1>", re.DOTALL)
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
    start: int  # where the number is in the HTML
    end: int
    core: str  # the digits, as the ledger's text has them
    alone: bool  # inside a link, code or a formula: counted, never marked


@dataclass
class _Row:
    label: str = ""
    numbers: list[_Found] = field(default_factory=list)


_NOT_DIGITS_RE = re.compile(r"[\s%]")


def _core(text: str) -> str:
    return _NOT_DIGITS_RE.sub("", text.replace("−", "-")).lstrip("+")


def _numbers(html: str, start: int, end: int, alone: bool) -> list[_Found]:
    return [
        _Found(match.start(), match.end(), _core(match.group(0)), alone)
        for match in NUMBER_RE.finditer(html, start, end)
    ]


def _cell_numbers(html: str, start: int, end: int) -> list[_Found]:
    """The numbers of a cell's HTML (`html[start:end]`), those inside a link,
    code or a formula marked `alone`."""
    if html.find("<", start, end) == -1:
        return _numbers(html, start, end, False)
    found: list[_Found] = []
    alone, spans = 0, list[bool]()
    for match in _TOKEN_RE.finditer(html, start, end):
        token = match.group(0)
        tag = _TAG_RE.match(token) if token.startswith("<") else None
        if tag is None:
            found += _numbers(html, match.start(), match.end(), alone > 0)
            continue
        closing, name = tag.group(1) == "/", tag.group(2).lower()
        if name in _LEFT_ALONE:
            alone = max(alone + (-1 if closing else 1), 0)
        elif name == "span" and closing:
            if spans and spans.pop():
                alone = max(alone - 1, 0)
        elif name == "span":
            classes = _CLASS_RE.search(token)
            math = classes is not None and "math" in classes.group(1).split()
            spans.append(math)
            alone += 1 if math else 0
    return found


def _label(html: str) -> str:
    return html_lib.unescape(_ANY_TAG_RE.sub("", html))


def _rows(html: str) -> list[_Row]:
    """The tables' rows, each with its first cell's text and the numbers of the
    cells after it. Only the tables are read, a row and a cell at a time (the
    HTML is nh3's: every element is closed)."""
    rows = []
    at = 0
    while (start := html.find("<table", at)) != -1:
        end = html.find("</table>", start)
        end = len(html) if end == -1 else end + len("</table>")
        for tr in _ROW_RE.finditer(html, start, end):
            row = _Row()
            for index, cell in enumerate(_CELL_RE.finditer(html, tr.start(1), tr.end(1))):
                if index == 0:
                    row.label = _label(cell.group(2))
                else:
                    row.numbers += _cell_numbers(html, cell.start(2), cell.end(2))
            rows.append(row)
        at = end
    return rows


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
    return (
        f'<mark class="prov prov-{klass}{common}" id="prov-{index}" data-class="{klass}">'
        f'<a href="{html_lib.escape(mark.href)}" title="{label}" aria-label="{aria}">'
        f"{number}</a></mark>"
    )


# Between the marks cleaned together: text nh3 keeps as it is (no markup).
_SEPARATOR = "\u2063prov-mark\u2063"


def _cleaned(fragments: list[str]) -> list[str]:
    """Defence in depth: whatever the ledger says, a mark is a mark and a link
    (one nh3 pass over all of them; one each if the pass changed their number)."""

    def clean(html: str) -> str:
        return nh3.clean(
            html,
            tags=_MARK_TAGS,
            attributes=_MARK_ATTRIBUTES,
            url_schemes={"http", "https"},
            link_rel=None,
        )

    together = clean(_SEPARATOR.join(fragment.replace(_SEPARATOR, "") for fragment in fragments))
    parts = together.split(_SEPARATOR)
    return parts if len(parts) == len(fragments) else [clean(item) for item in fragments]


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
    rows = _rows(html)
    cuts: list[tuple[int, int]] = []  # where each mark goes
    fragments: list[str] = []
    at = 0
    for wanted in _ledger_rows(own):
        cores = [core for _, core in wanted]
        for offset, row in enumerate(rows[at : at + ROW_LOOKAHEAD]):
            found = _in_order(cores, row)
            if found is None:
                continue
            at += offset + 1
            for (index, _), place in zip(wanted, found, strict=True):
                if place.alone:
                    continue
                number = html[place.start : place.end]
                fragments.append(_fragment(number, index, mark_of(index, by_index[index])))
                cuts.append((place.start, place.end))
            break
    parts, last = [], 0
    for (start, end), fragment in sorted(zip(cuts, _cleaned(fragments), strict=True)):
        parts += [html[last:start], fragment]
        last = end
    parts.append(html[last:])
    return "".join(parts), len(cuts)
