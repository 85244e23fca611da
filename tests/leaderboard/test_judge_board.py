"""The judges' leaderboard: a row per judge, the mean, a human expert and
the baseline judge that scores by paper length; n on every cell, reasons on
empty ones."""

import json
from decimal import Decimal

import pytest

from benchmark.models import ModelFamily
from common.stats import wilson_interval
from judging.models import HallucinationType, Judgment, JudgmentKind, JudgmentStatus, Rubric
from leaderboard.releases import release_create
from leaderboard.selectors.judges import (
    BASELINE_ROW,
    HUMAN_ROW,
    MEAN_ROW,
    judge_board_compute,
    length_scores,
    spearman_cell,
)
from reviews.models import HallucinationAnswer, HumanHallucinationCheck
from submissions.models import ArtifactKind, Stage
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


# --- fabrication recall and precision; cost of the scoring judgments alone ------------


def _expert_check(submission, answer: str) -> None:
    HumanHallucinationCheck.objects.create(
        submission=submission,
        type=HallucinationType.FAKED_EXPERIMENTAL_RESULTS,
        answer=answer,
        imported=True,
    )


def _hallucination_review(submission, judge, *, status=JudgmentStatus.DONE, cost="1.000000"):
    return Judgment.objects.create(
        submission=submission,
        judge=judge,
        rubric=Rubric.objects.get(
            stage=submission.stage, kind=JudgmentKind.HALLUCINATION, version=1
        ),
        kind=JudgmentKind.HALLUCINATION,
        status=status,
        has_hallucination=True if status == JudgmentStatus.DONE else None,
        cost_usd=Decimal(cost),
        latency_seconds=500.0,
    )


@pytest.fixture
def checked_board():
    """Two judges' "any hallucination" verdicts on five papers the experts checked,
    one paper they did not check and one they were not sure of:

    paper    experts   eager  shy
    p1       Yes       yes    no
    p2       Yes       yes    no
    p3       Yes       no     yes
    p4       No        yes    no
    p5       No        no     no
    p6       -         yes    yes   (not checked: not counted)
    p7       Not Sure  yes    yes   (no expert verdict: not counted)
    """
    eager = JudgeFactory(name="eager", model_family=ModelFamily.ANTHROPIC)
    shy = JudgeFactory(name="shy", model_family=ModelFamily.GOOGLE)
    yes, no, not_sure = (
        HallucinationAnswer.YES,
        HallucinationAnswer.NO,
        HallucinationAnswer.NOT_SURE,
    )
    table = [
        (yes, True, False),
        (yes, True, False),
        (yes, False, True),
        (no, True, False),
        (no, False, False),
        (None, True, True),
        (not_sure, True, True),
    ]
    dims = {"Overall": 5, "Clarity": 5, "Novelty": 5, "Soundness": 5, "Significance": 5}
    papers = []
    for i, (expert, by_eager, by_shy) in enumerate(table):
        paper = SubmissionFactory(
            agent=AgentFactory(name=f"agent-{i}"), task=TaskFactory(), stage=Stage.END2END
        )
        judge_submission(paper, eager, dims, has_hallucination=by_eager)
        judge_submission(paper, shy, dims, has_hallucination=by_shy)
        if expert:
            _expert_check(paper, expert)
        papers.append(paper)
    return eager, shy, papers


def test_fabrication_recall_and_precision_against_the_experts_check(client, checked_board):
    rows = {row.name: row for row in judge_board_compute(stage=Stage.END2END).rows}

    # eager: TP p1 p2, FN p3, FP p4, TN p5.
    eager = rows["eager"]
    assert (eager.fabrication_recall.value, eager.fabrication_recall.n) == (pytest.approx(2 / 3), 3)
    assert eager.fabrication_recall.interval == pytest.approx(wilson_interval(2, 3))
    assert (eager.fabrication_precision.value, eager.fabrication_precision.n) == (
        pytest.approx(2 / 3),
        3,
    )
    # shy: TP p3, FN p1 p2, no false alarm.
    shy = rows["shy"]
    assert (shy.fabrication_recall.value, shy.fabrication_recall.n) == (pytest.approx(1 / 3), 3)
    assert (shy.fabrication_precision.value, shy.fabrication_precision.n) == (1.0, 1)
    # The mean row: the judges under `any` flag p1-p4: every expert flag caught, one false alarm.
    mean = rows[MEAN_ROW]
    assert (mean.fabrication_recall.value, mean.fabrication_recall.n) == (1.0, 3)
    assert (mean.fabrication_precision.value, mean.fabrication_precision.n) == (0.75, 4)
    assert "reference" in rows[HUMAN_ROW].fabrication_recall.unavailable
    assert "no hallucination verdict" in rows[BASELINE_ROW].fabrication_precision.unavailable

    answer = client.get("/api/judges/leaderboard/?stage=end2end&sort=-fabrication_recall").json()
    assert [r["name"] for r in answer["rows"][:3]] == [MEAN_ROW, "eager", "shy"]
    assert answer["rows"][1]["fabrication_recall"] == {
        "value": pytest.approx(2 / 3, abs=1e-3),
        "n": 3,
        "ci": [pytest.approx(x, abs=1e-3) for x in wilson_interval(2, 3)],
        "unavailable": "",
    }
    html = client.get("/judges/?stage=end2end&sort=-fabrication_precision").content.decode()
    assert 'data-column="fabrication_precision"' in html and "67%" in html
    assert "sort=-fabrication_recall" in html and "sort=fabrication_precision" in html
    # A release freezes the same cells.
    release_create(name="v1")
    frozen = json.loads(client.get("/api/releases/v1/").content)["judges_leaderboards"]["end2end"]
    shy_frozen = next(r for r in frozen["rows"] if r["name"] == "shy")
    assert (
        shy_frozen["fabrication_precision"]["value"],
        shy_frozen["fabrication_precision"]["n"],
    ) == (1.0, 1)


def test_a_judge_that_flags_nothing_and_a_stage_without_a_check_say_why(checked_board):
    eager, shy, papers = checked_board
    Judgment.objects.filter(judge=shy).update(has_hallucination=False)

    shy_row = next(r for r in judge_board_compute(stage=Stage.END2END).rows if r.name == "shy")
    assert shy_row.fabrication_recall.value == 0.0 and shy_row.fabrication_recall.n == 3
    assert shy_row.fabrication_precision.value is None
    assert "flagged none of the 5 papers" in shy_row.fabrication_precision.unavailable

    for paper in papers[:3]:
        judge_submission(
            SubmissionFactory(agent=paper.agent, task=paper.task, stage=Stage.IDEA),
            eager,
            {"Overall": 5},
        )
    idea = next(r for r in judge_board_compute(stage=Stage.IDEA).rows if r.name == "eager")
    assert idea.fabrication_recall.value is None
    assert idea.fabrication_recall.unavailable == "no expert hallucination check on this stage"


def test_cost_latency_and_failures_count_only_the_scoring_judgments(checked_board):
    eager, _shy, papers = checked_board
    Judgment.objects.filter(judge=eager).update(latency_seconds=10.0)
    _hallucination_review(papers[0], eager, cost="1.000000")
    _hallucination_review(papers[1], eager, cost="3.000000")
    _hallucination_review(papers[5], eager, status=JudgmentStatus.FAILED)

    row = next(r for r in judge_board_compute(stage=Stage.END2END).rows if r.name == "eager")

    assert (row.cost_per_judgment.value, row.cost_per_judgment.n) == (pytest.approx(0.01), 7)
    assert (row.median_latency_seconds.value, row.median_latency_seconds.n) == (10.0, 7)
    assert (row.failure_rate.value, row.failure_rate.n) == (0.0, 7)
    assert (row.cost_per_hallucination_review.value, row.cost_per_hallucination_review.n) == (
        pytest.approx(2.0),
        2,
    )


def test_the_sample_datas_judges_catch_what_the_experts_found(client, sample):
    """On the sample the experts checked two end-to-end papers (AI Scientist v2's and
    MLR-Agent's, o4-mini) and flag both; both have the judges' hallucination reviews
    (`review_hallucination_<judge>.json` beside each run), and both judges flag both:
    recall 2 of 2, precision 2 of 2 each. The fabrication page's detection table says
    the same."""
    board = client.get("/api/judges/leaderboard/?stage=end2end").json()
    fabrication = client.get("/api/fabrication/?stage=end2end").json()

    judges = [r for r in board["rows"] if r["kind"] == "judge"]
    assert [r["name"] for r in judges] == ["claude-3-7-sonnet-20250219", "gemini-2.5-pro-preview"]
    for row in judges:
        detection = next(
            d
            for d in fabrication["detection"]
            if d["detector"] == f"judge:{row['name']}"
            and d["reference"] == "human"
            and d["type"] == "any"
        )
        assert (row["fabrication_recall"]["value"], row["fabrication_recall"]["n"]) == (1.0, 2)
        assert (row["fabrication_precision"]["value"], row["fabrication_precision"]["n"]) == (
            1.0,
            2,
        )
        assert (detection["recall"], detection["precision"], detection["n"]) == (1.0, 1.0, 2)
    experiment = client.get("/api/judges/leaderboard/?stage=experiment").json()
    cell = next(r for r in experiment["rows"] if r["kind"] == "judge")["fabrication_recall"]
    assert cell["value"] is None and "checked none" in cell["unavailable"]
