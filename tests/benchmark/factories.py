import hashlib

import factory

from benchmark.models import Conference, Task, TaskKind


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task
        django_get_or_create = ("slug",)

    conference = Conference.ICLR
    year = 2025
    slug = factory.Sequence(lambda n: f"iclr2025_generated{n}")
    title = factory.Sequence(lambda n: f"Generated workshop {n}")
    description = factory.LazyAttribute(lambda task: f"# {task.title}\n\nA generated task.")
    kind = TaskKind.OPEN_ENDED


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "auth.User"
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"builder{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = factory.django.Password("a-long-test-password")


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "benchmark.Team"
        django_get_or_create = ("slug",)
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Team {n}")
    slug = factory.Sequence(lambda n: f"team-{n}")

    @factory.post_generation
    def members(self, create, extracted, **kwargs):
        if create and extracted:
            self.members.add(*extracted)


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "benchmark.Agent"
        django_get_or_create = ("name",)

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")
    display_name = factory.LazyAttribute(lambda agent: agent.name.title())
    base_model = "o4-mini-2025-04-16"
    model_family = "openai"


class SubmissionFactory(factory.django.DjangoModelFactory):
    """A submission as the published runs are imported: ready, version 1.
    The apps' factories adjust stage, status and source to their tests."""

    class Meta:
        model = "submissions.Submission"

    agent = factory.SubFactory(AgentFactory)
    task = factory.SubFactory(TaskFactory)
    stage = "end2end"
    version = 1
    source = "import"
    status = "ready"
    archive_sha256 = factory.Sequence(lambda n: hashlib.sha256(f"archive {n}".encode()).hexdigest())


def artifact_add(submission, path: str, kind: str, content: str | bytes):
    """Store one file of a submission the way the intake does (under MEDIA_ROOT)."""
    from django.core.files.base import ContentFile

    from submissions.models import Artifact

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
