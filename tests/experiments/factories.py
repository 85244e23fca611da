"""Submissions with code files, stored under MEDIA_ROOT like uploaded ones."""

import hashlib

import factory
from django.core.files.base import ContentFile

from benchmark.models import (
    Agent,
    Artifact,
    ArtifactKind,
    Stage,
    Submission,
    SubmissionSource,
    SubmissionStatus,
    Team,
)
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
    display_name = factory.LazyAttribute(lambda agent: agent.name.title())


class SubmissionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Submission

    agent = factory.SubFactory(AgentFactory)
    task = factory.SubFactory(TaskFactory)
    stage = Stage.EXPERIMENT
    version = factory.Sequence(lambda n: n + 1)
    source = SubmissionSource.API
    archive_sha256 = factory.Sequence(lambda n: hashlib.sha256(f"archive {n}".encode()).hexdigest())
    status = SubmissionStatus.READY


def artifact_add(submission: Submission, path: str, content: str | bytes, kind: str) -> Artifact:
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


def submission_with_files(
    files: dict[str, str | bytes],
    *,
    kinds: dict[str, str] | None = None,
    **submission_fields,
) -> Submission:
    """A submission whose files are artifacts: code unless `kinds` says otherwise."""
    submission = SubmissionFactory(**submission_fields)
    for path, content in files.items():
        artifact_add(submission, path, content, (kinds or {}).get(path, ArtifactKind.CODE))
    return submission
