"""Judge drift: score again a seeded sample of a judge's finished judgments,
with the same rubric version and the same prompt (its hash is checked), and
compare. The new scores go to a `DriftCheck` and its `DriftRescore` rows; the
judgments stay as they were, so the leaderboard never moves by a drift check.

A judgment whose prompt would now be different (its submission's files or the
prompt template changed) is left out of the sample: its change would not be
the judge's drift. Imported judgments carry no prompt hash and never qualify.
"""

import random
import uuid
from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from common.results import results_changed

from ..models import DriftCheck, DriftRescore, Judge, Judgment, JudgmentKind, JudgmentStatus
from ..prompts import PromptError, judge_prompt_build
from .rubrics import rubric_by_id
from .run import JudgingFailed, _Run

# A change of 2 or more on the 1-10 scale is a different verdict, not noise.
BIG_CHANGE = 2.0


def drift_threshold() -> float:
    """The mean absolute change (on any dimension) above which a judge is flagged."""
    return float(getattr(settings, "JUDGE_DRIFT_THRESHOLD", 0.5))


def drift_sample(*, judge: Judge, size: int, seed: int) -> list[Judgment]:
    """`size` of the judge's finished, non-imported judgments with a prompt
    hash, drawn with `seed` (the same seed draws the same ones)."""
    ids = sorted(
        # Drift is measured on scores: a hallucination review has none to compare.
        Judgment.objects.filter(
            judge=judge, status=JudgmentStatus.DONE, imported=False, kind=JudgmentKind.SCORE
        )
        .exclude(prompt_sha256="")
        .values_list("id", flat=True)
    )
    chosen = sorted(random.Random(seed).sample(ids, min(size, len(ids))))  # noqa: S311
    judgments = Judgment.objects.filter(id__in=chosen).select_related("judge", "submission__task")
    return list(judgments.prefetch_related("scores").order_by("id"))


@dataclass(frozen=True)
class _Outcome:
    judgment: Judgment
    scores: dict[str, float]
    error: str = ""
    raw: str = ""


def _rescore(judgment: Judgment) -> _Outcome | None:
    """The judge's scores of the judgment's prompt now; None when the prompt
    is no longer the one the judgment was scored with."""
    judgment.rubric = rubric_by_id(judgment.rubric_id)
    try:
        prompt = judge_prompt_build(
            submission=judgment.submission, rubric=judgment.rubric, condition=judgment.condition
        )
    except PromptError:
        return None
    if prompt.sha256 != judgment.prompt_sha256:
        return None
    # A run on the finished judgment: its progress updates find no running
    # row and write nothing; only the call, the retries and the parsing run.
    run = _Run(judgment, uuid.uuid4())
    try:
        parsed, raw, _sha = run.judge()
    except JudgingFailed as exc:
        return _Outcome(judgment, {}, error=str(exc)[:5000], raw=exc.raw)
    scores = getattr(parsed, "scores", [])  # the sample holds score judgments only
    return _Outcome(judgment, {s.dimension: float(s.score) for s in scores}, raw=raw)


def drift_summary(
    pairs: list[tuple[dict[str, float], dict[str, float]]],
) -> tuple[dict[str, float], dict[str, int]]:
    """From (old scores, new scores) pairs: {dimension: mean |new - old|} and
    {dimension: how many moved by BIG_CHANGE or more}."""
    changes: dict[str, list[float]] = defaultdict(list)
    for old, new in pairs:
        for dimension, value in new.items():
            if dimension in old:
                changes[dimension].append(abs(value - old[dimension]))
    return (
        {d: sum(v) / len(v) for d, v in sorted(changes.items())},
        {d: sum(1 for c in v if c >= BIG_CHANGE) for d, v in sorted(changes.items())},
    )


def judge_drift_check(*, judge_name: str, sample: int, seed: int = 0) -> DriftCheck:
    """Score `sample` of the judge's finished judgments again and record the check."""
    judge = Judge.objects.get(name=judge_name)
    outcomes = [o for j in drift_sample(judge=judge, size=sample, seed=seed) if (o := _rescore(j))]
    pairs = [
        ({s.dimension: float(s.score) for s in o.judgment.scores.all()}, o.scores)
        for o in outcomes
        if not o.error
    ]
    mean_change, big = drift_summary(pairs)
    threshold = drift_threshold()
    with transaction.atomic():
        check = DriftCheck.objects.create(
            judge=judge,
            sample_size=sample,
            seed=seed,
            mean_abs_change=mean_change,
            n_changed_2plus=big,
            n_rescored=len(pairs),
            n_failed=len(outcomes) - len(pairs),
            threshold=threshold,
            flagged=any(v > threshold for v in mean_change.values()),
        )
        DriftRescore.objects.bulk_create(
            DriftRescore(
                drift_check=check,
                judgment=o.judgment,
                scores=o.scores,
                error=o.error,
                raw_response=o.raw,
            )
            for o in outcomes
        )
    results_changed(None)  # every stage's judges' board shows the judge's last check
    return check
