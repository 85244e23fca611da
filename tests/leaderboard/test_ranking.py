"""Ranks that respect ties, on hand-made boards: a clear winner, a pair the
data cannot tell apart, a three-way tie; and the Pareto frontier."""

import numpy as np
import pytest

from leaderboard.ranking import paired_difference, pareto_optimal, tie_aware_ranks
from leaderboard.selectors.board import LeaderboardQuery, leaderboard_compute
from leaderboard.selectors.compare import agents_compare
from submissions.models import Stage
from tests.benchmark.factories import TaskFactory

from .factories import AgentFactory, JudgeFactory, SubmissionFactory, judge_submission


def board_of(per_agent: dict[str, list[float]]):
    order = sorted(per_agent, key=lambda a: -np.mean(per_agent[a]))
    return tie_aware_ranks({a: dict(enumerate(v)) for a, v in per_agent.items()}, order)


NOISE = np.random.default_rng(7).normal(0, 1.5, size=20)


def test_a_clear_winner_ranks_alone_first():
    ranks = board_of(
        {"best": list(8 + NOISE * 0.2), "mid": list(5 + NOISE), "low": list(5 + NOISE[::-1])}
    )

    assert ranks["best"].rank == 1 and ranks["best"].n_better == 0
    assert ranks["mid"].rank == ranks["low"].rank == 2
    assert ranks["mid"].n_better == ranks["low"].n_better == 1


def test_an_indistinguishable_pair_shares_a_rank_but_keeps_its_strict_order():
    a = list(5 + NOISE)
    b = [v + (0.2 if i % 2 else -0.1) for i, v in enumerate(a[::-1])]

    ranks = board_of({"a": a, "b": b})

    assert ranks["a"].rank == ranks["b"].rank == 1
    assert sorted([ranks["a"].rank_strict, ranks["b"].rank_strict]) == [1, 2]
    difference = paired_difference(dict(enumerate(a)), dict(enumerate(b)))
    assert difference.interval[0] < 0 < difference.interval[1]
    assert difference.p_value > 0.05


def test_three_agents_tied_above_a_clearly_worse_one_share_rank_one():
    rng = np.random.default_rng(11)
    tied = {name: list(7 + rng.normal(0, 1, size=20)) for name in ("x", "y", "z")}
    ranks = board_of({**tied, "worse": list(2 + rng.normal(0, 0.3, size=20))})

    assert {ranks[n].rank for n in tied} == {1}
    assert ranks["worse"].rank == 4 and ranks["worse"].n_better == 3


def test_too_few_common_tasks_never_separate_agents():
    # Every task the same way, but three tasks: a sign test could not tell.
    ranks = board_of({"a": [9, 9, 9], "b": [1, 1, 1]})

    assert ranks["a"].rank == ranks["b"].rank == 1


def test_the_same_scores_always_rank_the_same():
    data = {"a": list(5 + NOISE), "b": list(5.6 + NOISE[::-1])}
    assert board_of(data) == board_of(data)


def test_the_pareto_frontier_keeps_only_undominated_points():
    points = {"cheap": (0.1, 4.0), "good": (2.0, 7.0), "worse": (3.0, 6.0), "mid": (1.0, 4.0)}

    assert pareto_optimal(points) == {"cheap", "good"}


@pytest.mark.django_db
def test_the_board_carries_tie_aware_ranks_intervals_and_the_compare_view(client):
    judge = JudgeFactory(name="judge-a")
    tasks = [TaskFactory() for _ in range(8)]
    agents = {name: AgentFactory(name=name) for name in ("alpha", "beta", "gamma")}
    for i, task in enumerate(tasks):
        for name, overall in (("alpha", 8 + i % 2), ("beta", 8 + (i + 1) % 2), ("gamma", 3)):
            judge_submission(
                SubmissionFactory(agent=agents[name], task=task, stage=Stage.END2END),
                judge,
                {"Overall": overall, "Clarity": 5, "Novelty": 5, "Soundness": 5, "Significance": 5},
            )

    board = leaderboard_compute(LeaderboardQuery())
    rows = {r.agent: r for r in board.rows}
    assert rows["alpha"].rank == rows["beta"].rank == 1
    assert rows["gamma"].rank == 3 and rows["gamma"].n_better == 2
    assert rows["alpha"].scores_ci["Overall"] == rows["alpha"].overall_ci

    answer = client.get("/api/leaderboard/").json()
    assert {(r["agent"], r["rank"], r["n_better"]) for r in answer["rows"]} == {
        ("alpha", 1, 0),
        ("beta", 1, 0),
        ("gamma", 3, 2),
    }
    assert set(answer["rows"][0]["scores_ci"]) == {d["key"] for d in answer["dimensions"]}
    csv = client.get("/api/leaderboard/?format=csv").content.decode().splitlines()[0]
    assert "rank_strict" in csv and "Overall_ci_low" in csv and "pareto_optimal" in csv

    comparison = agents_compare(query=LeaderboardQuery(), a="alpha", b="gamma")
    overall = comparison.dimensions[0]
    assert overall.dimension == "Overall" and overall.difference.n_tasks == 8
    assert overall.difference.mean == pytest.approx(5.5)
    assert overall.difference.p_value == 0
    assert len(comparison.tasks) == 8
    api = client.get("/api/leaderboard/compare/?a=alpha&b=beta").json()
    assert api["dimensions"][0]["ci"][0] < 0 < api["dimensions"][0]["ci"][1]
    page = client.get("/leaderboard/compare/?a=alpha&b=gamma")
    assert page.status_code == 200 and b'data-testid="compare-tasks"' in page.content
    unknown = client.get("/api/leaderboard/compare/?a=alpha&b=nobody")
    assert unknown.status_code == 400
    assert unknown.json()["errors"][0]["field"] == "b"
