"""Numbers a paper claims, numbers a run produced, and whether they agree.

Pure functions, no database. What counts as a claim is deliberately narrow,
because papers are full of numbers nobody expects a run to print:

* in the paper (markdown): numbers with a decimal point or a percent sign in
  the cells of tables, except rows that name a hyperparameter or a setting
  (learning rate, batch size, seed, ...), and nothing from headings, code
  blocks, links, images or the references;
* in the results files (JSON, CSV, markdown, text): every such number.

A claim is found when some produced number, or that number times or divided
by 100 (a fraction reported as a percentage), equals it within the relative
tolerance or within the rounding of the claim's last digit.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

NUMBER_RE = re.compile(r"(?<![\w.])([-+−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(\s?%)?(?![\w])")
_DECIMAL_RE = re.compile(r"\.(\d+)")
_HYPERPARAMETER_RE = re.compile(
    r"learning[ _-]?rate|\blr\b|batch|epoch|seed|dropout|weight[ _-]?decay|momentum|"
    r"warm[ _-]?up|temperature|hidden|layers?\b|heads?\b|dim(ension)?s?\b|steps?\b|"
    r"patience|beta|alpha|gamma|lambda|eps(ilon)?\b|decay|size\b|parameters?\b|params\b|"
    r"year|version|#",
    re.IGNORECASE,
)
_REFERENCES_RE = re.compile(r"^#{1,6}\s*(references|bibliography)\b", re.IGNORECASE)
# Linear: a link's text and target stop at the next bracket or parenthesis, so a
# cell of 40,000 `[` or `![x](` is one scan, not one per opener (it was quadratic).
_LINK_RE = re.compile(r"!?\[[^\[\]]*\]\([^()]*\)|https?://\S+|\[\d+(?:[,\s–-]+\d+)*\]")
_TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{2,}")

TEXT_SUFFIXES = (".json", ".csv", ".tsv", ".txt", ".md", ".log", ".yaml", ".yml", ".out")


@dataclass(frozen=True)
class Number:
    value: float
    text: str
    where: str
    decimals: int
    percent: bool


def _number(match: re.Match[str], where: str) -> Number | None:
    text = match.group(1).replace("−", "-")
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    mantissa = text.lower().split("e")[0]
    decimal = _DECIMAL_RE.search(mantissa)
    return Number(
        value=value,
        text=match.group(0).strip(),
        where=where,
        decimals=len(decimal.group(1)) if decimal else 0,
        percent=bool(match.group(2)),
    )


def numbers_in(text: str, where: str) -> list[Number]:
    """Every number in `text`, each with `where` = `<where>:<line>`."""
    found = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        for match in NUMBER_RE.finditer(line):
            number = _number(match, f"{where}:{line_number}")
            if number is not None:
                found.append(number)
    return found


def _is_claim(number: Number) -> bool:
    return number.decimals > 0 or number.percent


def numbers_kept(
    text: str, where: str, keep: Callable[[float], bool], *, claims_only: bool
) -> list[Number]:
    """The distinct numbers of `text` whose value `keep` accepts (`claims_only`:
    those with a decimal point or a percent sign), each once, where it first
    occurs (`where` = `<where>:<line>`). A number `keep` refuses costs a float
    conversion of each distinct spelling, no more: a large log is searched for a
    few values in a fraction of `numbers_in`'s time."""
    wanted = set()
    for raw, percent in set(NUMBER_RE.findall(text)):
        try:
            value = float(raw.replace("−", "-"))
        except ValueError:
            continue
        if keep(value):
            wanted.add((raw, percent))
    found = []
    line, counted = 1, 0
    # One pass to place them, which stops once each was seen.
    for match in NUMBER_RE.finditer(text) if wanted else ():
        key = (match.group(1), match.group(2) or "")
        if key not in wanted:
            continue
        wanted.discard(key)
        line += text.count("\n", counted, match.start())
        counted = match.start()
        number = _number(match, f"{where}:{line}")
        if number is not None and (_is_claim(number) or not claims_only):
            found.append(number)
        if not wanted:
            break
    return found


def is_setting_row(label: str) -> bool:
    """Whether a table row whose first cell is `label` names a hyperparameter or
    a setting (its numbers are no claims)."""
    return bool(_HYPERPARAMETER_RE.search(label))


def paper_claims(text: str, where: str) -> list[Number]:
    """The numbers in a markdown paper's result tables."""
    return [cell.number for cell in paper_claim_cells(text, where)]


@dataclass(frozen=True)
class ClaimCell:
    """A claim with its place in the paper's tables: the table (the line of its
    first row), the row (its line) and the column (0: the row's label)."""

    number: Number
    table: int
    row: int
    column: int


def paper_claim_cells(text: str, where: str) -> list[ClaimCell]:
    """`paper_claims`, each with the table, row and column it sits in."""
    claims = []
    in_code = False
    table = 0
    previous = -1
    for line_number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if in_code:
            continue
        if _REFERENCES_RE.match(line):
            break
        if not line.startswith("|"):
            continue
        # A table is a run of `|` lines: a line after a gap starts a new one.
        table = table if previous == line_number - 1 else line_number
        previous = line_number
        if _TABLE_SEPARATOR_RE.match(line):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if not cells or _HYPERPARAMETER_RE.search(cells[0]):
            continue
        for column, cell in enumerate(cells[1:], start=1):
            for match in NUMBER_RE.finditer(_LINK_RE.sub(" ", cell)):
                number = _number(match, f"{where}:{line_number}")
                if number is not None and _is_claim(number):
                    claims.append(ClaimCell(number, table, line_number, column))
    return claims


def _json_numbers(value: object, path: str, where: str) -> Iterable[Number]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        if _HYPERPARAMETER_RE.search(path):
            return
        text = repr(value)
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
        if decimals or isinstance(value, float):
            yield Number(float(value), text, f"{where}:{path or '$'}", max(decimals, 1), False)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _json_numbers(item, f"{path}.{key}" if path else str(key), where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_numbers(item, f"{path}[{index}]", where)


def results_claims(text: str, where: str) -> list[Number]:
    """The numbers a results file reports (JSON by key, other text by line)."""
    if where.lower().endswith(".json"):
        try:
            return list(_json_numbers(json.loads(text), "", where))
        except ValueError:
            pass
    if where.lower().endswith(".md"):
        return paper_claims(text, where)
    claims = []
    for number in numbers_in(text, where):
        if _is_claim(number):
            claims.append(number)
    return claims


def _candidates(value: float) -> tuple[float, ...]:
    return (value, value * 100, value / 100)


def _distance(claim: Number, value: float) -> float:
    return min(abs(claim.value - candidate) for candidate in _candidates(value))


def claim_allowance(claim: Number, tolerance: float) -> float:
    """How far a produced number may be from the claim and still match it: a
    claim of 0.87 is honest for 0.8731 (rounding) and, with 1% tolerance, for
    0.865 (its value times or divided by 100 too: `claims_check`)."""
    rounding: float = 0.5 * 10.0 ** (-claim.decimals)
    return max(rounding, tolerance * abs(claim.value)) + 1e-12


def significant_digits(number: Number) -> int:
    """The digits of the number as written, without leading or trailing zeros:
    1 for 0.5, 1.0, 0.008 or 100; 3 for 87.3 or 0.873; 0 for 0.000."""
    mantissa = number.text.lower().split("e")[0]
    digits = "".join(char for char in mantissa if char.isdigit())
    return len(digits.strip("0"))


def _matches(claim: Number, value: float, tolerance: float) -> bool:
    return _distance(claim, value) <= claim_allowance(claim, tolerance)


@dataclass(frozen=True)
class ClaimCheck:
    claim: Number
    closest: Number | None
    matched: bool

    def as_evidence(self) -> dict[str, object]:
        return {
            "claimed": self.claim.value,
            "claimed_text": self.claim.text,
            "claimed_where": self.claim.where,
            "closest": self.closest.value if self.closest else None,
            "closest_where": self.closest.where if self.closest else None,
            "matched": self.matched,
        }


def claims_check(
    claims: list[Number], produced: list[Number], *, tolerance: float
) -> list[ClaimCheck]:
    """For each claim, the closest produced number and whether it matches; the
    unmatched claims come first."""
    checks = []
    seen: set[tuple[float, str]] = set()
    for claim in claims:
        key = (claim.value, claim.where)
        if key in seen:
            continue
        seen.add(key)
        closest = min(produced, key=lambda number: _distance(claim, number.value), default=None)
        matched = closest is not None and _matches(claim, closest.value, tolerance)
        checks.append(ClaimCheck(claim=claim, closest=closest, matched=matched))
    return sorted(checks, key=lambda check: check.matched)
