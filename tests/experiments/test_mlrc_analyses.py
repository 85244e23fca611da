"""MLRC-Bench's analyses of one objective task (`mlrc_bench` in
`GET /api/objective/analyses/`), on fixed trials, against numbers computed
here with MLRC-Bench's own formulas (plot.py, MLAgentBench/utils.py).

The trials are recorded through the experiments services; only the sandboxed
execution is replaced by writing each finished run's numbers."""

import ast
import json

import numpy as np
import pytest
from scipy.special import comb

from experiments.models import ExperimentPhase
from experiments.shipped import SHIPPED_ROOT
from submissions.models import Stage
from tests.benchmark.factories import AgentFactory
from tests.experiments.factories import (
    CURVE_EXAMPLES,
    curve_method,
    finished_run,
    objective_tested,
    submission_with_files,
)

pytestmark = pytest.mark.django_db

ANALYSES = "/api/objective/analyses/"
DEV_BASELINE = 0.8


@pytest.fixture
def curve(curve):
    objective = curve
    objective.dev_baseline_score = DEV_BASELINE
    objective.save(update_fields=["dev_baseline_score"])
    return objective


def trial(objective, agent, number, source, dev_scores, test_score, wall, cost=None):
    files = {**curve_method("knn"), "trial.txt": f"{number}\n", "idea_source.txt": f"{source}\n"}
    if cost is not None:
        files["env_log/api_cost.json"] = json.dumps({"total_cost": cost})
    submission = submission_with_files(files, agent=agent, task=objective.task, stage=Stage.METHOD)
    for score in dev_scores:
        finished_run(submission, ExperimentPhase.DEV, score, trial=number)
    objective_tested(objective, agent, test_score, wall, trial=number)


def perc(score, base):
    # save_evals' 100 * (score - base) / base; rmse is lower is better, so the
    # margin is base - score (MLRC-Bench's scores are higher is better).
    return 100 * (base - score) / base


def statements(paths) -> int:
    return sum(
        sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(path.read_text())))
        for path in paths
    )


def test_mlrc_bench_analyses_follow_mlrc_benchs_formulas(client, curve):
    solo, ideas = AgentFactory(name="solo"), AgentFactory(name="ideas")
    trial(curve, solo, 1, "none", [0.79, 0.70], 0.69, 0.024, cost=1.5)
    trial(curve, solo, 2, "none", [0.78], 0.5, 0.006)
    trial(curve, solo, 3, "none", [0.6], 0.9, 0.012)
    trial(curve, ideas, 1, "coi-0", [0.7], 0.6, 0.012, cost=3.0)
    trial(curve, ideas, 2, "coi-1", [0.79], 0.7, 0.012)

    answer = client.get(ANALYSES, {"task": curve.task.slug}).json()
    mlrc = answer["mlrc_bench"]

    assert mlrc["label"].startswith("MLRC-Bench's")
    assert (mlrc["n"], mlrc["success_threshold_percent"]) == (8, 5.0)
    assert mlrc["dev_baseline_score"] == DEV_BASELINE
    configurations = {(c["agent"], c["idea_source"]): c for c in mlrc["configurations"]}
    none = configurations[("solo", "none")]
    # Dev successes: trial 1 (best 12.5%) and trial 3 (25%); trial 2's 2.5% is not above 5%.
    rows = {row["trial"]: row for row in none["trials"]}
    assert rows[1]["best_dev_improvement_perc"] == pytest.approx(perc(0.70, DEV_BASELINE))
    assert [rows[n]["dev_success"] for n in (1, 2, 3)] == [True, False, True]
    assert none["dev_successes"] == 2
    best_devs = [perc(0.70, DEV_BASELINE), perc(0.78, DEV_BASELINE), perc(0.6, DEV_BASELINE)]
    assert none["dev_improvement_perc"]["mean"] == pytest.approx(np.mean(best_devs))
    assert none["dev_improvement_perc"]["std"] == pytest.approx(np.std(best_devs, ddof=1))
    for point in none["pass_at_k"]:
        k = point["k"]
        assert point["value"] == pytest.approx(1 - comb(6, k, exact=True) / comb(8, k, exact=True))
    # Test improvement uses the test baseline, never the dev one.
    base = curve.baseline_score
    assert rows[2]["test_improvement_perc"] == pytest.approx(perc(0.5, base))
    assert [rows[n]["test_success"] for n in (1, 2, 3)] == [False, True, False]
    assert none["test_success_rate"] == pytest.approx(100 / 3)
    assert none["dev_success_rate"] == pytest.approx(200 / 3)
    # relative_runtime against the baseline's runtime; complexity over the method's files.
    assert rows[1]["relative_runtime"] == pytest.approx(100 * (0.024 - 0.012) / 0.012)
    method = statements(sorted((CURVE_EXAMPLES / "knn" / "methods").glob("*.py")))
    task_methods = SHIPPED_ROOT / "neurips2025_objective_curve_fitting" / "env" / "methods"
    baseline = statements(sorted(task_methods.glob("*.py")))
    assert (rows[1]["method_complexity"], rows[1]["base_complexity"]) == (method, baseline)
    assert rows[1]["relative_complexity"] == pytest.approx(100 * (method - baseline) / baseline)
    # Cost: a trial without api_cost.json counts $0.
    assert none["mean_api_cost_usd"] == pytest.approx(1.5 / 3)
    assert none["n_api_cost_files"] == 1

    front = [p["configuration"] for p in mlrc["cost_pareto_front"]]
    assert front == ["ideas/coi-1", "solo/none", "ideas/coi-0"]
    (pooled,) = mlrc["idea_pooling"]
    assert pooled["agent"] == "ideas" and pooled["dev_successes"] == [1, 0]
    one, two, four = pooled["pools"]
    for point in two["pass_at_k"]:
        k = point["k"]
        expected = 1 - (comb(7, k, exact=True) * comb(8, k, exact=True)) / (
            comb(2, 2, exact=True) * comb(8, k, exact=True) ** 2
        )
        assert point["value"] == pytest.approx(expected)
    assert one["pass_at_k"][0]["value"] == pytest.approx((1 / 8 + 0) / 2)
    assert four["pass_at_k"] == [] and four["why_empty"] == "fewer than 4 ideas"

    # The site's own measures stay, under their own names.
    site = {(a["agent"], a["idea_source"]): a for a in answer["agents"]}
    assert "best_of_k" in site[("solo", "none")]
    assert "percent_improvement" in site[("solo", "none")]


def test_without_a_dev_baseline_the_dev_figures_say_why(client, curve):
    curve.dev_baseline_score = None
    curve.save(update_fields=["dev_baseline_score"])
    trial(curve, AgentFactory(name="solo"), 1, "none", [0.1], 0.5, 0.012)

    mlrc = client.get(ANALYSES, {"task": curve.task.slug}).json()["mlrc_bench"]

    assert "--dev-baseline-score" in mlrc["why_no_dev_improvement"]
    (configuration,) = mlrc["configurations"]
    assert configuration["trials"][0]["best_dev_improvement_perc"] is None
    assert configuration["dev_successes"] == 0


def test_the_objective_tab_and_board_label_mlrc_benchs_figures(client, curve):
    solo = AgentFactory(name="solo")
    trial(curve, solo, 1, "none", [0.79, 0.70], 0.69, 0.024, cost=1.5)
    trial(curve, solo, 2, "none", [0.78], 0.5, 0.006)
    trial(curve, solo, 3, "none", [0.6], 0.9, 0.012)

    board = client.get("/api/leaderboard/", {"stage": "objective"}).json()
    (row,) = board["rows"]
    # One task: the agent's MLRC-Bench Pass@k is that task's, c = 2 of n = 8.
    assert row["mlrc_pass_at_k"]["n_tasks"] == 1
    assert [p["value"] for p in row["mlrc_pass_at_k"]["pass_at_k"]] == pytest.approx(
        [1 - comb(6, k, exact=True) / comb(8, k, exact=True) for k in range(1, 9)]
    )
    # The site's own best of k stays, beside it, and differs: trial 1's test 0.69 beats
    # the baseline (1.0) where MLRC-Bench's pass@1 is 0.25.
    assert row["best_of_k"][0]["share"] == 1.0
    assert board["mlrc_judge_correlation"]["dimensions"][1] == "Validity"
    csv_text = client.get("/api/leaderboard/", {"stage": "objective", "format": "csv"}).text
    assert "mlrc_pass_at_k" not in csv_text.splitlines()[0]

    html = client.get("/leaderboard/", {"stage": "objective"}).content.decode()
    assert "MLRC-Bench&#x27;s Pass@k" in html or "MLRC-Bench's Pass@k" in html
    assert "(the site's measure)" in html or "(the site&#x27;s measure)" in html
    block = html.split('data-testid="mlrc-bench-table"')[1].split("</table>")[0]
    expected = 1 - comb(6, 1, exact=True) / comb(8, 1, exact=True)
    assert f'data-k="1">{expected:.3f}</td>' in block
    assert 'data-column="test_success_rate">33.3%</td>' in block
    assert "$0.500" in block
    front = html.split('data-testid="mlrc-pareto-front"')[1].split("</p>")[0]
    assert "solo/none" in front
    assert 'data-testid="mlrc-judge-correlation"' in html
