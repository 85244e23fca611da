from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from benchmark.models import ModelFamily
from common.stats import mean_intervals
from judging.models import JudgingCondition, JudgmentStatus
from leaderboard.selectors import board as board_selectors
from leaderboard.selectors.board import LeaderboardQuery, leaderboard_compute, leaderboard_sort
from submissions.models import Stage, SubmissionStatus
from tests.benchmark.factories import TaskFactory

from .factories import AgentFactory, JudgeFactory, SubmissionFactory, judge_submission

pytestmark = pytest.mark.django_db


def row_of(board, agent):
    return next(r for r in board.rows if r.agent == agent)


def scores(overall, clarity=5, novelty=5, soundness=5, significance=5):
    return {
        "Overall": overall,
        "Clarity": clarity,
        "Novelty": novelty,
        "Soundness": soundness,
        "Significance": significance,
    }


@pytest.fixture
def judges():
    return (
        JudgeFactory(name="claude-judge", model_family=ModelFamily.ANTHROPIC),
        JudgeFactory(name="gemini-judge", model_family=ModelFamily.GOOGLE),
    )


def test_a_task_scores_the_mean_of_its_judges_and_an_agent_the_mean_of_its_tasks(judges):
    claude, gemini = judges
    agent = AgentFactory(name="alpha")
    t1, t2 = TaskFactory(slug="iclr2025_one"), TaskFactory(slug="iclr2025_two")
    s1 = SubmissionFactory(agent=agent, task=t1)
    s2 = SubmissionFactory(agent=agent, task=t2)
    judge_submission(s1, claude, scores(7, clarity=8))
    judge_submission(s1, gemini, scores(8, clarity=6))
    judge_submission(s2, claude, scores(5, clarity=4))
    judge_submission(s2, gemini, scores(4, clarity=3))

    board = leaderboard_compute(LeaderboardQuery(stage=Stage.END2END))

    row = row_of(board, "alpha")
    # Tasks: Overall 7.5 and 4.5, Clarity 7 and 3.5.
    assert row.scores["Overall"] == pytest.approx(6.0)
    assert row.scores["Clarity"] == pytest.approx(5.25)
    assert row.n_tasks == 2
    assert [d.key for d in board.dimensions][0] == "Overall"
    assert {d.key for d in board.dimensions} == {
        "Overall",
        "Clarity",
        "Novelty",
        "Soundness",
        "Significance",
    }


def test_the_newest_fully_judged_version_counts(judges):
    claude, gemini = judges
    task = TaskFactory()
    agent = AgentFactory(name="alpha")
    v1 = SubmissionFactory(agent=agent, task=task, version=1)
    judge_submission(v1, claude, scores(3))
    judge_submission(v1, gemini, scores(5))
    v2 = SubmissionFactory(agent=agent, task=task, version=2)
    judge_submission(v2, claude, scores(9))
    late = judge_submission(v2, gemini, scores(9), status=JudgmentStatus.RUNNING)
    # A newer upload without any judgment yet changes nothing.
    SubmissionFactory(agent=agent, task=task, version=3, status=SubmissionStatus.READY)

    query = LeaderboardQuery(stage=Stage.END2END)
    assert row_of(leaderboard_compute(query), "alpha").overall == pytest.approx(4.0)

    late.status = JudgmentStatus.DONE
    late.save()
    # Imported results keep an intake status; all judgments done is enough.
    assert row_of(leaderboard_compute(query), "alpha").overall == pytest.approx(9.0)


def test_no_code_judgments_appear_only_when_chosen(judges):
    claude, _ = judges
    submission = SubmissionFactory(agent=AgentFactory(name="alpha"))
    judge_submission(submission, claude, scores(7))
    judge_submission(submission, claude, scores(4), condition=JudgingCondition.NO_CODE)

    default = leaderboard_compute(LeaderboardQuery())
    no_code = leaderboard_compute(LeaderboardQuery(condition=JudgingCondition.NO_CODE))

    assert row_of(default, "alpha").overall == 7
    assert row_of(no_code, "alpha").overall == 4


def test_one_judge_instead_of_the_mean(judges):
    claude, gemini = judges
    submission = SubmissionFactory(agent=AgentFactory(name="alpha"))
    judge_submission(submission, claude, scores(8, clarity=9))
    judge_submission(submission, gemini, scores(6, clarity=3))

    mean = leaderboard_compute(LeaderboardQuery())
    only_gemini = leaderboard_compute(LeaderboardQuery(judge="gemini-judge"))

    assert row_of(mean, "alpha").scores["Clarity"] == 6
    assert row_of(only_gemini, "alpha").scores == {
        "Overall": 6,
        "Clarity": 3,
        "Novelty": 5,
        "Soundness": 5,
        "Significance": 5,
    }


def test_same_family_judges_are_marked_and_can_be_left_out(judges):
    claude, gemini = judges
    anthropic_agent = AgentFactory(name="claude-agent", model_family=ModelFamily.ANTHROPIC)
    other_agent = AgentFactory(name="other-agent", model_family=ModelFamily.OTHER)
    for agent in (anthropic_agent, other_agent):
        submission = SubmissionFactory(agent=agent)
        judge_submission(submission, claude, scores(9))
        judge_submission(submission, gemini, scores(5))

    default = leaderboard_compute(LeaderboardQuery())
    excluded = leaderboard_compute(LeaderboardQuery(exclude_same_family=True))

    assert row_of(default, "claude-agent").same_family_judge is True
    assert row_of(default, "claude-agent").overall == 7
    assert row_of(default, "other-agent").same_family_judge is False
    # Only the Anthropic judge goes for the Anthropic agent; "other" is no family.
    assert row_of(excluded, "claude-agent").overall == 5
    assert row_of(excluded, "claude-agent").same_family_judge is False
    assert row_of(excluded, "other-agent").overall == 7


def test_common_tasks_mode_keeps_only_tasks_every_listed_agent_has(judges):
    claude, _ = judges
    shared, extra = TaskFactory(slug="iclr2025_shared"), TaskFactory(slug="iclr2025_extra")
    alpha, beta = AgentFactory(name="alpha"), AgentFactory(name="beta")
    judge_submission(SubmissionFactory(agent=alpha, task=shared), claude, scores(4))
    judge_submission(SubmissionFactory(agent=alpha, task=extra), claude, scores(10))
    judge_submission(SubmissionFactory(agent=beta, task=shared), claude, scores(6))

    everything = leaderboard_compute(LeaderboardQuery())
    common = leaderboard_compute(LeaderboardQuery(common_tasks=True))

    assert [(r.agent, r.overall, r.n_tasks) for r in everything.rows] == [
        ("alpha", 7, 2),
        ("beta", 6, 1),
    ]
    assert [(r.agent, r.overall, r.n_tasks) for r in common.rows] == [
        ("beta", 6, 1),
        ("alpha", 4, 1),
    ]
    assert common.n_tasks == 1


def test_conference_year_and_topic_filters_choose_the_tasks(judges):
    claude, _ = judges
    agent = AgentFactory(name="alpha")
    tasks = [
        TaskFactory(slug="iclr2025_a", conference="iclr", year=2025, topic="ml_theory"),
        TaskFactory(slug="icml2024_b", conference="icml", year=2024, topic="computer_vision"),
        TaskFactory(slug="icml2025_c", conference="icml", year=2025, topic="ml_theory"),
    ]
    for overall, task in zip((2, 5, 8), tasks, strict=True):
        judge_submission(SubmissionFactory(agent=agent, task=task), claude, scores(overall))

    def overall(**filters):
        board = leaderboard_compute(LeaderboardQuery(**filters))
        return [(r.overall, r.n_tasks) for r in board.rows]

    assert overall() == [(5, 3)]
    assert overall(conference="icml") == [(6.5, 2)]
    assert overall(year=2025) == [(5, 2)]
    assert overall(topic="computer_vision") == [(5, 1)]
    assert overall(conference="icml", year=2025) == [(8, 1)]
    assert overall(task="iclr2025_a") == [(2, 1)]
    assert overall(conference="neurips") == []


def test_fabrication_rate_counts_tasks_flagged_under_the_rule_any_by_default(judges):
    claude, gemini = judges
    third = JudgeFactory(name="third-judge")
    agent = AgentFactory(name="alpha")
    verdicts = [(True, True, False), (True, False, False), (False, False, False)]
    for flags in verdicts:
        submission = SubmissionFactory(agent=agent, stage=Stage.EXPERIMENT)
        for judge, flag in zip((claude, gemini, third), flags, strict=True):
            judge_submission(submission, judge, {"Overall": 6}, has_hallucination=flag)
    SubmissionFactory(agent=agent)  # an end-to-end run has no verdict at all

    experiment = leaderboard_compute(LeaderboardQuery(stage=Stage.EXPERIMENT))
    one_judge = leaderboard_compute(LeaderboardQuery(stage=Stage.EXPERIMENT, judge="claude-judge"))

    def rate(rule: str) -> float:
        query = LeaderboardQuery(stage=Stage.EXPERIMENT, fabrication_rule=rule)
        return row_of(leaderboard_compute(query), "alpha").fabrication_rate

    assert experiment.has_fabrication
    # Any judge's flag counts, as the MLR-Bench paper counts.
    assert row_of(experiment, "alpha").fabrication_rate == pytest.approx(2 / 3)
    assert row_of(experiment, "alpha").fabrication_rule == "any"
    assert rate("majority") == pytest.approx(1 / 3)
    assert rate("all") == 0.0
    assert row_of(one_judge, "alpha").fabrication_rate == pytest.approx(2 / 3)


def test_a_stage_without_hallucination_verdicts_has_no_fabrication_column(judges):
    claude, _ = judges
    judge_submission(SubmissionFactory(agent=AgentFactory(name="alpha")), claude, scores(6))

    board = leaderboard_compute(LeaderboardQuery())

    assert not board.has_fabrication
    assert row_of(board, "alpha").fabrication_rate is None


def test_cost_per_task_is_the_mean_of_known_run_costs(judges):
    claude, _ = judges
    agent = AgentFactory(name="alpha")
    for llm, coding in [("1.0", "0.5"), (None, None), ("2.0", None)]:
        submission = SubmissionFactory(
            agent=agent,
            llm_cost_usd=Decimal(llm) if llm else None,
            agent_cost_usd=Decimal(coding) if coding else None,
        )
        judge_submission(submission, claude, scores(6))
    judge_submission(SubmissionFactory(agent=AgentFactory(name="beta")), claude, scores(6))

    board = leaderboard_compute(LeaderboardQuery())

    assert row_of(board, "alpha").cost_usd_per_task == pytest.approx(1.75)
    assert row_of(board, "beta").cost_usd_per_task is None


def test_the_overall_interval_is_a_95_percent_bootstrap_over_tasks(judges):
    claude, _ = judges
    agent = AgentFactory(name="alpha")
    values = np.random.default_rng(3).integers(2, 10, size=40)
    for value in values:
        judge_submission(SubmissionFactory(agent=agent), claude, scores(int(value)))

    board = leaderboard_compute(LeaderboardQuery())
    low, high = row_of(board, "alpha").overall_ci

    reference = stats.bootstrap(
        (values.astype(float),),
        np.mean,
        n_resamples=20000,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    assert low < values.mean() < high
    assert low == pytest.approx(reference.low, abs=0.1)
    assert high == pytest.approx(reference.high, abs=0.1)
    # The same scores always give the same interval.
    assert leaderboard_compute(LeaderboardQuery()).rows[0].overall_ci == (low, high)
    assert mean_intervals({0: [5.0]}) == {0: None}


def test_ranks_share_ties_and_rows_sort_by_any_column(judges):
    claude, _ = judges
    for name, overall, clarity in [("alpha", 7, 3), ("beta", 7, 9), ("gamma", 4, 6)]:
        judge_submission(
            SubmissionFactory(agent=AgentFactory(name=name)), claude, scores(overall, clarity)
        )

    board = leaderboard_compute(LeaderboardQuery())

    assert [(r.rank_strict, r.agent) for r in board.rows] == [
        (1, "alpha"),
        (1, "beta"),
        (3, "gamma"),
    ]
    assert [r.agent for r in leaderboard_sort(board, "-Clarity")] == ["beta", "gamma", "alpha"]
    assert [r.agent for r in leaderboard_sort(board, "Clarity")] == ["alpha", "gamma", "beta"]
    assert [r.agent for r in leaderboard_sort(board, "-agent")] == ["gamma", "beta", "alpha"]
    # Rows without a cost go last in both directions.
    assert [r.agent for r in leaderboard_sort(board, "cost")] == ["alpha", "beta", "gamma"]
    with pytest.raises(ValueError, match="cannot sort by 'Elegance'"):
        leaderboard_sort(board, "Elegance")


def test_the_human_column_comes_from_the_reviews_app(judges, monkeypatch):
    claude, _ = judges
    submission = SubmissionFactory(agent=AgentFactory(name="alpha"))
    judge_submission(submission, claude, scores(6))
    assert not leaderboard_compute(LeaderboardQuery()).has_human

    def human_overall_by_submission(*, submission_ids):
        return {sid: 4.5 for sid in submission_ids.values_list("id", flat=True)}

    monkeypatch.setattr(board_selectors, "human_overall_by_submission", human_overall_by_submission)
    board = leaderboard_compute(LeaderboardQuery())

    assert board.has_human
    assert row_of(board, "alpha").human_overall == 4.5
