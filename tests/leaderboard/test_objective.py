"""The objective leaderboard: agents ranked by mean relative improvement to
human on the shipped objective task, with raw score, runtime and code size.

The runs are recorded through the experiments services (the best dev run is
chosen and queued for test by `objective_test_queue`, the score is put on the
result by `objective_result_record`); only the sandboxed execution itself is
replaced by writing the finished run's numbers, which tests/experiments covers.
"""

import csv
import io
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from benchmark.models import Stage
from experiments.models import ExperimentPhase, ExperimentRun, ExperimentStatus
from experiments.queue import objective_test_queue
from experiments.results import objective_result_record, submission_lloc
from experiments.shipped import SHIPPED_ROOT, objective_tasks_install
from tests.experiments.factories import AgentFactory, submission_with_files

pytestmark = pytest.mark.django_db

LEADERBOARD = "/api/leaderboard/"
METHODS = SHIPPED_ROOT / "neurips2025_objective_curve_fitting" / "examples"


@pytest.fixture
def curve(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.EXPERIMENT_DATA_ROOT = tmp_path / "objective"
    (objective,) = objective_tasks_install().objectives
    return objective


def method(name: str) -> dict[str, str]:
    folder = METHODS / name
    return {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*.*")}


def finished_run(submission, phase: str, score: float, wall: float) -> ExperimentRun:
    now = timezone.now()
    return ExperimentRun.objects.create(
        submission=submission,
        phase=phase,
        command="python main.py -m knn -p dev",
        status=ExperimentStatus.SUCCEEDED,
        task_version=1,
        exit_code=0,
        time_limit_seconds=120,
        score=score,
        wall_seconds=wall,
        started_at=now - timedelta(seconds=wall),
        finished_at=now,
    )


def evaluate(objective, agent_name: str, method_name: str, dev_scores, test_score, wall):
    """The agent submits a method, runs it on dev (one run per score), and its
    best dev run is evaluated once on test."""
    agent = AgentFactory(name=agent_name)
    submission = submission_with_files(
        method(method_name), agent=agent, task=objective.task, stage=Stage.METHOD
    )
    for score in dev_scores:
        finished_run(submission, ExperimentPhase.DEV, score, 1.0)
    test = objective_test_queue(agent=agent, objective=objective)
    ExperimentRun.objects.filter(pk=test.pk).update(
        status=ExperimentStatus.SUCCEEDED,
        score=test_score,
        wall_seconds=wall,
        started_at=timezone.now() - timedelta(seconds=wall),
        finished_at=timezone.now(),
    )
    test.refresh_from_db()
    objective_result_record(run=test)
    return submission


def improvement(objective, score: float) -> float:
    return (
        (score - objective.baseline_score)
        / (objective.human_score - objective.baseline_score)
        * 100
    )


def test_the_objective_leaderboard_ranks_agents_by_relative_improvement(client, curve):
    knn = evaluate(curve, "knn-agent", "knn", [0.4, 0.3], 0.31, 2.5)
    evaluate(curve, "baseline-agent", "baseline", [0.7], curve.baseline_score, 1.25)
    reference = evaluate(curve, "reference-agent", "reference", [0.25], curve.human_score, 3.0)

    answer = client.get(LEADERBOARD, {"stage": "objective"}).json()

    assert answer["stage"] == "objective"
    assert [(r["rank"], r["agent"]) for r in answer["rows"]] == [
        (1, "reference-agent"),
        (2, "knn-agent"),
        (3, "baseline-agent"),
    ]
    top, middle, bottom = answer["rows"]
    assert top["mean_relative_improvement"] == pytest.approx(100.0)
    assert bottom["mean_relative_improvement"] == pytest.approx(0.0)
    # Lower is better for rmse: 0.31 lies between the baseline and the human.
    assert middle["mean_relative_improvement"] == pytest.approx(improvement(curve, 0.31), abs=1e-4)
    (cell,) = middle["tasks"]
    assert cell["task"] == curve.task.slug and cell["metric"] == "rmse"
    assert cell["score"] == 0.31 and cell["runtime_seconds"] == 2.5
    assert cell["lloc"] == submission_lloc(submission=knn) > 0
    assert cell["submission"] == knn.pk
    assert top["tasks"][0]["lloc"] == submission_lloc(submission=reference)

    rows = list(
        csv.DictReader(
            io.StringIO(client.get(LEADERBOARD, {"stage": "objective", "format": "csv"}).text)
        )
    )
    assert [(r["rank"], r["agent"], r["task"], r["score"], r["runtime_seconds"]) for r in rows] == [
        ("1", "reference-agent", curve.task.slug, str(curve.human_score), "3.0"),
        ("2", "knn-agent", curve.task.slug, "0.31", "2.5"),
        ("3", "baseline-agent", curve.task.slug, str(curve.baseline_score), "1.25"),
    ]
    assert float(rows[1]["lloc"]) == cell["lloc"]


def test_the_objective_tab_shows_the_ranking(client, curve):
    evaluate(curve, "knn-agent", "knn", [0.3], 0.31, 2.5)
    page = client.get(reverse("leaderboard:leaderboard"), {"stage": "objective"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'aria-selected="true" aria-current="page" class="tab current"' in html
    assert 'tabindex="0">Objective<' in html
    assert 'data-testid="objective-table"' in html
    assert 'data-agent="knn-agent"' in html
    assert f"{improvement(curve, 0.31):.1f}%" in html
    assert "2.5 s" in html
    # The judged stages' filters do not apply here.
    assert "Leaderboard filters" not in html
    # And the other tabs still show the judged leaderboard.
    assert "Objective" in client.get(reverse("leaderboard:leaderboard")).content.decode()


def test_the_objective_leaderboard_is_cached_until_a_result_changes(
    client, curve, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        evaluate(curve, "knn-agent", "knn", [0.3], 0.31, 2.5)
    first = client.get(LEADERBOARD, {"stage": "objective"}).json()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(LEADERBOARD, {"stage": "objective"}).json() == first
    assert len(queries) == 0

    with django_capture_on_commit_callbacks(execute=True):
        evaluate(curve, "reference-agent", "reference", [0.25], curve.human_score, 3.0)
    assert [r["agent"] for r in client.get(LEADERBOARD, {"stage": "objective"}).json()["rows"]] == [
        "reference-agent",
        "knn-agent",
    ]


def test_the_objective_query_count_does_not_grow_with_agents(client, curve):
    def count() -> tuple[int, int]:
        counts = []
        for url in (reverse("leaderboard:leaderboard"), LEADERBOARD):
            cache.clear()
            with CaptureQueriesContext(connection) as queries:
                assert client.get(url, {"stage": "objective"}).status_code == 200
            counts.append(len(queries))
        return tuple(counts)

    evaluate(curve, "agent-0", "knn", [0.3], 0.3, 1.0)
    small = count()
    for n in range(1, 8):
        evaluate(curve, f"agent-{n}", "knn", [0.3 + n / 100], 0.3 + n / 100, 1.0)
    large = count()
    assert len(client.get(LEADERBOARD, {"stage": "objective"}).json()["rows"]) == 8
    assert small == large
