"""Reads of judging results that the other apps build on.

The stage score of a submission on a dimension is the mean over the judges
whose judgment is done (MLR-Judge averages its two judges). One judge may be
chosen instead, and judges of a given model family may be left out, or judges
of the agent's own family (a judge is not asked to grade its maker's agent).
`dimension_means` is the one place that mean is written down; everything else
(`stage_scores`, the leaderboard's aggregates) builds on it.
"""

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Avg, Count, F, Q, QuerySet

from benchmark.models import ModelFamily

from .models import DimensionScore, JudgingCondition, Judgment, JudgmentStatus


def _ids(submission_ids: Iterable[int] | QuerySet) -> QuerySet | list[int]:
    # A queryset stays a subquery, so callers can pass "the submissions that
    # count" without fetching their ids first.
    return submission_ids if isinstance(submission_ids, QuerySet) else list(submission_ids)


def same_family_judgment_q(prefix: str = "") -> Q:
    """Judgments whose judge shares the judged agent's model family ("other" is no family)."""
    return Q(
        **{f"{prefix}judge__model_family": F(f"{prefix}submission__agent__model_family")}
    ) & ~Q(**{f"{prefix}judge__model_family": ModelFamily.OTHER})


def done_judgments(
    *,
    submission_ids: Iterable[int] | QuerySet | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
) -> QuerySet[Judgment]:
    """Finished judgments, filtered as the caller asks (the judgments a score counts)."""
    judgments = Judgment.objects.filter(status=JudgmentStatus.DONE, condition=condition)
    if submission_ids is not None:
        judgments = judgments.filter(submission_id__in=_ids(submission_ids))
    if judge:
        judgments = judgments.filter(judge__name=judge)
    if exclude_family:
        judgments = judgments.exclude(judge__model_family=exclude_family)
    if exclude_same_family:
        judgments = judgments.exclude(same_family_judgment_q())
    return judgments


def done_scores(
    *,
    submission_ids: Iterable[int] | QuerySet | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
) -> QuerySet[DimensionScore]:
    """Dimension scores of finished judgments, filtered as the caller asks."""
    scores = DimensionScore.objects.filter(
        judgment__status=JudgmentStatus.DONE, judgment__condition=condition
    )
    if submission_ids is not None:
        scores = scores.filter(judgment__submission_id__in=_ids(submission_ids))
    if judge:
        scores = scores.filter(judgment__judge__name=judge)
    if exclude_family:
        scores = scores.exclude(judgment__judge__model_family=exclude_family)
    if exclude_same_family:
        scores = scores.exclude(same_family_judgment_q("judgment__"))
    return scores


def dimension_means(
    *,
    submission_ids: Iterable[int] | QuerySet | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
) -> QuerySet:
    """The stage score of each submission on each dimension, as a grouped
    queryset of `{"submission_id", "dimension", "mean", "n_judges"}`.

    It stays a queryset so that callers can filter it further, add
    aggregates over the same judgments, or wrap it in a larger query (the
    leaderboard averages it over tasks in the database)."""
    return (
        done_scores(
            submission_ids=submission_ids,
            condition=condition,
            judge=judge,
            exclude_family=exclude_family,
            exclude_same_family=exclude_same_family,
        )
        .values("dimension", submission_id=F("judgment__submission_id"))
        .annotate(mean=Avg("score"), n_judges=Count("judgment_id"))
        .order_by()
    )


def stage_scores(
    *,
    submission_ids: Iterable[int] | QuerySet | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
) -> dict[int, dict[str, Decimal]]:
    """`{submission_id: {dimension: mean over judges}}`, in one query."""
    rows = dimension_means(
        submission_ids=submission_ids,
        condition=condition,
        judge=judge,
        exclude_family=exclude_family,
        exclude_same_family=exclude_same_family,
    )
    result: dict[int, dict[str, Decimal]] = defaultdict(dict)
    for row in rows:
        result[row["submission_id"]][row["dimension"]] = row["mean"]
    return dict(result)
