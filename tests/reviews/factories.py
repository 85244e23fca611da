"""Test data for human review: users, teams, agents, submissions with
artifacts, rubrics, judges with judgments, rounds and assignments."""

from datetime import timedelta
from decimal import Decimal

import factory
from django.utils import timezone

from benchmark.models import ModelFamily
from judging.models import DimensionScore, Judgment, JudgmentStatus
from reviews.models import Assignment, ReviewRound
from submissions.models import Stage
from tests.benchmark import factories as base
from tests.benchmark.factories import TaskFactory, TeamFactory, artifact_add  # noqa: F401
from tests.judging import factories as judging
from tests.judging.factories import (  # noqa: F401 - re-exported
    END2END_DIMENSIONS,
    RubricFactory,
    rubric_dimensions,
)


class UserFactory(base.UserFactory):
    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


class AgentFactory(base.AgentFactory):
    display_name = factory.LazyAttribute(lambda agent: f"Agent {agent.name}")
    base_model = factory.Sequence(lambda n: f"base-model-{n}")
    model_family = ModelFamily.OTHER


class SubmissionFactory(base.SubmissionFactory):
    agent = factory.SubFactory(AgentFactory)


class JudgeFactory(judging.JudgeFactory):
    model = factory.LazyAttribute(lambda judge: f"openai/{judge.name}")


def judgment_record(submission, judge, rubric, scores: dict[str, float]) -> Judgment:
    """A done judgment of `submission` by `judge` with these dimension scores."""
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubric, status=JudgmentStatus.DONE
    )
    DimensionScore.objects.bulk_create(
        DimensionScore(judgment=judgment, dimension=d, score=Decimal(str(s)))
        for d, s in scores.items()
    )
    return judgment


class ReviewRoundFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReviewRound

    name = factory.Sequence(lambda n: f"Round {n}")
    stage = Stage.END2END
    due_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=14))


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Assignment

    review_round = factory.SubFactory(ReviewRoundFactory)
    reviewer = factory.SubFactory(UserFactory)
    submission = factory.SubFactory(SubmissionFactory)
    due_at = factory.LazyAttribute(lambda a: a.review_round.due_at)
