"""The leaderboard of objective tasks (MLRC-Bench style)."""

from dataclasses import dataclass, field
from typing import Any

from experiments.mlrc_analyses import mlrc_pass_at_k_of_agents
from experiments.selectors import ObjectiveRow, objective_idea_sources, objective_leaderboard_rows
from judging.subjective_objective import Correlation, mlrc_judge_correlation, subjective_objective

# Not a submission stage: the leaderboard of objective tasks (MLRC-Bench style),
# where agents are ranked by what their method scored on hidden test data.
OBJECTIVE_STAGE = "objective"


@dataclass(frozen=True)
class RankedObjectiveRow:
    rank: int
    row: ObjectiveRow


@dataclass
class ObjectiveBoard:
    # Best mean relative improvement to human first.
    rows: list[RankedObjectiveRow] = field(default_factory=list)
    n_tasks: int = 0
    subjective_objective: list[Correlation] = field(default_factory=list)
    # MLRC-Bench's own: Pearson of its five 1-5 ratings against its three measures.
    mlrc_judge_correlation: dict[str, Any] = field(default_factory=dict)
    # The configuration the rows are of (None: every one), and those there are.
    idea_source: str | None = None
    idea_sources: list[str] = field(default_factory=list)


def objective_board_compute(*, idea_source: str | None = None) -> ObjectiveBoard:
    """`idea_source`: rank only the trials of that configuration."""
    rows = objective_leaderboard_rows(idea_source=idea_source)
    pass_at_k = mlrc_pass_at_k_of_agents(idea_source=idea_source)
    for row in rows:
        row.mlrc_pass_at_k = pass_at_k.get(row.agent_id)
    ranked: list[RankedObjectiveRow] = []
    for position, row in enumerate(rows, start=1):
        # Competition ranking, as on the judged stages.
        tied = ranked and round(ranked[-1].row.mean_relative_improvement, 9) == round(
            row.mean_relative_improvement, 9
        )
        ranked.append(RankedObjectiveRow(ranked[-1].rank if tied else position, row))
    return ObjectiveBoard(
        rows=ranked,
        n_tasks=len({cell.task_slug for row in rows for cell in row.tasks}),
        subjective_objective=subjective_objective(),
        mlrc_judge_correlation=mlrc_judge_correlation(),
        idea_source=idea_source or None,
        idea_sources=objective_idea_sources(),
    )
