"""Two agents of a board side by side: paired differences per dimension and per task."""

from dataclasses import dataclass

from benchmark.models import Task
from common.errors import ValidationFailed

from ..ranking import PairedDifference, paired_difference
from .board import LeaderboardQuery, LeaderboardRow, leaderboard_compute


@dataclass(frozen=True)
class DimensionDifference:
    dimension: str
    label: str
    difference: PairedDifference


@dataclass(frozen=True)
class TaskDifference:
    task: str
    title: str
    a: dict[str, float]
    b: dict[str, float]
    overall_difference: float | None


@dataclass(frozen=True)
class AgentComparison:
    """Agent `a` minus agent `b` on the tasks both were judged on."""

    query: LeaderboardQuery
    a: LeaderboardRow
    b: LeaderboardRow
    dimensions: list[DimensionDifference]
    tasks: list[TaskDifference]


class UnknownAgent(ValidationFailed, LookupError):
    default_code = "unknown_agent"


def agents_compare(*, query: LeaderboardQuery, a: str, b: str) -> AgentComparison:
    """The paired differences of two agents of a board, per dimension and per
    task. Raises UnknownAgent for an agent the board does not list."""
    board = leaderboard_compute(query)
    rows = {row.agent: row for row in board.rows}
    for name, value in (("a", a), ("b", b)):
        if value not in rows:
            raise UnknownAgent(f"agent {value!r} has no row on this board", field=name)
    row_a, row_b = rows[a], rows[b]
    dimensions = [
        DimensionDifference(
            d.key,
            d.label,
            paired_difference(
                {t: v for t, s in row_a.task_scores.items() if (v := s.get(d.key)) is not None},
                {t: v for t, s in row_b.task_scores.items() if (v := s.get(d.key)) is not None},
            ),
        )
        for d in board.dimensions
    ]
    common = set(row_a.task_scores) & set(row_b.task_scores)
    named = {
        t: (slug, title)
        for t, slug, title in Task.objects.filter(id__in=common).values_list("id", "slug", "title")
    }
    tasks = [
        TaskDifference(
            *named[t],
            row_a.task_scores[t],
            row_b.task_scores[t],
            row_a.task_overall[t] - row_b.task_overall[t],
        )
        for t in sorted(common, key=lambda t: named[t])
    ]
    return AgentComparison(query, row_a, row_b, dimensions, tasks)
