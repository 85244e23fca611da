"""The experiment tables moved from the benchmark app to the experiments app
with state-only migrations: a database migrated at the old layout, with rows
in it, migrates forward and keeps every row and relation."""

import pytest
from django.db import connection

from experiments.models import ExperimentRun, ObjectiveResult, ObjectiveTask, ReproductionCheck
from tests.support.migrations import apps_at, latest, migrate

OLD_LAYOUT = [("benchmark", "0006_agent_names_with_dots"), ("experiments", None)]
# The models of the old layout: benchmark's state before the move.
OLD_STATE = [
    ("benchmark", "0006_agent_names_with_dots"),
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
    submission = apps.get_model("benchmark", "Submission").objects.create(
        agent=agent, task=task, stage="method", source="upload", archive_sha256="0" * 64
    )
    run = apps.get_model("benchmark", "ExperimentRun").objects.create(
        submission=submission, phase="repro", command="sh run.sh", time_limit_seconds=60
    )
    check = apps.get_model("benchmark", "ReproductionCheck").objects.create(
        run=run, verdict="reproduced", summary="all 2 numbers found", tolerance=0.01
    )
    objective = apps.get_model("benchmark", "ObjectiveTask").objects.create(
        task=task,
        metric="mse",
        higher_is_better=False,
        baseline_score=1.0,
        human_score=0.5,
        eval_command="python evaluate.py",
        dev_data_dir="/data/dev",
        test_data_dir="/data/test",
    )
    test_run = apps.get_model("benchmark", "ExperimentRun").objects.create(
        submission=submission, phase="test", command="sh run.sh", time_limit_seconds=60
    )
    result = apps.get_model("benchmark", "ObjectiveResult").objects.create(
        objective=objective, agent=agent, dev_run=run, test_run=test_run, lloc=12, test_score=0.7
    )
    return {
        "run": run.pk,
        "check": check.pk,
        "objective": objective.pk,
        "result": result.pk,
        "submission": submission.pk,
    }


@pytest.mark.django_db(transaction=True)
def test_a_database_at_the_old_layout_migrates_forward_with_its_rows():
    try:
        migrate(OLD_LAYOUT)
        ids = _old_layout_rows(apps_at(OLD_STATE))
    finally:
        migrate(latest())

    run = ExperimentRun.objects.get(pk=ids["run"])
    assert run.submission_id == ids["submission"]
    assert run.command == "sh run.sh"
    assert ReproductionCheck.objects.get(pk=ids["check"]).run == run
    assert run.reproduction.summary == "all 2 numbers found"
    result = ObjectiveResult.objects.select_related("objective", "test_run").get(pk=ids["result"])
    assert result.objective == ObjectiveTask.objects.get(pk=ids["objective"])
    assert result.dev_run == run
    assert result.test_run.phase == "test"
    assert result.objective.relative_improvement(0.75) == pytest.approx(50.0)
    # The tables kept their names; the new app's constraints are the old ones.
    assert ExperimentRun._meta.db_table == "benchmark_experimentrun"
    with connection.cursor() as cursor:
        names = {
            c
            for c, _ in connection.introspection.get_constraints(
                cursor, "benchmark_experimentrun"
            ).items()
        }
    assert "experiment_status_valid" in names


@pytest.mark.django_db(transaction=True)
def test_the_moved_models_keep_their_content_types():
    from django.contrib.contenttypes.models import ContentType

    migrate(OLD_LAYOUT)
    try:
        content_type = apps_at(OLD_STATE).get_model("contenttypes", "ContentType")
        content_type.objects.filter(app_label="experiments").delete()
        old = content_type.objects.get_or_create(app_label="benchmark", model="experimentrun")[0]
    finally:
        migrate(latest())

    assert ContentType.objects.get_for_model(ExperimentRun).pk == old.pk
