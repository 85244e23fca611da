"""The leaderboard's answers: the serializers' output for a view, computed by
the selectors and cached once per view and data version (the one cache layer
of the API's answer, which the CSV download and the agent pages read too; a
stage's answers are kept by that stage's generation, `caching.cached_stage`)."""

from dataclasses import dataclass

from benchmark.models import Agent
from submissions.models import Stage

from .caching import cached, cached_stage
from .selectors.board import (
    ACCEPTANCE_LINE,
    Leaderboard,
    LeaderboardQuery,
    LeaderboardRow,
    leaderboard_compute,
    leaderboard_sort,
)
from .selectors.compare import agents_compare
from .selectors.counting import LEADERBOARD_STAGES
from .selectors.objective import objective_board_compute
from .serializers import (
    AgentComparisonSerializer,
    JudgeBoardSerializer,
    LeaderboardSerializer,
    ObjectiveLeaderboardSerializer,
)


@dataclass(frozen=True)
class LeaderboardView:
    """What `LeaderboardSerializer` writes: a board and its rows in the order asked."""

    board: Leaderboard
    rows: list[LeaderboardRow]
    sort: str = ""
    acceptance_line: float = ACCEPTANCE_LINE


def leaderboard_view(
    query: LeaderboardQuery, sort: str = "", *, board: Leaderboard | None = None
) -> LeaderboardView:
    """The board of `query` (`board` where computed already) with its rows in
    the order asked: what the API serializes and the page renders. Raises
    UnknownSort for a column the board cannot be sorted by."""
    board = board or leaderboard_compute(query)
    return LeaderboardView(
        board=board, rows=leaderboard_sort(board, sort) if sort else board.rows, sort=sort
    )


def leaderboard_payload(
    query: LeaderboardQuery, *, sort: str = "", board: Leaderboard | None = None
) -> dict:
    """The API's answer (shortly after a write, as it was); raises UnknownSort
    for a column it cannot sort by. `board`: the board of `query`, computed
    already (the refresh computes it once for every answer made of it)."""

    def compute() -> dict:
        view = leaderboard_view(query, sort, board=board)
        return dict(LeaderboardSerializer(view).data)

    return cached_stage(query.stage, "leaderboard", (query, sort), compute, recent=True)


def agents_compare_payload(query: LeaderboardQuery, *, a: str, b: str) -> dict:
    """Two agents side by side; raises UnknownAgent for one the board lacks."""
    return cached_stage(
        query.stage,
        "compare",
        (query, a, b),
        lambda: dict(AgentComparisonSerializer(agents_compare(query=query, a=a, b=b)).data),
    )


def judge_board_payload(*, stage: str, sort: str = "") -> dict:
    """The judges' leaderboard of a stage as the API answers it (shortly after
    a write, as it was); raises UnknownBoardStage or UnknownJudgeSort."""
    from .selectors.judges import UnknownBoardStage, judge_board_compute, judge_board_sort

    def compute() -> dict:
        board = judge_board_compute(stage=stage)
        return dict(JudgeBoardSerializer(judge_board_sort(board, sort) if sort else board).data)

    if stage not in LEADERBOARD_STAGES:  # no generation for a stage that is not one
        raise UnknownBoardStage(
            f"unknown stage {stage!r}; one of {', '.join(LEADERBOARD_STAGES)}", field="stage"
        )
    return cached_stage(str(stage), "judges", (str(stage), sort), compute, recent=True)


def objective_payload(*, idea_source: str | None = None) -> dict:
    """The objective leaderboard as the API answers it: agents by mean relative
    improvement to human, with each task's raw score, runtime and code size;
    `idea_source`: of that configuration's trials only."""
    return cached(
        "objective",
        (idea_source or "",),
        lambda: dict(
            ObjectiveLeaderboardSerializer(objective_board_compute(idea_source=idea_source)).data
        ),
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
