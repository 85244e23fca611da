"""Judging's models: rubrics, judges, judgments and their scores. Other apps'
tests import these or subclass them to adjust defaults."""

import factory
from django.db.models import Max

from benchmark.models import ModelFamily
from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus, Rubric
from submissions.models import Stage
from tests.benchmark import factories as base
from tests.benchmark.factories import artifact_add  # noqa: F401 - where the app's tests import it


class AgentFactory(base.AgentFactory):
    display_name = factory.LazyAttribute(lambda agent: agent.name)
    base_model = ""
    model_family = ModelFamily.OTHER


class SubmissionFactory(base.SubmissionFactory):
    agent = factory.SubFactory(AgentFactory)


# The site's own end-to-end rubric's dimensions, in its order.
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
    """A judge that calls the loopback fake server: set `api_base` to its url."""

    class Meta:
        model = Judge
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"judge-{n}")
    model = "openai/test-judge"
    api_base = "http://127.0.0.1:9/v1"
    api_key_env = "TEST_JUDGE_KEY"
    requests_per_minute = 10_000
    timeout_seconds = 5.0
    max_tokens = 2000
    is_active = True


class JudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Judgment

    submission = factory.SubFactory(SubmissionFactory)
    judge = factory.SubFactory(JudgeFactory)
    status = JudgmentStatus.QUEUED


class DimensionScoreFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DimensionScore

    judgment = factory.SubFactory(JudgmentFactory)
    dimension = "Overall"
    score = 7
