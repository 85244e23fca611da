"""Leaderboard reads: the ranking of a stage's board, and its sort orders.

Definitions (docs/leaderboard.md repeats them for users):

- A submission is *fully judged* in a judging condition when at least one of
  its judgments in that condition is done and either the submission's judging
  state (`judging.selectors.submission_judging_state`) is `judged`, or none of
  its judgments in that condition is still queued, running or failed.
- A task's score for an agent and stage is the stage score (the mean over
  judges, `judging.selectors.dimension_means`) of the newest fully judged
  version of the agent's submission for that task and stage.
- An agent's score on a dimension is the mean over its tasks; Overall carries
  a 95% percentile bootstrap interval over tasks.
- Fabrication (experiment and end2end tabs): the share of the agent's tasks
  the judges flag for any hallucination under the chosen rule (`any` by
  default: one judge's flag counts), and the share the experts' hallucination
  check flags; see `leaderboard.selectors.fabrication`.
- A task's cost is what the run recorded (LLM plus coding agent, whichever is
  known); unknown costs are left out of the mean, never taken as zero.

The number of queries does not depend on the number of agents or tasks: the
heavy work happens in a handful of grouped queries.
"""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, QuerySet

from benchmark.models import Agent
from common.errors import ValidationFailed
from common.stats import mean_intervals
from experiments.models import ReproductionVerdict
from experiments.selectors import reproduction_verdicts
from judging.models import JudgingCondition, JudgmentKind, Rubric
from judging.selectors import PanelChoice, dimension_means, same_family_judgment_q, stage_panel
from reviews.selectors import human_overall_by_submission
from submissions.models import Stage, Submission

from ..ranking import pareto_optimal, tie_aware_ranks
from .counting import (
    NotCounted,
    SubmissionFacts,
    _not_counted,
    counted_submissions,
    stage_submissions,
)

# The tabs that show the judges' and the experts' fabrication rates.
FABRICATION_TABS: tuple[str, ...] = (Stage.EXPERIMENT, Stage.END2END)
# Stages whose submissions carry runnable experiments, and so a reproduction check.
REPRODUCTION_STAGES: tuple[str, ...] = (Stage.EXPERIMENT, Stage.END2END)
# MLR-Judge's acceptance line: 6 is "marginally above the acceptance threshold".
ACCEPTANCE_LINE = 6.0
DEFAULT_OVERALL_KEY = "Overall"
# The Overall interval: a 95% percentile bootstrap over the agent's tasks (the
# unit that was sampled from the workshops), the same on every request
# (common.stats' seed policy and resample count).


@dataclass(frozen=True)
class LeaderboardQuery:
    """What a visitor chose; also the cache key of the result."""

    stage: str = Stage.END2END
    condition: str = JudgingCondition.WITH_CODE
    conference: str = ""
    year: int | None = None
    topic: str = ""
    task: str = ""
    judge: str = ""
    exclude_same_family: bool = False
    common_tasks: bool = False
    # How the judges' hallucination flags combine (`leaderboard.selectors.fabrication.RULES`).
    fabrication_rule: str = "any"
    # A judge panel by name; empty: the stage's default panel.
    panel: str = ""

    def __post_init__(self) -> None:
        # Plain strings, never enum members: the cache key is the repr, and a
        # form's "end2end" must find the entry a worker stored for Stage.END2END.
        for name in ("stage", "condition", "conference", "topic", "task", "judge", "panel"):
            object.__setattr__(self, name, str(getattr(self, name)))


@dataclass(frozen=True)
class Dimension:
    key: str
    label: str


@dataclass
class LeaderboardRow:
    rank: int
    agent: str
    display_name: str
    base_model: str
    coding_agent: str
    scaffold: str
    model_family: str
    n_tasks: int
    scores: dict[str, float]
    overall: float
    overall_ci: tuple[float, float] | None
    fabrication_rate: float | None
    cost_usd_per_task: float | None
    human_overall: float | None
    # A judge of the agent's own model family contributed to these scores.
    same_family_judge: bool
    # Of the agent's tasks whose counted submission has a reproduction check
    # (`reproduction_checked` of them), the shares the latest check found
    # reproduced and not reproduced; the rest could not run.
    reproduced_rate: float | None = None
    not_reproduced_rate: float | None = None
    reproduction_checked: int = 0
    fabrication_rule: str = "any"
    # The experts' hallucination check: the share of the agent's checked tasks flagged.
    human_fabrication_rate: float | None = None
    # Position by mean Overall (ties by equal means share it); `rank` is
    # 1 + `n_better`, the agents significantly better (`leaderboard.ranking`).
    rank_strict: int = 0
    n_better: int = 0
    # Each dimension's 95% bootstrap interval over tasks.
    scores_ci: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    # Unpriced LLM steps in the runs behind the cost: then it is "at least".
    cost_unpriced_steps: int = 0
    # No agent is both cheaper (per task) and better (Overall).
    pareto_optimal: bool = False
    # The judge panel the scores come from; "" for every judge (no panel).
    panel: str = ""
    # The per-task Overall scores the ranks and compare view rest on.
    task_overall: dict[int, float] = field(default_factory=dict, repr=False)
    task_scores: dict[int, dict[str, float]] = field(default_factory=dict, repr=False)


@dataclass
class Leaderboard:
    query: LeaderboardQuery
    overall_key: str
    dimensions: list[Dimension]
    # The panel whose judges' mean the scores are; None: every judge (no panel).
    panel: PanelChoice | None = None
    rows: list[LeaderboardRow] = field(default_factory=list)
    not_counted: list[NotCounted] = field(default_factory=list)
    n_tasks: int = 0
    has_fabrication: bool = False
    has_cost: bool = False
    has_human: bool = False
    has_reproduction: bool = False

    @property
    def other_dimensions(self) -> list[Dimension]:
        return [d for d in self.dimensions if d.key != self.overall_key]

    def sort_keys(self) -> list[str]:
        return [*FIXED_SORT_KEYS, *(d.key for d in self.dimensions)]


FIXED_SORT_KEYS = ("rank", "agent", "n_tasks", "cost", "fabrication", "human", "reproduced")


def stage_dimensions(stage: str) -> tuple[str, list[Dimension]]:
    """The overall key and the dimensions of the stage's newest rubric, Overall first."""
    rubric = (
        Rubric.objects.filter(stage=stage, kind=JudgmentKind.SCORE)
        .order_by("-is_active", "-version")
        .only("dimensions", "overall_key")
        .first()
    )
    if rubric is None:
        return DEFAULT_OVERALL_KEY, []
    overall_key = rubric.overall_key or DEFAULT_OVERALL_KEY
    dimensions = [
        Dimension(key=d["key"], label=d.get("label") or d["key"])
        for d in rubric.dimensions
        if isinstance(d, dict) and d.get("key")
    ]
    overall = [d for d in dimensions if d.key == overall_key] or [
        Dimension(overall_key, overall_key)
    ]
    return overall_key, overall + [d for d in dimensions if d.key != overall_key]


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


@contextmanager
def _analytic_reads() -> Iterator[None]:
    """One transaction for the leaderboard's few large reads. On PostgreSQL,
    JIT compilation is turned off inside it: it costs more than it saves on
    these sub-second aggregates (measured by perf/leaderboard.py)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL jit = off")
        yield


@dataclass
class _TaskResult:
    submission_id: int
    overall: float
    n_same_family: int


def _fabrication(
    query: LeaderboardQuery,
    per_task: dict[int, dict[int, _TaskResult]],
    counted: dict[int, SubmissionFacts],
    candidates: QuerySet[Submission],
    board_panel: PanelChoice | None = None,
) -> dict[str, Any]:
    """The fabrication columns of the board's agents, over the tasks it counts."""
    if query.stage not in FABRICATION_TABS or query.condition != JudgingCondition.WITH_CODE:
        return {}
    # fabrication reads the counted tasks' definitions (`counting`), and board imports it.
    from .fabrication import fabrication_by_agent

    counted_ids = {r.submission_id for tasks in per_task.values() for r in tasks.values()}
    return fabrication_by_agent(
        stage=query.stage,
        rule=query.fabrication_rule,
        judge=query.judge,
        panel_judges=board_panel.judge_names if board_panel and not query.judge else None,
        counted={sid: fact for sid, fact in counted.items() if sid in counted_ids},
        candidates=candidates,
    )


def leaderboard_compute(query: LeaderboardQuery) -> Leaderboard:
    with _analytic_reads():
        return _leaderboard_compute(query)


# {agent_id: {task_id: {dimension: stage score}}}
_Scores = dict[int, dict[int, dict[str, float]]]


def _stage_scores(
    query: LeaderboardQuery,
    candidates: QuerySet[Submission],
    counted: dict[int, SubmissionFacts],
    panel: PanelChoice | None,
    overall_key: str,
) -> tuple[_Scores, dict[int, dict[int, _TaskResult]]]:
    """The counted submissions' stage scores per agent and task, and the Overall
    facts per task. The stage scores of every candidate come in one grouped
    query; the ones that do not count are dropped here rather than by a costlier
    join in SQL."""
    means = dimension_means(
        submission_ids=candidates.values("id"),
        condition=query.condition,
        judge=query.judge or None,
        exclude_same_family=query.exclude_same_family,
        # One judge's own scores (`?judge=`) on what the panel counts; else the panel's mean.
        judge_ids=panel.judge_ids if panel is not None and not query.judge else None,
    ).annotate(
        n_same_family=Count("judgment_id", filter=same_family_judgment_q("judgment__")),
    )
    means_fields = ("submission_id", "dimension", "mean", "n_same_family")
    scores: _Scores = defaultdict(lambda: defaultdict(dict))
    per_task: dict[int, dict[int, _TaskResult]] = defaultdict(dict)
    for sid, dimension, mean, n_same_family in means.values_list(*means_fields):
        fact = counted.get(sid)
        if fact is None:
            continue
        scores[fact.agent_id][fact.task_id][dimension] = float(mean)
        if dimension == overall_key:
            per_task[fact.agent_id][fact.task_id] = _TaskResult(sid, float(mean), n_same_family)

    if query.common_tasks and per_task:
        common = set.intersection(*(set(tasks) for tasks in per_task.values()))
        per_task = {
            agent_id: {t: r for t, r in tasks.items() if t in common}
            for agent_id, tasks in per_task.items()
        }
    # An agent's tasks are those with an Overall score (in common-tasks mode,
    # the shared ones); every dimension is averaged over those same tasks.
    return scores, {agent_id: tasks for agent_id, tasks in per_task.items() if tasks}


@dataclass
class _BoardFacts:
    """What the rows of a board are made of, beyond each agent's scores."""

    query: LeaderboardQuery
    panel: PanelChoice | None
    dimensions: list[Dimension]
    counted: dict[int, SubmissionFacts]
    human: dict[int, Any]
    fabrication: dict[str, Any]
    verdicts: dict[int, str]
    intervals: dict[int, tuple[float, float] | None]
    dimension_intervals: dict[tuple[int, str], tuple[float, float] | None]


def _leaderboard_compute(query: LeaderboardQuery) -> Leaderboard:
    overall_key, dimensions = stage_dimensions(query.stage)
    candidates = stage_submissions(
        stage=query.stage,
        conference=query.conference,
        year=query.year,
        topic=query.topic,
        task=query.task,
    )
    panel = stage_panel(stage=query.stage, name=query.panel)
    counted = counted_submissions(candidates, condition=query.condition, panel=panel)
    scores, per_task = _stage_scores(query, candidates, counted, panel, overall_key)
    board = Leaderboard(query=query, overall_key=overall_key, dimensions=dimensions, panel=panel)
    if panel is not None:
        board.not_counted = _not_counted(
            candidates, counted, condition=query.condition, panel=panel
        )
    if not per_task:
        return board

    known = {d.key for d in dimensions}
    extra = sorted(
        {k for agent_id in per_task for by_task in scores[agent_id].values() for k in by_task}
        - known
    )
    board.dimensions = dimensions + [Dimension(k, k) for k in extra]
    facts = _board_facts(query, candidates, counted, panel, per_task, scores, board.dimensions)
    agents = {
        agent.id: agent
        for agent in Agent.objects.filter(id__in=list(per_task)).only(
            "name", "display_name", "base_model", "coding_agent", "scaffold", "model_family"
        )
    }
    rows = [
        _board_row(agents[agent_id], tasks, scores[agent_id], facts)
        for agent_id, tasks in per_task.items()
    ]
    rows.sort(key=lambda row: (-row.overall, row.agent))
    _rank(rows)
    _mark_pareto(rows)
    board.rows = rows
    board.n_tasks = len({t for tasks in per_task.values() for t in tasks})
    board.has_fabrication = any(
        r.fabrication_rate is not None or r.human_fabrication_rate is not None for r in rows
    )
    board.has_cost = any(r.cost_usd_per_task is not None for r in rows)
    board.has_human = any(r.human_overall is not None for r in rows)
    board.has_reproduction = any(r.reproduction_checked for r in rows)
    return board


def _board_facts(
    query: LeaderboardQuery,
    candidates: QuerySet[Submission],
    counted: dict[int, SubmissionFacts],
    panel: PanelChoice | None,
    per_task: dict[int, dict[int, _TaskResult]],
    scores: _Scores,
    dimensions: list[Dimension],
) -> _BoardFacts:
    """The columns beyond the scores, each in a query or two for every agent at once."""
    return _BoardFacts(
        query=query,
        panel=panel,
        dimensions=dimensions,
        counted=counted,
        human=human_overall_by_submission(submission_ids=candidates.values("id")),
        fabrication=_fabrication(query, per_task, counted, candidates, panel),
        # One query: the latest check of every candidate; the counted ones are used.
        verdicts=(
            {
                sid: check.verdict
                for sid, check in reproduction_verdicts(
                    submission_ids=candidates.values("id")
                ).items()
            }
            if query.stage in REPRODUCTION_STAGES
            else {}
        ),
        intervals=mean_intervals(
            {
                agent_id: [tasks[t].overall for t in sorted(tasks)]
                for agent_id, tasks in per_task.items()
            }
        ),
        dimension_intervals=_dimension_intervals(per_task, scores, dimensions),
    )


def _board_row(
    agent: Agent,
    tasks: dict[int, _TaskResult],
    scores: dict[int, dict[str, float]],
    facts: _BoardFacts,
) -> LeaderboardRow:
    """One agent's row (its rank is set once every row is known)."""
    results = list(tasks.values())
    dimension_values: dict[str, list[float]] = defaultdict(list)
    for task_id in tasks:
        for dimension, value in scores[task_id].items():
            dimension_values[dimension].append(value)
    checked = [v for r in results if (v := facts.verdicts.get(r.submission_id)) is not None]
    reproduced = checked.count(ReproductionVerdict.REPRODUCED)
    not_reproduced = checked.count(ReproductionVerdict.NOT_REPRODUCED)
    fabrication = facts.fabrication.get(agent.name)
    counted = facts.counted
    return LeaderboardRow(
        rank=0,
        agent=agent.name,
        display_name=agent.display_name,
        base_model=agent.base_model,
        coding_agent=agent.coding_agent,
        scaffold=agent.scaffold,
        model_family=agent.model_family,
        n_tasks=len(results),
        # In the order of the board's dimensions, as every answer lists them.
        scores={
            d.key: sum(values) / len(values)
            for d in facts.dimensions
            if (values := dimension_values.get(d.key))
        },
        overall=sum(r.overall for r in results) / len(results),
        overall_ci=facts.intervals[agent.id],
        fabrication_rate=fabrication.rate if fabrication is not None else None,
        fabrication_rule=facts.query.fabrication_rule,
        human_fabrication_rate=fabrication.human_rate if fabrication is not None else None,
        cost_usd_per_task=_mean(
            c for r in results if (c := counted[r.submission_id].cost_usd) is not None
        ),
        cost_unpriced_steps=sum(counted[r.submission_id].unpriced_steps for r in results),
        scores_ci={
            d.key: facts.dimension_intervals.get((agent.id, d.key)) for d in facts.dimensions
        },
        task_overall={t: r.overall for t, r in tasks.items()},
        task_scores={t: scores[t] for t in tasks},
        human_overall=_mean(
            float(h) for r in results if (h := facts.human.get(r.submission_id)) is not None
        ),
        same_family_judge=any(r.n_same_family > 0 for r in results),
        reproduced_rate=reproduced / len(checked) if checked else None,
        not_reproduced_rate=not_reproduced / len(checked) if checked else None,
        reproduction_checked=len(checked),
        panel=facts.panel.name if facts.panel is not None else "",
    )


def _dimension_intervals(
    per_task: dict[int, dict[int, _TaskResult]],
    scores: dict[int, dict[int, dict[str, float]]],
    dimensions: list[Dimension],
) -> dict[tuple[int, str], tuple[float, float] | None]:
    """`{(agent id, dimension): interval}` over the agent's tasks, the same
    resamples as Overall's (so `scores_ci`'s Overall is `overall_ci`)."""
    values = {
        (agent_id, d.key): [
            v for t in sorted(tasks) if (v := scores[agent_id][t].get(d.key)) is not None
        ]
        for agent_id, tasks in per_task.items()
        for d in dimensions
    }
    return mean_intervals(values)


def _rank(rows: list[LeaderboardRow]) -> None:
    """`rank_strict`: competition ranking by mean (equal means share it);
    `rank`: 1 + the agents significantly better (`leaderboard.ranking`)."""
    previous = None
    for position, row in enumerate(rows, start=1):
        key = round(row.overall, 9)
        row.rank_strict = rows[position - 2].rank_strict if key == previous else position
        previous = key
    facts = tie_aware_ranks({r.agent: r.task_overall for r in rows}, [r.agent for r in rows])
    for row in rows:
        row.rank, row.n_better = facts[row.agent].rank, facts[row.agent].n_better


def _mark_pareto(rows: list[LeaderboardRow]) -> None:
    """Cost against Overall: only agents with a known, fully priced cost are
    placed (a lower bound could sit anywhere above itself)."""
    frontier = pareto_optimal(
        {
            r.agent: (r.cost_usd_per_task, r.overall)
            for r in rows
            if r.cost_usd_per_task is not None and not r.cost_unpriced_steps
        }
    )
    for row in rows:
        row.pareto_optimal = row.agent in frontier


def _sort_value(row: LeaderboardRow, key: str) -> Any:  # a number or text; None sorts last
    match key:
        case "rank":
            return row.rank
        case "agent":
            return row.agent
        case "n_tasks":
            return row.n_tasks
        case "cost":
            return row.cost_usd_per_task
        case "fabrication":
            return row.fabrication_rate
        case "human":
            return row.human_overall
        case "reproduced":
            return row.reproduced_rate
        case _:
            return row.scores.get(key)


class UnknownSort(ValidationFailed, ValueError):
    default_code = "invalid_sort"


def leaderboard_sort(board: Leaderboard, sort: str) -> list[LeaderboardRow]:
    """Rows ordered by `sort` (a sort key, `-` first for descending); rows
    without a value go last either way. Unknown keys raise UnknownSort."""
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in board.sort_keys():
        raise UnknownSort(
            f"cannot sort by {key!r}; choose one of {', '.join(board.sort_keys())}", field="sort"
        )
    present = [r for r in board.rows if _sort_value(r, key) is not None]
    missing = [r for r in board.rows if _sort_value(r, key) is None]
    present.sort(key=lambda r: r.agent)
    present.sort(key=lambda r: _sort_value(r, key), reverse=descending)
    return present + missing
