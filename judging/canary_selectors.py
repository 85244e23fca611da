"""How often each judge catches the fabrications planted in the canaries.

Per judge and per type, over its newest finished hallucination review (judged with
code) of each canary:

- recall (type): of the twins with a fabrication of the type, the share it flagged
  with a finding of that type; recall (any): flagged at all (a finding of any type,
  or `has_hallucination`);
- located: the share where a finding of the right type points at the planted place
  (its evidence or description quotes the plant: the made-up number, author,
  dataset or altered equation, compared without case or spaces);
- false alarms: of the unchanged controls, the share it flagged with a finding of
  the type (per type) or at all (`false_alarm_any`).

Each share carries its n and its 95% Wilson interval.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Max

from common.stats import wilson_interval

from .canaries import normalised
from .models import (
    Canary,
    CanaryRole,
    HallucinationFinding,
    HallucinationType,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
)

KINDS: tuple[str, ...] = tuple(HallucinationType.values)
# The shortest quote of a finding's evidence that can stand for a place.
MIN_QUOTE = 10


@dataclass(frozen=True)
class Rate:
    hits: int
    n: int
    value: float | None
    interval: tuple[float, float] | None


def rate_of(hits: int, n: int) -> Rate:
    return Rate(hits, n, hits / n if n else None, wilson_interval(hits, n))


@dataclass(frozen=True)
class CanaryKindScore:
    kind: str
    recall_type: Rate
    recall_any: Rate
    located: Rate
    false_alarm: Rate


@dataclass(frozen=True)
class JudgeCanaries:
    judge: str
    by_kind: dict[str, CanaryKindScore]
    false_alarm_any: Rate
    n_twins: int
    n_controls: int


@dataclass
class _Review:
    flagged: bool
    findings: list[tuple[str, str]] = field(default_factory=list)  # (type, evidence text)


@dataclass(frozen=True)
class TwinVerdict:
    """One twin's ground truth and each judge's verdict on it."""

    kind: str
    caught: dict[str, bool]  # judge -> flagged with the planted type


def points_at(markers: list[str], evidence: str) -> bool:
    """Whether a finding's text quotes the planted place: a marker appears in it,
    or a quote of it of some length appears in a marker."""
    quote = normalised(evidence)
    for marker in markers:
        target = normalised(marker)
        if target and target in quote:
            return True
        if len(quote) >= MIN_QUOTE and quote in target:
            return True
    return False


def _reviews(stage: str | None) -> tuple[dict[int, Canary], dict[tuple[int, str], _Review]]:
    """The canaries (by submission id) and each judge's newest finished review of each."""
    canaries = Canary.objects.all()
    if stage is not None:
        canaries = canaries.filter(submission__stage=stage)
    by_submission = {c.submission_id: c for c in canaries}
    judgments = Judgment.objects.filter(
        submission_id__in=list(by_submission),
        kind=JudgmentKind.HALLUCINATION,
        status=JudgmentStatus.DONE,
        condition=JudgingCondition.WITH_CODE,
    )
    newest = judgments.values("submission_id", "judge_id").annotate(last=Max("id")).values("last")
    rows = judgments.filter(id__in=newest).values_list(
        "id", "submission_id", "judge__name", "has_hallucination"
    )
    reviews: dict[tuple[int, str], _Review] = {}
    by_judgment: dict[int, _Review] = {}
    for judgment_id, submission_id, judge, has in rows:
        review = _Review(flagged=bool(has))
        reviews[(submission_id, judge)] = review
        by_judgment[judgment_id] = review
    for judgment_id, kind, description, evidence in HallucinationFinding.objects.filter(
        judgment_id__in=list(by_judgment)
    ).values_list("judgment_id", "type", "description", "evidence"):
        review = by_judgment[judgment_id]
        review.flagged = True
        review.findings.append((kind, f"{evidence}\n{description}"))
    return by_submission, reviews


def canary_scores(*, stage: str | None = None) -> dict[str, JudgeCanaries]:
    """{judge name: its canary scores} over the canaries of `stage` (None: all)."""
    canaries, reviews = _reviews(stage)
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0] * 6))
    controls: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (submission_id, judge), review in reviews.items():
        canary = canaries[submission_id]
        if canary.role == CanaryRole.CONTROL:
            controls[judge][0] += int(review.flagged)
            controls[judge][1] += 1
            for kind in KINDS:
                # [..., false alarms of the type, controls]
                counts[judge][kind][4] += int(any(t == kind for t, _ in review.findings))
                counts[judge][kind][5] += 1
            continue
        right_texts = [text for t, text in review.findings if t == canary.kind]
        mine = counts[judge][canary.kind]  # [right type, any, located, twins, ...]
        mine[0] += int(bool(right_texts))
        mine[1] += int(review.flagged)
        mine[2] += int(any(points_at(canary.markers, text) for text in right_texts))
        mine[3] += 1
    result = {}
    for judge in sorted(set(counts) | set(controls)):
        by_kind = {}
        for kind in KINDS:
            right, flagged, located, twins, alarms, kind_controls = counts[judge][kind]
            by_kind[kind] = CanaryKindScore(
                kind=kind,
                recall_type=rate_of(right, twins),
                recall_any=rate_of(flagged, twins),
                located=rate_of(located, twins),
                false_alarm=rate_of(alarms, kind_controls),
            )
        alarms_any, n_controls = controls[judge]
        result[judge] = JudgeCanaries(
            judge=judge,
            by_kind=by_kind,
            false_alarm_any=rate_of(alarms_any, n_controls),
            n_twins=sum(counts[judge][k][3] for k in KINDS),
            n_controls=n_controls,
        )
    return result


def canary_twin_verdicts(*, stage: str) -> list[TwinVerdict]:
    """Each twin of the stage with every judge's caught-or-not, for a rule that
    combines the judges (the fabrication page's)."""
    canaries, reviews = _reviews(stage)
    verdicts: dict[int, dict[str, bool]] = defaultdict(dict)
    for (submission_id, judge), review in reviews.items():
        canary = canaries[submission_id]
        if canary.role == CanaryRole.TWIN:
            verdicts[submission_id][judge] = any(t == canary.kind for t, _ in review.findings)
    return [TwinVerdict(canaries[sid].kind, caught) for sid, caught in sorted(verdicts.items())]
