"""The judges' leaderboard: a row per judge, the mean, a human expert and
the baseline judge that scores by paper length; n on every cell, reasons on
empty ones."""

import pytest

from benchmark.models import ArtifactKind, ModelFamily, Stage
from leaderboard.judge_board import (
    BASELINE_ROW,
    HUMAN_ROW,
    MEAN_ROW,
    judge_board_compute,
    length_scores,
    spearman_cell,
)
from tests.benchmark.factories import TaskFactory, artifact_add

from .factories import AgentFactory, JudgeFactory, SubmissionFactory, judge_submission

pytestmark = pytest.mark.django_db


def test_the_length_baseline_scores_the_longest_paper_10_and_the_shortest_1():
    scores = length_scores({1: 100, 2: 400, 3: 250, 4: 400})

    assert scores[1] == 1.0
    assert scores[2] == scores[4] == pytest.approx(1 + 9 * (3.5 - 1) / 3)
    assert scores[1] < scores[3] < scores[2]
    assert length_scores({7: 10}) == {7: 5.5}


def test_too_few_papers_for_a_correlation_say_so():
    cell = spearman_cell([1, 2], [3, 4])
    assert cell.value is None and cell.n == 2 and "at least 3" in cell.unavailable


def _paper(submission, size: int) -> None:
    artifact_add(submission, "results/paper.md", ArtifactKind.PAPER, "x" * size)


def test_the_board_lists_each_judge_the_mean_the_expert_and_the_length_baseline(client, media_root):
    long_lover = JudgeFactory(name="long-lover", model_family=ModelFamily.ANTHROPIC)
    fair = JudgeFactory(name="fair", model_family=ModelFamily.OPENAI)
    for i in range(6):
        agent = AgentFactory(
            name=f"agent-{i}",
            model_family=ModelFamily.ANTHROPIC if i % 2 else ModelFamily.OPENAI,
        )
        submission = SubmissionFactory(agent=agent, task=TaskFactory(), stage=Stage.END2END)
        _paper(submission, 100 * (i + 1))
        dims = {"Clarity": 5, "Novelty": 5, "Soundness": 5, "Significance": 5}
        judge_submission(submission, long_lover, {**dims, "Overall": 2 + i})  # longer, higher
        judge_submission(submission, fair, {**dims, "Overall": 6 - (i % 3)})

    board = judge_board_compute(stage=Stage.END2END)
    rows = {row.name: row for row in board.rows}

    assert list(rows) == ["fair", "long-lover", MEAN_ROW, HUMAN_ROW, BASELINE_ROW]
    assert rows["long-lover"].length_bias.value == pytest.approx(1.0)
    assert rows["long-lover"].length_bias.n == 6
    assert rows[BASELINE_ROW].length_bias.value == pytest.approx(1.0)
    assert rows["fair"].length_bias.value < 0.5
    assert rows["long-lover"].mean_score.value == pytest.approx(4.5)
    assert rows["long-lover"].mean_score.n == 6
    assert rows["long-lover"].failure_rate.value == 0 and rows["long-lover"].failure_rate.n == 6
    assert rows["long-lover"].cost_per_judgment.value == pytest.approx(0.01)
    # Anthropic agents are the odd ones (longer papers): the judge seems to prefer its own.
    assert rows["long-lover"].self_preference.value == pytest.approx(1.0)
    assert rows["long-lover"].self_preference.interval is not None
    # No expert reviews: agreement is empty and says why, with its n.
    overall = next(a for a in rows["fair"].agreement if a.dimension == "Overall")
    assert overall.mean_abs_diff.value is None and overall.mean_abs_diff.unavailable
    assert rows[HUMAN_ROW].cost_per_judgment.unavailable

    answer = client.get("/api/judges/leaderboard/?stage=end2end&sort=-length_bias").json()
    assert [r["name"] for r in answer["rows"]][:1] in (["long-lover"], [BASELINE_ROW])
    cell = answer["rows"][0]["length_bias"]
    assert set(cell) == {"value", "n", "ci", "unavailable"}
    page = client.get("/judges/?stage=end2end")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-judge="long-lover"' in html and 'data-kind="baseline"' in html
    assert 'data-testid="cell-why"' in html
    assert client.get("/api/judges/leaderboard/?sort=nope").status_code == 400
