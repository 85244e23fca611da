"""The reviews app's models: review rounds and assignments, and done
judgments to compare the reviewers' scores with."""

from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal

import factory
from django.utils import timezone

from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus, Rubric
from reviews.models import Assignment, ReviewRound
from submissions.models import Stage, Submission
from tests.benchmark.factories import UserFactory
from tests.submissions.factories import SubmissionFactory
from tests.support.model_factory import ModelFactory


def judgment_record(
    submission: Submission, judge: Judge, rubric: Rubric, scores: Mapping[str, float]
) -> Judgment:
    """A done judgment of `submission` by `judge` with these dimension scores."""
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubric, status=JudgmentStatus.DONE
    )
    DimensionScore.objects.bulk_create(
        DimensionScore(judgment=judgment, dimension=d, score=Decimal(str(s)))
        for d, s in scores.items()
    )
    return judgment


class ReviewRoundFactory(ModelFactory[ReviewRound]):
    class Meta:
        model = ReviewRound

    name = factory.Sequence(lambda n: f"Round {n}")
    stage = Stage.END2END
    due_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=14))


class AssignmentFactory(ModelFactory[Assignment]):
    class Meta:
        model = Assignment

    review_round = factory.SubFactory(ReviewRoundFactory)
    reviewer = factory.SubFactory(UserFactory)
    submission = factory.SubFactory(SubmissionFactory)
    due_at = factory.LazyAttribute(lambda a: a.review_round.due_at)
