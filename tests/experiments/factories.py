"""Submissions with code files, stored under MEDIA_ROOT like uploaded ones."""

import hashlib

import factory
from django.core.files.base import ContentFile

from benchmark.models import (
    Artifact,
    ArtifactKind,
    ModelFamily,
    Stage,
    Submission,
    SubmissionSource,
)
from tests.benchmark import factories as base


class AgentFactory(base.AgentFactory):
    display_name = factory.LazyAttribute(lambda agent: agent.name.title())
    base_model = ""
    model_family = ModelFamily.OTHER


class SubmissionFactory(base.SubmissionFactory):
    agent = factory.SubFactory(AgentFactory)
    stage = Stage.EXPERIMENT
    version = factory.Sequence(lambda n: n + 1)
    source = SubmissionSource.API


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
