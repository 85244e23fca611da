"""Reads of judging results that the other apps build on.

The stage score of a submission on a dimension is the mean over the judges
whose judgment is done (MLR-Judge averages its two judges). One judge may be
chosen instead, and judges of a given model family may be left out.
"""

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Avg, Count, QuerySet

from .models import DimensionScore, JudgingCondition, JudgmentStatus


def done_scores(
    *,
    submission_ids: Iterable[int] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
) -> QuerySet[DimensionScore]:
    """Dimension scores of finished judgments, filtered as the caller asks."""
    scores = DimensionScore.objects.filter(
        judgment__status=JudgmentStatus.DONE, judgment__condition=condition
    )
    if submission_ids is not None:
        scores = scores.filter(judgment__submission_id__in=list(submission_ids))
    if judge:
        scores = scores.filter(judgment__judge__name=judge)
    if exclude_family:
        scores = scores.exclude(judgment__judge__model_family=exclude_family)
    return scores


def stage_scores(
    *,
    submission_ids: Iterable[int] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
) -> dict[int, dict[str, Decimal]]:
    """`{submission_id: {dimension: mean over judges}}`, in one query."""
    rows = (
        done_scores(
            submission_ids=submission_ids,
            condition=condition,
            judge=judge,
            exclude_family=exclude_family,
        )
        .values_list("judgment__submission_id", "dimension")
        .annotate(mean=Avg("score"), n_judges=Count("judgment_id"))
        .order_by()
    )
    result: dict[int, dict[str, Decimal]] = defaultdict(dict)
    for submission_id, dimension, mean, _n in rows:
        result[submission_id][dimension] = mean
    return dict(result)
