"""Judging's models: rubrics, judges, judgments and their scores."""

from typing import Any

import factory
from django.db.models import Max

from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus, Rubric
from submissions.models import Stage
from tests.submissions.factories import SubmissionFactory
from tests.support.model_factory import ModelFactory

# The site's own end-to-end rubric's dimensions, in its order.
END2END_DIMENSIONS = ["Clarity", "Novelty", "Soundness", "Significance", "Overall"]


def rubric_dimensions(
    keys: list[str] = END2END_DIMENSIONS, low: int = 1, high: int = 10
) -> list[dict[str, Any]]:
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


class RubricFactory(ModelFactory[Rubric]):
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


class JudgeFactory(ModelFactory[Judge]):
    """A judge that calls the loopback fake server: set `api_base` to its url.
    Its model is named after it and is in no price table."""

    class Meta:
        model = Judge
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"judge-{n}")
    model = factory.LazyAttribute(lambda judge: f"openai/{judge.name}")
    api_base = "http://127.0.0.1:9/v1"
    api_key_env = "TEST_JUDGE_KEY"
    requests_per_minute = 10_000
    timeout_seconds = 5.0
    max_tokens = 2000
    is_active = True


class JudgmentFactory(ModelFactory[Judgment]):
    class Meta:
        model = Judgment

    submission = factory.SubFactory(SubmissionFactory)
    judge = factory.SubFactory(JudgeFactory)
    status = JudgmentStatus.QUEUED


class DimensionScoreFactory(ModelFactory[DimensionScore]):
    class Meta:
        model = DimensionScore

    judgment = factory.SubFactory(JudgmentFactory)
    dimension = "Overall"
    score = 7
