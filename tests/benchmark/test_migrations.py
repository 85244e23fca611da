"""Migrations carry an existing database forward with its rows."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from submissions.models import Submission as CurrentSubmission

INTAKE_ONLY = ("benchmark", "0008_submission_status_intake_only")


@pytest.mark.django_db(transaction=True)
def test_submissions_stored_as_judging_or_judged_become_ready():
    executor = MigrationExecutor(connection)
    before = [
        parent
        for parent in executor.loader.graph.node_map[INTAKE_ONLY].parents
        if parent.key[0] == "benchmark"
    ]
    assert before, "0008 follows a benchmark migration"
    before_keys = [parent.key for parent in before]
    executor.migrate(before_keys)
    old = executor.loader.project_state(before_keys).apps
    team = old.get_model("benchmark", "Team").objects.create(name="Old", slug="old")
    agent = old.get_model("benchmark", "Agent").objects.create(
        team=team, name="old-agent", display_name="Old agent"
    )
    task = old.get_model("benchmark", "Task").objects.create(
        slug="iclr2025_old", title="Old", description="A task.", conference="iclr", year=2025
    )
    Submission = old.get_model("benchmark", "Submission")
    ids = {
        status: Submission.objects.create(
            agent=agent,
            task=task,
            stage="end2end",
            version=version,
            source="import",
            archive_sha256=f"{version:064d}",
            status=status,
        ).pk
        for version, status in enumerate(["received", "ready", "failed", "judging", "judged"], 1)
    }

    executor = MigrationExecutor(connection)  # the graph as it is now
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert dict(CurrentSubmission.objects.values_list("pk", "status")) == {
        ids["received"]: "received",
        ids["ready"]: "ready",
        ids["failed"]: "failed",
        ids["judging"]: "ready",
        ids["judged"]: "ready",
    }
    # The database now refuses the two values the intake never writes.
    with pytest.raises(IntegrityError), transaction.atomic():
        CurrentSubmission.objects.filter(pk=ids["ready"]).update(status="judged")
