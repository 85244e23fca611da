import hashlib

import factory
from django.core.files.base import ContentFile

from benchmark.models import (
    Agent,
    Artifact,
    Stage,
    Submission,
    SubmissionSource,
    SubmissionStatus,
    Team,
)
from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus
from tests.benchmark.factories import TaskFactory


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Team {n}")
    slug = factory.Sequence(lambda n: f"team-{n}")


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent
        django_get_or_create = ("name",)

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")
    display_name = factory.LazyAttribute(lambda agent: agent.name)


class SubmissionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Submission

    agent = factory.SubFactory(AgentFactory)
    task = factory.SubFactory(TaskFactory)
    stage = Stage.END2END
    version = 1
    source = SubmissionSource.IMPORT
    status = SubmissionStatus.READY
    archive_sha256 = factory.Sequence(lambda n: hashlib.sha256(f"archive {n}".encode()).hexdigest())


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
