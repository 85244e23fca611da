"""Reading a judge's answer: one JSON object, bare or in a ```json fence, with
every dimension of the rubric scored within its range. Anything short of that
is a `ReviewFormatError` listing each problem, which the judge run sends back
to the model when it asks again. The same reader checks imported reviews.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from .rubrics import (
    CONFIDENCE,
    CONFIDENCE_RANGE,
    HALLUCINATION,
    HALLUCINATION_TYPES,
    OVERALL,
    OVERALL_ALIASES,
)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class ReviewFormatError(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass
class ParsedScore:
    dimension: str
    score: Decimal
    scale_min: int
    scale_max: int
    justification: str = ""


@dataclass
class ParsedReview:
    scores: list[ParsedScore]
    strengths: list[str] = field(default_factory=list)
    weaknesses: list[str] = field(default_factory=list)
    confidence: int | None = None
    has_hallucination: bool | None = None
    hallucination_details: str = ""


def json_extract(text: str) -> dict:
    """The JSON object in `text`: the whole answer, or the first fenced block that
    parses as an object."""
    stripped = text.strip()
    if not stripped:
        raise ReviewFormatError(["the answer was empty"])
    candidates = [stripped] + [match.group(1).strip() for match in _FENCE.finditer(text)]
    last_error = None
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError as exc:
            last_error = exc
            continue
        if isinstance(value, dict):
            return value
        last_error = None
    if last_error is not None and (stripped.startswith("{") or _FENCE.search(text)):
        raise ReviewFormatError(
            [f"the JSON is not valid: {last_error.msg} (line {last_error.lineno})"]
        )
    raise ReviewFormatError(["the answer is not a JSON object (bare, or in a ```json code block)"])


def _number(value) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if isinstance(value, str):
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            return None
    return None


def _text_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(item) for item in value if str(item).strip()]
    return [str(value)]


def _overall_aliased(data: dict) -> dict:
    """The answer with its overall score under `OVERALL`, whatever alias the model used."""
    if OVERALL in data:
        return data
    for alias in OVERALL_ALIASES:
        if alias in data:
            return {**data, OVERALL: data[alias]}
    return data


def _dimension_score(dimension: dict, entry: object, problems: list[str]) -> ParsedScore | None:
    """One dimension's score within its range (to 0.01), or None and a problem."""
    key, low, high = dimension["key"], dimension["min"], dimension["max"]
    if entry is None:
        problems.append(f'"{key}" is missing')
        return None
    raw_score = entry.get("score") if isinstance(entry, dict) else entry
    score = _number(raw_score)
    if score is None or not score.is_finite():
        problems.append(f'"{key}" has no numeric score (got {json.dumps(raw_score)[:40]})')
        return None
    if not low <= score <= high:
        problems.append(f'"{key}" score {score} is outside {low}-{high}')
        return None
    if score != score.quantize(Decimal("0.01")):
        score = score.quantize(Decimal("0.01"))
    justification = str(entry.get("justification") or "") if isinstance(entry, dict) else ""
    return ParsedScore(key, score, low, high, justification)


def _confidence(data: dict, *, required: bool, problems: list[str]) -> int | None:
    raw = data.get(CONFIDENCE)
    if isinstance(raw, dict):
        raw = raw.get("score")
    if raw is None:
        if required:
            problems.append(f'"{CONFIDENCE}" is missing')
        return None
    value = _number(raw)
    low, high = CONFIDENCE_RANGE
    if value is None or value != value.to_integral_value() or not low <= value <= high:
        problems.append(f'"{CONFIDENCE}" must be an integer {low}-{high} (got {raw})')
        return None
    return int(value)


def _hallucination(data: dict, *, required: bool, problems: list[str]) -> tuple[bool | None, str]:
    """The judge's hallucination flag (true/false, also as a string) and its details."""
    raw = data.get(HALLUCINATION)
    if raw is None:
        if required:
            problems.append(f'"{HALLUCINATION}" is missing')
        return None, ""
    flag, details = raw, ""
    if isinstance(raw, dict):
        flag = raw.get("has_hallucination")
        details = str(raw.get("details") or "")
    if isinstance(flag, str) and flag.strip().lower() in {"true", "false"}:
        flag = flag.strip().lower() == "true"
    if not isinstance(flag, bool):
        problems.append(f'"{HALLUCINATION}.has_hallucination" must be true or false')
        return None, details
    return flag, details


def review_parse(
    text_or_data: str | dict, *, dimensions: list[dict], extra_fields: list[str]
) -> ParsedReview:
    """Check an answer against a rubric's dimensions and required extra fields."""
    data = json_extract(text_or_data) if isinstance(text_or_data, str) else text_or_data
    data = _overall_aliased(data)
    problems: list[str] = []
    scores: list[ParsedScore] = []
    strengths: list[str] = []
    weaknesses: list[str] = []
    for dimension in dimensions:
        entry = data.get(dimension["key"])
        parsed = _dimension_score(dimension, entry, problems)
        if parsed is None:
            continue
        scores.append(parsed)
        if parsed.dimension == OVERALL and isinstance(entry, dict):
            strengths = _text_list(entry.get("strengths"))
            weaknesses = _text_list(entry.get("weaknesses"))
    confidence = _confidence(data, required=CONFIDENCE in extra_fields, problems=problems)
    has_hallucination, details = _hallucination(
        data, required=HALLUCINATION in extra_fields, problems=problems
    )
    if problems:
        raise ReviewFormatError(problems)
    return ParsedReview(
        scores=scores,
        strengths=strengths,
        weaknesses=weaknesses,
        confidence=confidence,
        has_hallucination=has_hallucination,
        hallucination_details=details,
    )


# ---------------------------------------------------------------- hallucination reviews

# A type as the rubric names it, as its key, or with the case or spacing a model uses.
_TYPE_KEYS: dict[str, str] = {}
for _key, _name, _meaning in HALLUCINATION_TYPES:
    _TYPE_KEYS[_key] = _key
    _TYPE_KEYS[_name.lower()] = _key
    _TYPE_KEYS[_name.lower().replace(" ", "_")] = _key


@dataclass(frozen=True)
class ParsedFinding:
    type: str  # a HallucinationType value; "" for the experiment rubric's yes/no verdict
    description: str
    evidence: str


@dataclass
class ParsedHallucinationReview:
    has_hallucination: bool
    findings: list[ParsedFinding]
    overall_assessment: str = ""
    confidence: int | None = None


def hallucination_type_key(value: object) -> str | None:
    """The type key of a finding's `type`, None when it names no known type."""
    if not isinstance(value, str):
        return None
    return _TYPE_KEYS.get(" ".join(value.strip().lower().split()))


def _finding(index: int, item: object, problems: list[str]) -> ParsedFinding | None:
    if not isinstance(item, dict):
        problems.append(f"hallucinations[{index}] is not an object")
        return None
    key = hallucination_type_key(item.get("type"))
    if key is None:
        names = ", ".join(name for _k, name, _m in HALLUCINATION_TYPES)
        problems.append(
            f"hallucinations[{index}].type {json.dumps(item.get('type'))[:60]} is not one of "
            f"{names}"
        )
        return None
    return ParsedFinding(
        type=key,
        description=str(item.get("description") or ""),
        evidence=str(item.get("evidence") or ""),
    )


def hallucination_parse(text_or_data: str | dict) -> ParsedHallucinationReview:
    """Check a hallucination review against the rubric's schema: a boolean flag,
    typed findings (at least one when the flag is true, none when it is false), an
    overall assessment and a confidence of 1-5."""
    data = json_extract(text_or_data) if isinstance(text_or_data, str) else text_or_data
    problems: list[str] = []
    flag = data.get("has_hallucination")
    if isinstance(flag, str) and flag.strip().lower() in {"true", "false"}:
        flag = flag.strip().lower() == "true"
    if not isinstance(flag, bool):
        problems.append('"has_hallucination" must be true or false')
    raw_items = data.get("hallucinations", [])
    if raw_items is None:
        raw_items = []
    if not isinstance(raw_items, list):
        problems.append('"hallucinations" must be a list')
        raw_items = []
    findings = [f for i, item in enumerate(raw_items) if (f := _finding(i, item, problems))]
    if flag is True and not raw_items:
        problems.append('"has_hallucination" is true but "hallucinations" is empty')
    if flag is False and raw_items:
        problems.append('"has_hallucination" is false but "hallucinations" lists findings')
    confidence = _confidence({CONFIDENCE: data.get("confidence")}, required=True, problems=problems)
    if problems:
        raise ReviewFormatError(problems)
    assert isinstance(flag, bool)
    return ParsedHallucinationReview(
        has_hallucination=flag,
        findings=findings,
        overall_assessment=str(data.get("overall_assessment") or ""),
        confidence=confidence,
    )
