"""The objective leaderboard: agents ranked by mean relative improvement to
human on the shipped objective task, with raw score, runtime and code size.

The runs are recorded through the experiments services (the best dev run is
chosen and queued for test by `objective_test_queue`, the score is put on the
result by `objective_result_record`); only the sandboxed execution itself is
replaced by writing the finished run's numbers, which tests/experiments covers.
"""

import csv
import io
import json
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from experiments.models import ExperimentPhase, ExperimentRun, ExperimentStatus
from experiments.queue import objective_test_queue
from experiments.results import objective_result_record, submission_lloc
from submissions.models import ArtifactKind, Stage
from tests.benchmark.factories import AgentFactory
from tests.experiments.factories import (
    curve_method,
    finished_run,
    objective_tested,
    submission_with_files,
)
from tests.experiments.test_mlrc import CLAUDE_TRACE

pytestmark = pytest.mark.django_db

LEADERBOARD = "/api/leaderboard/"


def evaluate(objective, agent_name: str, method_name: str, dev_scores, test_score, wall):
    """The agent submits a method, runs it on dev (one run per score), and its
    best dev run is evaluated once on test."""
    agent = AgentFactory(name=agent_name)
    submission = submission_with_files(
        curve_method(method_name), agent=agent, task=objective.task, stage=Stage.METHOD
    )
    for score in dev_scores:
        finished_run(submission, ExperimentPhase.DEV, score, 1.0)
    objective_tested(objective, agent, test_score, wall)
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
        return counts[0], counts[1]

    evaluate(curve, "agent-0", "knn", [0.3], 0.3, 1.0)
    small = count()
    for n in range(1, 8):
        evaluate(curve, f"agent-{n}", "knn", [0.3 + n / 100], 0.3 + n / 100, 1.0)
    large = count()
    assert len(client.get(LEADERBOARD, {"stage": "objective"}).json()["rows"]) == 8
    assert small == large


# --- MLRC-Bench's analyses on the tab: configuration, cost, trend ------------------------


def objective_tab(client, **params):
    return client.get(reverse("leaderboard:leaderboard"), {"stage": "objective", **params})


def test_the_objective_tab_draws_best_of_k_without_inline_styles(client, curve):
    evaluate(curve, "knn-agent", "knn", [0.3], 0.31, 2.5)

    html = objective_tab(client).content.decode()

    # The Content-Security-Policy blocks style attributes: the bar is SVG geometry.
    assert 'data-testid="best-of-k-table"' in html
    assert "style=" not in html
    assert '<svg class="bar" width="60" height="8"' in html
    assert (
        '<rect x="0" y="0" width="60" height="8" fill="currentColor" fill-opacity="0.45"/>' in html
    )


def configured(name: str, idea_source: str) -> dict[str, str]:
    return {**curve_method(name), "idea_source.txt": f"{idea_source}\n"}


def test_the_objective_tab_shows_the_configuration_and_filters_by_it(client, curve):
    coi = AgentFactory(name="coi-agent")
    submission = submission_with_files(
        configured("reference", "CoI"), agent=coi, task=curve.task, stage=Stage.METHOD
    )
    finished_run(submission, ExperimentPhase.DEV, 0.25, 1.0)
    test = objective_test_queue(agent=coi, objective=curve)
    ExperimentRun.objects.filter(pk=test.pk).update(
        status=ExperimentStatus.SUCCEEDED, score=0.25, finished_at=timezone.now()
    )
    test.refresh_from_db()
    objective_result_record(run=test)
    evaluate(curve, "plain-agent", "knn", [0.3], 0.31, 2.5)

    html = objective_tab(client).content.decode()
    assert "Configuration" in html
    assert '<td data-column="idea_source">coi</td>' in html
    assert '<td data-column="idea_source">none</td>' in html
    assert (
        '<option value="coi">coi</option>' in html and '<option value="none">none</option>' in html
    )

    only = objective_tab(client, idea_source="coi").content.decode()
    board = only.split('data-testid="objective-table"')[1].split("</table>")[0]
    assert 'data-agent="coi-agent"' in board and 'data-agent="plain-agent"' not in board
    assert '<option value="coi" selected>coi</option>' in only
    assert "stage=objective&amp;idea_source=coi&amp;format=csv" in only
    analyses = only.split('data-testid="objective-analyses"')[1]
    assert 'data-idea-source="coi"' in analyses and 'data-idea-source="none"' not in analyses

    # The API keeps its rows' contract and takes the same filter.
    answer = client.get(LEADERBOARD, {"stage": "objective", "idea_source": "coi"}).json()
    assert [r["agent"] for r in answer["rows"]] == ["coi-agent"]
    assert answer["rows"][0]["tasks"][0]["idea_source"] == "coi"
    assert (answer["idea_source"], answer["idea_sources"]) == ("coi", ["coi", "none"])
    every = client.get(LEADERBOARD, {"stage": "objective"}).json()
    assert [r["agent"] for r in every["rows"]] == ["coi-agent", "plain-agent"]
    assert every["idea_source"] is None
    empty = objective_tab(client, idea_source="human").content.decode()
    assert "in the configuration human" in empty

    bad = client.get(LEADERBOARD, {"stage": "objective", "idea_source": "Not one!"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "idea_source"
    assert objective_tab(client, idea_source="Not one!").status_code == 400


def test_the_objective_tab_shows_cost_and_improvement_with_their_n(client, curve):
    submission = evaluate(curve, "knn-agent", "knn", [0.3], 0.31, 2.5)
    submission.llm_cost_usd, submission.llm_unpriced_steps = Decimal("0.5"), 0
    submission.save()

    html = objective_tab(client).content.decode()
    analyses = html.split('data-testid="objective-analyses"')[1]

    gain = curve.baseline_score - 0.31
    assert f"{gain:.4f} <span" in analyses
    assert f"{gain / curve.baseline_score * 100:.1f}%" in analyses
    assert '$0.500 <span class="muted small">(n 1)</span>' in analyses
    assert f"{improvement(curve, 0.31) / 0.5:.1f} <span" in analyses
    # No trace: both trace cells say why.
    assert analyses.count("no trial has a trace") == 2


def test_the_trend_follows_the_agents_dev_runs_in_order(client, curve):
    """Each dev run is a snapshot of the method: two snapshots (submissions) of one
    trial, one run of which failed, give four steps in the order they ran."""
    agent = AgentFactory(name="trend-agent")
    first = submission_with_files(
        curve_method("knn"), agent=agent, task=curve.task, stage=Stage.METHOD
    )
    second = submission_with_files(
        curve_method("reference"), agent=agent, task=curve.task, stage=Stage.METHOD
    )
    runs = [
        finished_run(first, ExperimentPhase.DEV, 0.5, 2.0),
        finished_run(first, ExperimentPhase.DEV, 0.4, 3.0),
        finished_run(second, ExperimentPhase.DEV, 0.3, 4.0),
        finished_run(second, ExperimentPhase.DEV, 0.0, 5.0),
    ]
    ExperimentRun.objects.filter(pk=runs[3].pk).update(status=ExperimentStatus.FAILED, score=None)
    test = objective_test_queue(agent=agent, objective=curve)
    ExperimentRun.objects.filter(pk=test.pk).update(
        status=ExperimentStatus.SUCCEEDED, score=0.29, wall_seconds=4.0, finished_at=timezone.now()
    )
    test.refresh_from_db()
    objective_result_record(run=test)
    lines = [submission_lloc(submission=s) for s in (first, first, second, second)]
    assert lines[0] != lines[2]

    answer = client.get("/api/objective/analyses/", {"task": curve.task.slug}).json()

    (row,) = answer["agents"]
    trend = row["trend"]
    assert [(s["trial"], s["step"], s["run"]) for s in trend["steps"]] == [
        (1, i, run.pk) for i, run in enumerate(runs, start=1)
    ]
    assert [s["lines"] for s in trend["steps"]] == lines
    assert [s["runtime_seconds"] for s in trend["steps"]] == [2.0, 3.0, 4.0, None]
    assert [s["dev_score"] for s in trend["steps"]] == [0.5, 0.4, 0.3, None]
    assert trend["series"]["dev_score"] == {"n": 3, "first": 0.5, "last": 0.3, "why_empty": ""}
    assert trend["series"]["lines"]["n"] == 4
    assert trend["why_empty"] == ""

    html = objective_tab(client).content.decode()
    table = html.split('data-testid="trend-table"')[1].split("</table>")[0]
    assert '<td class="num" data-column="n_steps">4</td>' in table
    cell = table.split('data-series="dev_score">')[1].split("</td>")[0]
    assert '0.5000 → 0.3000</span> <span class="muted small">(n 3)</span>' in cell
    assert f"{lines[0]} → {lines[3]}</span>" in table
    assert table.count("<polyline") == 3  # one trial: one line per series


def test_the_objective_tab_shows_the_trace_shares_with_their_n(client, curve):
    agent = AgentFactory(name="traced-agent")
    files = {**curve_method("knn"), "claude_output.json": json.dumps(CLAUDE_TRACE)}
    submission = submission_with_files(
        files,
        kinds={"claude_output.json": ArtifactKind.TRACE},
        agent=agent,
        task=curve.task,
        stage=Stage.METHOD,
    )
    finished_run(submission, ExperimentPhase.DEV, 0.3, 1.0)
    test = objective_test_queue(agent=agent, objective=curve)
    ExperimentRun.objects.filter(pk=test.pk).update(
        status=ExperimentStatus.SUCCEEDED, score=0.31, finished_at=timezone.now()
    )
    test.refresh_from_db()
    objective_result_record(run=test)

    html = objective_tab(client).content.decode()
    row = html.split('data-testid="analyses-table"')[1].split("</tr>")[1]

    # Three tool calls, one refused for its arguments; one failed run, repaired later.
    assert '33% <span class="muted small">(n 3 calls)</span>' in row
    assert '100% <span class="muted small">(n 1 failed)</span>' in row
    assert "usage files or trace recorded a cost" in row
