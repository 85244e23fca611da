"""Test data for human review: users, teams, agents, submissions with
artifacts, rubrics, judges with judgments, rounds and assignments."""

import hashlib
from datetime import timedelta
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.db.models import Max
from django.utils import timezone

from benchmark.models import Agent, Stage, Submission, Team
from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus, Rubric
from reviews.models import Assignment, ReviewRound
from tests.benchmark.factories import TaskFactory, artifact_add  # noqa: F401 - re-exported

END2END_DIMENSIONS = ["Clarity", "Novelty", "Soundness", "Significance", "Overall"]


def rubric_dimensions(keys=END2END_DIMENSIONS, low=1, high=10) -> list[dict]:
    return [
        {
            "key": key,
            "label": key,
            "min": low,
            "max": high,
            "levels": {
                "1": f"{key}: fundamentally flawed",
                "5": f"{key}: borderline",
                "10": f"{key}: exceptional",
            },
        }
        for key in keys
    ]


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = factory.django.Password("pw-for-tests")


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Team {n}")
    slug = factory.Sequence(lambda n: f"team-{n}")

    @factory.post_generation
    def members(self, create, extracted, **kwargs):
        if create and extracted:
            self.members.add(*extracted)


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent
        django_get_or_create = ("name",)

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")
    display_name = factory.LazyAttribute(lambda agent: f"Agent {agent.name}")
    base_model = factory.Sequence(lambda n: f"base-model-{n}")


class SubmissionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Submission

    agent = factory.SubFactory(AgentFactory)
    task = factory.SubFactory(TaskFactory)
    stage = Stage.END2END
    source = "import"
    archive_sha256 = factory.Sequence(lambda n: hashlib.sha256(str(n).encode()).hexdigest())
    status = "ready"


class RubricFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Rubric

    stage = Stage.END2END
    # The next version of the stage: the site's own rubrics are version 1.
    version = factory.LazyAttribute(
        lambda rubric: (
            (Rubric.objects.filter(stage=rubric.stage).aggregate(v=Max("version"))["v"] or 0) + 1
        )
    )
    dimensions = factory.LazyFunction(rubric_dimensions)
    overall_key = "Overall"
    extra_fields = factory.LazyFunction(lambda: ["Confidence"])
    prompt = "Review the paper."


class JudgeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Judge
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"judge-{n}")
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
