"""The leaderboard's answers: the serializers' output for a view, computed by
the selectors and cached once per view and data version (the one cache layer
of the API's answer, which the CSV download and the agent pages read too)."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmark.models import Agent, Stage
from common.cache_generation import fresh_reads

from .caching import cached, cached_recent
from .selectors import (
    ACCEPTANCE_LINE,
    LEADERBOARD_STAGES,
    Leaderboard,
    LeaderboardQuery,
    LeaderboardRow,
    agents_compare,
    leaderboard_compute,
    leaderboard_sort,
    objective_board_compute,
)
from .serializers import (
    AgentComparisonSerializer,
    JudgeBoardSerializer,
    LeaderboardSerializer,
    ObjectiveLeaderboardSerializer,
)

if TYPE_CHECKING:
    from .judge_board import JudgeBoard


@dataclass(frozen=True)
class LeaderboardView:
    """What `LeaderboardSerializer` writes: a board and its rows in the order asked."""

    board: Leaderboard
    rows: list[LeaderboardRow]
    sort: str = ""
    acceptance_line: float = ACCEPTANCE_LINE


def leaderboard_view_of(board: Leaderboard, sort: str = "") -> LeaderboardView:
    """Raises UnknownSort for a column the board cannot be sorted by."""
    return LeaderboardView(
        board=board, rows=leaderboard_sort(board, sort) if sort else board.rows, sort=sort
    )


def leaderboard_board(query: LeaderboardQuery) -> Leaderboard:
    """The computed board of a view, which the API's answer and the page share
    (shortly after a write, as it was: `caching.cached_recent`)."""
    return cached_recent("board", (query,), lambda: leaderboard_compute(query))


def judge_board(*, stage: str) -> "JudgeBoard":
    """The judges' board of a stage; raises UnknownBoardStage."""
    from .judge_board import judge_board_compute

    return cached_recent("judge-board", (str(stage),), lambda: judge_board_compute(stage=stage))


def boards_warm() -> None:
    """Compute, for the data as it is now, what a visitor lands on: each
    stage's board and its API answer, and each stage's judges' board."""
    with fresh_reads():
        for stage in LEADERBOARD_STAGES:
            leaderboard_payload(LeaderboardQuery(stage=stage))
            judge_board_payload(stage=stage)


def leaderboard_payload(query: LeaderboardQuery, *, sort: str = "") -> dict:
    """The API's answer; raises UnknownSort for a column it cannot sort by."""

    def compute() -> dict:
        view = leaderboard_view_of(leaderboard_board(query), sort)
        return dict(LeaderboardSerializer(view).data)

    return cached("leaderboard", (query, sort), compute)


def agents_compare_payload(query: LeaderboardQuery, *, a: str, b: str) -> dict:
    """Two agents side by side; raises UnknownAgent for one the board lacks."""
    return cached(
        "compare",
        (query, a, b),
        lambda: dict(AgentComparisonSerializer(agents_compare(query=query, a=a, b=b)).data),
    )


def judge_board_payload(*, stage: str, sort: str = "") -> dict:
    """The judges' leaderboard of a stage as the API answers it; raises
    UnknownBoardStage or UnknownJudgeSort."""
    from .judge_board import judge_board_sort

    def compute() -> dict:
        board = judge_board(stage=stage)
        return dict(JudgeBoardSerializer(judge_board_sort(board, sort) if sort else board).data)

    return cached("judges", (str(stage), sort), compute)


def objective_payload() -> dict:
    """The objective leaderboard as the API answers it: agents by mean relative
    improvement to human, with each task's raw score, runtime and code size."""
    return cached(
        "objective",
        (),
        lambda: dict(ObjectiveLeaderboardSerializer(objective_board_compute()).data),
    )


@dataclass
class AgentStageSummary:
    stage: str
    label: str
    dimensions: list[dict]
    # The agent's serialized row, None where it has none; its Overall score.
    row: dict | None
    overall: float | None
    n_agents: int


def agent_stage_summaries(*, agent: Agent) -> list[AgentStageSummary]:
    """The agent's row in each stage's default leaderboard, read from the
    answers the API serves (so an agent's page costs no ranking of its own)."""
    labels = dict(Stage.choices)
    result = []
    for stage in LEADERBOARD_STAGES:
        answer = leaderboard_payload(LeaderboardQuery(stage=stage))
        row = next((r for r in answer["rows"] if r["agent"] == agent.name), None)
        dimensions = answer["dimensions"]
        overall = row["scores"].get(dimensions[0]["key"]) if row and dimensions else None
        result.append(
            AgentStageSummary(
                stage=stage,
                label=labels[stage],
                dimensions=dimensions,
                row=row,
                overall=overall,
                n_agents=len(answer["rows"]),
            )
        )
    return result
