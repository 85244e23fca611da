"""The leaderboard as plain data: the JSON the API answers and the rows of
its CSV, built once per view and data version and cached."""

from django.urls import reverse

from judging.subjective_objective import subjective_objective

from .caching import cached
from .selectors import (
    ACCEPTANCE_LINE,
    OBJECTIVE_STAGE,
    Leaderboard,
    LeaderboardQuery,
    LeaderboardRow,
    leaderboard_get,
    leaderboard_sort,
    objective_board_get,
)

DECIMALS = 4


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DECIMALS)


def row_payload(board: Leaderboard, row: LeaderboardRow) -> dict:
    return {
        "rank": row.rank,
        "agent": row.agent,
        "display_name": row.display_name,
        "base_model": row.base_model,
        "coding_agent": row.coding_agent,
        "scaffold": row.scaffold,
        "model_family": row.model_family,
        "n_tasks": row.n_tasks,
        "scores": {
            d.key: _round(row.scores[d.key]) for d in board.dimensions if d.key in row.scores
        },
        "overall_ci": [_round(v) for v in row.overall_ci] if row.overall_ci else None,
        "fabrication_rate": _round(row.fabrication_rate),
        "cost_usd_per_task": _round(row.cost_usd_per_task),
        "human_overall": _round(row.human_overall),
        "same_family_judge": row.same_family_judge,
        "reproduced_rate": _round(row.reproduced_rate),
        "not_reproduced_rate": _round(row.not_reproduced_rate),
        "reproduction_checked": row.reproduction_checked,
        "url": reverse("leaderboard:agent-detail", kwargs={"name": row.agent}),
    }


def _build(query: LeaderboardQuery, sort: str) -> dict:
    board = leaderboard_get(query)
    rows = leaderboard_sort(board, sort) if sort else board.rows
    return {
        "stage": query.stage,
        "condition": query.condition,
        "filters": {
            "conference": query.conference or None,
            "year": query.year,
            "topic": query.topic or None,
            "task": query.task or None,
            "judge": query.judge or None,
            "exclude_same_family": query.exclude_same_family,
            "common_tasks": query.common_tasks,
            "sort": sort or None,
        },
        "acceptance_line": ACCEPTANCE_LINE,
        "n_tasks": board.n_tasks,
        "has_reproduction": board.has_reproduction,
        "dimensions": [{"key": d.key, "label": d.label} for d in board.dimensions],
        "rows": [row_payload(board, row) for row in rows],
    }


def leaderboard_payload(query: LeaderboardQuery, *, sort: str = "") -> dict:
    """The API's answer; raises ValueError for a column it cannot sort by."""
    return cached("payload", (query, sort), lambda: _build(query, sort))


FIXED_LEADING = [
    "rank",
    "agent",
    "display_name",
    "base_model",
    "coding_agent",
    "scaffold",
    "model_family",
    "n_tasks",
]
FIXED_TRAILING = [
    "overall_ci_low",
    "overall_ci_high",
    "fabrication_rate",
    "cost_usd_per_task",
    "human_overall",
    "same_family_judge",
    "reproduced_rate",
    "not_reproduced_rate",
    "reproduction_checked",
]


def payload_table(payload: dict) -> tuple[list[str], list[list[object]]]:
    """The same rows as a flat table (the CSV download): one column per dimension."""
    keys = [d["key"] for d in payload["dimensions"]]
    header = [*FIXED_LEADING, *keys, *FIXED_TRAILING]
    rows = []
    for row in payload["rows"]:
        ci = row["overall_ci"] or [None, None]
        rows.append(
            [
                *(row[k] for k in FIXED_LEADING),
                *(row["scores"].get(k) for k in keys),
                ci[0],
                ci[1],
                row["fabrication_rate"],
                row["cost_usd_per_task"],
                row["human_overall"],
                row["same_family_judge"],
                row["reproduced_rate"],
                row["not_reproduced_rate"],
                row["reproduction_checked"],
            ]
        )
    return header, rows


# --- objective tasks -----------------------------------------------------------


def _objective_build() -> dict:
    board = objective_board_get()
    return {
        "stage": OBJECTIVE_STAGE,
        "n_tasks": board.n_tasks,
        "rows": [
            {
                "rank": rank,
                "agent": row.agent_name,
                "display_name": row.agent_display_name,
                "n_tasks": row.task_count,
                "mean_relative_improvement": _round(row.mean_relative_improvement),
                "tasks": [
                    {
                        "task": cell.task_slug,
                        "title": cell.task_title,
                        "metric": cell.metric,
                        "higher_is_better": cell.higher_is_better,
                        "score": cell.score,
                        "relative_improvement": _round(cell.relative_improvement),
                        "runtime_seconds": _round(cell.runtime_seconds),
                        "lloc": cell.lloc,
                        "submission": cell.submission_id,
                        "trials": cell.trials,
                        "best_relative_improvement": _round(cell.best_relative_improvement),
                        "mean_relative_improvement_of_trials": _round(
                            cell.mean_relative_improvement_of_trials
                        ),
                        "beat_baseline_share": _round(cell.beat_baseline_share),
                        "task_version": cell.task_version,
                    }
                    for cell in row.tasks
                ],
                "url": reverse("leaderboard:agent-detail", kwargs={"name": row.agent_name}),
            }
            for rank, row in board.rows
        ],
        "subjective_objective": [
            {
                "dimension": c.dimension,
                "condition": c.condition,
                "n": c.n,
                "spearman_rho": _round(c.spearman_rho),
                "ci": [_round(c.ci[0]), _round(c.ci[1])] if c.ci else None,
            }
            for c in subjective_objective()
        ],
    }


def objective_payload() -> dict:
    """The objective leaderboard as the API answers it: agents by mean relative
    improvement to human, with each task's raw score, runtime and code size."""
    return cached("objective-payload", (), _objective_build)


OBJECTIVE_AGENT_COLUMNS = ["rank", "agent", "display_name", "n_tasks", "mean_relative_improvement"]
OBJECTIVE_TASK_COLUMNS = [
    "task",
    "metric",
    "higher_is_better",
    "score",
    "relative_improvement",
    "runtime_seconds",
    "lloc",
    "submission",
    "trials",
    "best_relative_improvement",
    "mean_relative_improvement_of_trials",
    "beat_baseline_share",
    "task_version",
]


def objective_table(payload: dict) -> tuple[list[str], list[list[object]]]:
    """The objective leaderboard as a flat table: one row per agent and task."""
    rows = [
        [*(row[k] for k in OBJECTIVE_AGENT_COLUMNS), *(cell[k] for k in OBJECTIVE_TASK_COLUMNS)]
        for row in payload["rows"]
        for cell in row["tasks"]
    ]
    return [*OBJECTIVE_AGENT_COLUMNS, *OBJECTIVE_TASK_COLUMNS], rows
