"""The submissions app's models: submissions and their artifacts."""

import hashlib
from pathlib import Path

import factory
from django.core.files.base import ContentFile

from submissions.models import Artifact, Stage, Submission, SubmissionSource, SubmissionStatus
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.support.model_factory import ModelFactory


class SubmissionFactory(ModelFactory[Submission]):
    """A submission as the published runs are imported: end to end, ready, version 1.

    Trait `experiment`: an experiment-stage submission uploaded over the API,
    each one a new version (several of one agent on one task)."""

    class Meta:
        model = Submission

    class Params:
        experiment = factory.Trait(
            stage=Stage.EXPERIMENT,
            source=SubmissionSource.API,
            version=factory.Sequence(lambda n: n + 1),
        )

    agent = factory.SubFactory(AgentFactory)
    task = factory.SubFactory(TaskFactory)
    stage = Stage.END2END
    version = 1
    source = SubmissionSource.IMPORT
    status = SubmissionStatus.READY
    archive_sha256 = factory.Sequence(lambda n: hashlib.sha256(f"archive {n}".encode()).hexdigest())


def artifact_add(submission: Submission, path: str, kind: str, content: str | bytes) -> Artifact:
    """Store one file of a submission the way the intake does (under MEDIA_ROOT)."""
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


def archive_intake(agent, task, path: Path, stage: str = "end2end") -> Submission:
    """The archive at `path` taken in through the intake, as an upload of `agent`'s."""
    from submissions.intake import submission_intake

    return submission_intake(
        agent=agent,
        task=task,
        stage=stage,
        archive=path,
        archive_name=path.name,
        uploader=None,
        source="upload",
    )
