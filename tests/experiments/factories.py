"""Submissions with code files, stored under MEDIA_ROOT like uploaded ones, and
finished runs of the shipped objective task's example methods. The experiments
app's tests make no model of their own: agents and submissions come from their
owning apps' factories."""

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.utils import timezone

from experiments.models import ExperimentRun, ExperimentStatus
from experiments.queue import objective_test_queue
from experiments.results import objective_result_record
from experiments.shipped import SHIPPED_ROOT
from submissions.models import ArtifactKind, Submission
from tests.submissions.factories import SubmissionFactory, artifact_add

CURVE_EXAMPLES = SHIPPED_ROOT / "neurips2025_objective_curve_fitting" / "examples"


def submission_with_files(
    files: Mapping[str, str | bytes],
    *,
    kinds: Mapping[str, str] | None = None,
    **submission_fields: Any,
) -> Submission:
    """An experiment-stage submission whose files are artifacts: code unless
    `kinds` says otherwise."""
    submission = SubmissionFactory(experiment=True, **submission_fields)
    for path, content in files.items():
        artifact_add(submission, path, (kinds or {}).get(path, ArtifactKind.CODE), content)
    return submission


def curve_method(name: str) -> dict[str, str]:
    """The files of one of the shipped curve-fitting task's example methods."""
    folder = CURVE_EXAMPLES / name
    return {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*.*")}


def finished_run(
    submission: Submission, phase: str, score: float, wall: float = 1.0, *, trial: int = 1
) -> ExperimentRun:
    """A run that succeeded with `score` in `wall` seconds: what the sandbox would
    have recorded (tests/experiments covers the execution itself)."""
    now = timezone.now()
    return ExperimentRun.objects.create(
        submission=submission,
        phase=phase,
        command="python main.py -m knn -p dev",
        status=ExperimentStatus.SUCCEEDED,
        task_version=1,
        trial=trial,
        exit_code=0,
        time_limit_seconds=120,
        score=score,
        wall_seconds=wall,
        started_at=now - timedelta(seconds=wall),
        finished_at=now,
    )


def objective_tested(objective, agent, score: float, wall: float, *, trial: int = 1) -> None:
    """The agent's best dev run of `trial` queued for test (`objective_test_queue`),
    finished with `score` in `wall` seconds, and its result recorded
    (`objective_result_record`)."""
    test = objective_test_queue(agent=agent, objective=objective, trial=trial)
    ExperimentRun.objects.filter(pk=test.pk).update(
        status=ExperimentStatus.SUCCEEDED,
        score=score,
        wall_seconds=wall,
        started_at=timezone.now() - timedelta(seconds=wall),
        finished_at=timezone.now(),
    )
    test.refresh_from_db()
    objective_result_record(run=test)
