import hashlib

import factory
from django.core.files.base import ContentFile

from benchmark.models import (
    Artifact,
    ModelFamily,
    Submission,
)
from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus
from tests.benchmark import factories as base


class AgentFactory(base.AgentFactory):
    display_name = factory.LazyAttribute(lambda agent: agent.name)
    base_model = ""
    model_family = ModelFamily.OTHER


class SubmissionFactory(base.SubmissionFactory):
    agent = factory.SubFactory(AgentFactory)


def artifact_add(submission: Submission, path: str, kind: str, content: str | bytes) -> Artifact:
    """An artifact file stored the way the intake stores it (under MEDIA_ROOT)."""
    data = content.encode() if isinstance(content, str) else content
    artifact = Artifact(
        submission=submission,
        kind=kind,
        path=path,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    artifact.file.save(f"submissions/{submission.pk}/{path}", ContentFile(data), save=False)
    artifact.save()
    return artifact


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
