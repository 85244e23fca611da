"""Methods on the shipped curve-fitting task (its knn example), evaluated on test
and rated by judges: the judge correlations' inputs (the site's and MLRC-Bench's)."""

from collections.abc import Mapping
from datetime import timedelta

from django.utils import timezone

from experiments.models import ExperimentPhase, ExperimentRun, ExperimentStatus, ObjectiveResult
from experiments.queue import objective_test_queue
from experiments.results import objective_result_record
from judging.models import DimensionScore, Judgment, JudgmentStatus
from judging.services.rubrics import rubric_current
from submissions.models import Stage, Submission
from tests.benchmark.factories import AgentFactory
from tests.experiments.factories import curve_method, submission_with_files


def knn_files(description: str | None = None) -> dict[str, str]:
    files = curve_method("knn")
    if description:
        files["idea.md"] = description
    return files


def evaluated_method(
    objective, name: str, test_score: float, runtime: float = 1.0
) -> tuple[Submission, ObjectiveResult]:
    """A method whose best dev run was evaluated on test with `test_score` in
    `runtime` seconds."""
    agent = AgentFactory(name=name)
    submission = submission_with_files(
        knn_files(), agent=agent, task=objective.task, stage=Stage.METHOD
    )
    now = timezone.now()
    ExperimentRun.objects.create(
        submission=submission,
        phase=ExperimentPhase.DEV,
        command="python main.py -m knn -p dev",
        status=ExperimentStatus.SUCCEEDED,
        time_limit_seconds=120,
        score=test_score,
        task_version=1,
        started_at=now - timedelta(seconds=1),
        finished_at=now,
    )
    test = objective_test_queue(agent=agent, objective=objective)
    ExperimentRun.objects.filter(pk=test.pk).update(
        status=ExperimentStatus.SUCCEEDED, score=test_score, wall_seconds=runtime, finished_at=now
    )
    test.refresh_from_db()
    result = objective_result_record(run=test)
    assert result is not None
    return submission, result


def method_rated(
    submission: Submission,
    judge,
    condition: str,
    ratings: Mapping[str, float],
    *,
    scale: tuple[int, int] | None = None,
) -> None:
    """A done judgment of the method by `judge` under `condition` (on `scale`,
    else the rubric's own)."""
    rubric = rubric_current(stage=Stage.METHOD)
    assert rubric is not None
    judgment = Judgment.objects.create(
        submission=submission,
        judge=judge,
        rubric=rubric,
        condition=condition,
        status=JudgmentStatus.DONE,
    )
    bounds = {"scale_min": scale[0], "scale_max": scale[1]} if scale else {}
    for dimension, score in ratings.items():
        DimensionScore.objects.create(judgment=judgment, dimension=dimension, score=score, **bounds)
