"""The submission tables moved from the benchmark app to the submissions app
with state-only migrations: a database migrated at the old layout, with rows
in it, migrates forward and keeps every row, relation, constraint and content
type."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from judging.models import Judgment
from submissions.models import Artifact, DerivedArtifact, Submission, SubmissionInput
from tests.support.migrations import apps_at, latest, migrate

OLD_LAYOUT = [("benchmark", "0017_derived_source_html"), ("submissions", None)]


OLD_STATE = [
    *OLD_LAYOUT[:1],
    ("judging", "0010_canaries"),
    ("contenttypes", "0002_remove_content_type_name"),
]


def _old_layout_rows(apps) -> dict[str, int]:
    """Rows written through the benchmark app's own historical models."""
    task = apps.get_model("benchmark", "Task").objects.create(
        slug="iclr2025_moved", title="Moved", conference="iclr", year=2025, description="d"
    )
    team = apps.get_model("benchmark", "Team").objects.create(name="Team", slug="team")
    agent = apps.get_model("benchmark", "Agent").objects.create(
        team=team, name="agent-moved", display_name="Agent"
    )
    submission_model = apps.get_model("benchmark", "Submission")
    idea = submission_model.objects.create(
        agent=agent, task=task, stage="idea", source="upload", archive_sha256="0" * 64
    )
    paper = submission_model.objects.create(
        agent=agent, task=task, stage="paper", source="upload", archive_sha256="1" * 64
    )
    apps.get_model("benchmark", "SubmissionInput").objects.create(
        submission=paper, based_on=idea, position=0
    )
    artifact = apps.get_model("benchmark", "Artifact").objects.create(
        submission=paper, kind="paper", path="paper.md", size=5, sha256="2" * 64, file="x/paper.md"
    )
    derived = apps.get_model("benchmark", "DerivedArtifact").objects.create(
        artifact=artifact, kind="html", size=3, content="<p>"
    )
    rubric = apps.get_model("judging", "Rubric").objects.create(
        stage="paper", version=99, dimensions=[], prompt="p", is_active=False
    )
    judge = apps.get_model("judging", "Judge").objects.create(name="moved", model="openai/x")
    judgment = apps.get_model("judging", "Judgment").objects.create(
        submission=paper, judge=judge, rubric=rubric
    )
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.filter(app_label="submissions").delete()
    old_type = content_type.objects.get_or_create(app_label="benchmark", model="submission")[0]
    return {
        "idea": idea.pk,
        "paper": paper.pk,
        "artifact": artifact.pk,
        "derived": derived.pk,
        "judgment": judgment.pk,
        "content_type": old_type.pk,
    }


@pytest.mark.django_db(transaction=True)
def test_a_database_at_the_old_layout_migrates_forward_with_its_rows():
    try:
        migrate(OLD_LAYOUT)
        ids = _old_layout_rows(apps_at(OLD_STATE))
    finally:
        migrate(latest())

    paper = Submission.objects.get(pk=ids["paper"])
    assert list(paper.based_on.values_list("pk", flat=True)) == [ids["idea"]]
    assert SubmissionInput.objects.get(submission=paper).position == 0
    artifact = Artifact.objects.get(pk=ids["artifact"])
    assert artifact.submission == paper
    assert DerivedArtifact.objects.get(pk=ids["derived"]).artifact == artifact
    assert Judgment.objects.get(pk=ids["judgment"]).submission == paper
    # The tables kept their names and constraints; the content type kept its row.
    assert Submission._meta.db_table == "benchmark_submission"
    with connection.cursor() as cursor:
        names = set(connection.introspection.get_constraints(cursor, "benchmark_submission"))
    assert {"submission_stage_valid", "submission_version_unique"} <= names
    assert ContentType.objects.get_for_model(Submission).pk == ids["content_type"]
