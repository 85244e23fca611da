"""Submissions with code files, stored under MEDIA_ROOT like uploaded ones."""

import factory

from benchmark.models import ModelFamily
from submissions.models import ArtifactKind, Stage, Submission, SubmissionSource
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


def submission_with_files(
    files: dict[str, str | bytes],
    *,
    kinds: dict[str, str] | None = None,
    **submission_fields,
) -> Submission:
    """A submission whose files are artifacts: code unless `kinds` says otherwise."""
    submission = SubmissionFactory(**submission_fields)
    for path, content in files.items():
        base.artifact_add(submission, path, (kinds or {}).get(path, ArtifactKind.CODE), content)
    return submission
