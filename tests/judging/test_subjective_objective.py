"""Methods of objective tasks are judged with MLRC-Bench's five dimensions, with
and without their code, and the leaderboard says how the judges' scores relate
to the methods' real test results (Spearman's rho with a bootstrap interval)."""

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from common.stats import spearman_interval
from judging.models import JudgingCondition
from judging.prompts import judge_prompt_build
from judging.services.queue import submission_ready_judge
from judging.services.rubrics import rubric_current
from submissions.models import ArtifactKind, Stage
from tests.experiments.factories import submission_with_files
from tests.judging.factories import JudgeFactory
from tests.judging.methods import evaluated_method, knn_files, method_rated

pytestmark = pytest.mark.django_db

MLRC = ("Effectiveness", "Clarity", "Rigor", "Generalizability", "Innovativeness")


def test_the_method_rubric_has_mlrc_benchs_five_dimensions():
    rubric = rubric_current(stage=Stage.METHOD)
    assert rubric is not None
    keys = [dimension["key"] for dimension in rubric.dimensions]
    assert keys[:5] == list(MLRC)
    assert all((d["min"], d["max"]) == (1, 10) for d in rubric.dimensions)


def test_a_method_is_queued_with_and_without_code_and_judged_without_its_scores(curve):
    JudgeFactory(name="judge-a")
    submission = submission_with_files(
        knn_files("# Nearest neighbours\n\nAverage the 25 closest points."),
        # As the intake files them.
        kinds={"idea.md": ArtifactKind.IDEA, "method_name.txt": ArtifactKind.OTHER},
        task=curve.task,
        stage=Stage.METHOD,
    )

    report = submission_ready_judge(submission_id=submission.pk)

    assert report.created == 2
    assert set(submission.judgments.values_list("condition", flat=True)) == {
        JudgingCondition.WITH_CODE,
        JudgingCondition.NO_CODE,
    }
    rubric = rubric_current(stage=Stage.METHOD)
    assert rubric is not None
    with_code = judge_prompt_build(
        submission=submission, rubric=rubric, condition=JudgingCondition.WITH_CODE
    ).messages[1]["content"]
    without = judge_prompt_build(
        submission=submission, rubric=rubric, condition=JudgingCondition.NO_CODE
    ).messages[1]["content"]
    assert "Average the 25 closest points." in with_code and "Average the 25" in without
    assert "class KNN(BaseMethod)" in with_code
    assert "class KNN" not in without and "judge the method from its description alone" in without
    # The task statement, never a score.
    assert "python main.py -m <your method> -p dev" in with_code
    assert "0.25" not in with_code and "rmse 0." not in with_code


def test_rho_between_judges_and_real_results_is_in_the_api_and_the_objective_tab(client, curve):
    judge_a, judge_b = JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")
    # Four methods, test RMSE from worst to best; judges' Innovativeness per method.
    tests = {"m-a": 0.65, "m-b": 0.5, "m-c": 0.3, "m-d": 0.25}
    innovativeness = {"m-a": (8, 9), "m-b": (3, 4), "m-c": (6, 6), "m-d": (2, 3)}
    improvements, means = [], []
    for name, test_score in tests.items():
        submission, result = evaluated_method(curve, name, test_score)
        improvement = result.relative_improvement
        a, b = innovativeness[name]
        ratings_a = {"Innovativeness": a, "Clarity": 5}
        ratings_b = {"Innovativeness": b, "Clarity": 5}
        method_rated(submission, judge_a, JudgingCondition.NO_CODE, ratings_a)
        method_rated(submission, judge_b, JudgingCondition.NO_CODE, ratings_b)
        improvements.append(improvement)
        means.append((a + b) / 2)
    expected = stats.spearmanr(means, improvements).statistic
    assert expected == pytest.approx(-0.8)  # more innovative by the judges, worse in fact

    answer = client.get("/api/leaderboard/", {"stage": "objective"}).json()

    by_key = {(c["dimension"], c["condition"]): c for c in answer["subjective_objective"]}
    assert set(by_key) == {(d, c) for d in MLRC for c in ("with_code", "no_code")}
    innovative = by_key[("Innovativeness", "no_code")]
    assert innovative["n"] == 4
    assert innovative["spearman_rho"] == round(expected, 4)
    low, high = innovative["ci"]
    interval = spearman_interval(np.array(means), np.array(improvements))
    assert interval is not None
    assert (low, high) == (round(interval[0], 4), round(interval[1], 4))
    assert -1 <= low <= expected <= high <= 1
    # Every judge gave the same Clarity: no rank correlation to speak of.
    assert by_key[("Clarity", "no_code")]["n"] == 4
    assert by_key[("Clarity", "no_code")]["spearman_rho"] is None
    assert by_key[("Innovativeness", "with_code")] == {
        "dimension": "Innovativeness",
        "condition": "with_code",
        "n": 0,
        "spearman_rho": None,
        "ci": None,
    }

    page = client.get(reverse("leaderboard:leaderboard"), {"stage": "objective"}).content.decode()
    assert 'data-testid="subjective-objective"' in page
    row = page.split('data-dimension="Innovativeness" data-condition="no_code"')[1].split("</tr>")[
        0
    ]
    assert f"{expected:.2f}" in row and row.count("<circle") == 4
    # The scatter has axes: score ticks below (1, 4, 7, 10), improvement ticks on the left.
    assert row.count('data-axis="x"') == 4 and row.count('data-axis="y"') >= 2
    assert "judges&#x27; score" in row or "judges' score" in row
