import factory

from benchmark.models import (
    ModelFamily,
)
from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus
from tests.benchmark import factories as base
from tests.benchmark.factories import artifact_add  # noqa: F401 - where the app's tests import it


class AgentFactory(base.AgentFactory):
    display_name = factory.LazyAttribute(lambda agent: agent.name)
    base_model = ""
    model_family = ModelFamily.OTHER


class SubmissionFactory(base.SubmissionFactory):
    agent = factory.SubFactory(AgentFactory)


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
