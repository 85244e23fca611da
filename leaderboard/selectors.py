"""Leaderboard reads: rankings per stage, an agent's results, a task's results.

Definitions (the README repeats them for users):

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
  check flags; see `leaderboard.fabrication`.
- A task's cost is what the run recorded (LLM plus coding agent, whichever is
  known); unknown costs are left out of the mean, never taken as zero.

The number of queries does not depend on the number of agents or tasks: the
heavy work happens in a handful of grouped queries.
"""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Max, Q, QuerySet

from benchmark.models import Agent, Task
from common.bootstrap import mean_intervals
from common.errors import ValidationFailed
from experiments.mlrc_analyses import mlrc_pass_at_k_of_agents
from experiments.models import ReproductionVerdict
from experiments.selectors import (
    ObjectiveRow,
    objective_idea_sources,
    objective_leaderboard_rows,
    reproduction_verdicts,
)
from judging.models import (
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
    Rubric,
    SubmissionJudgingState,
)
from judging.selectors import (
    PanelChoice,
    dimension_means,
    not_counted_reasons,
    same_family_judgment_q,
    stage_panel,
    stage_scores,
    submission_judging_state_expression,
)
from judging.subjective_objective import (
    Correlation,
    mlrc_judge_correlation,
    subjective_objective,
)
from reviews.blind import under_open_review
from reviews.selectors import human_overall_by_submission
from submissions.costs import coding_cost_unknown
from submissions.models import Stage, Submission
from submissions.states import submissions_with_state

from .ranking import PairedDifference, paired_difference, pareto_optimal, tie_aware_ranks

LEADERBOARD_STAGES: tuple[str, ...] = (
    Stage.IDEA,
    Stage.PROPOSAL,
    Stage.EXPERIMENT,
    Stage.PAPER,
    Stage.END2END,
)
# The tabs that show the judges' and the experts' fabrication rates.
FABRICATION_TABS: tuple[str, ...] = (Stage.EXPERIMENT, Stage.END2END)
# Stages whose submissions carry runnable experiments, and so a reproduction check.
REPRODUCTION_STAGES: tuple[str, ...] = (Stage.EXPERIMENT, Stage.END2END)
# MLR-Judge's acceptance line: 6 is "marginally above the acceptance threshold".
ACCEPTANCE_LINE = 6.0
DEFAULT_OVERALL_KEY = "Overall"
# The Overall interval: a 95% percentile bootstrap over the agent's tasks (the
# unit that was sampled from the workshops), the same on every request.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20250601


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
    # How the judges' hallucination flags combine (`leaderboard.fabrication.RULES`).
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


@dataclass(frozen=True)
class NotCounted:
    """A submission the board leaves out because a panel judge failed on it or
    has not finished: the newest version of an agent's task, and why."""

    submission_id: int
    agent: str
    task: str
    version: int
    reason: str


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


# --- which submission counts ------------------------------------------------


def stage_submissions(
    *,
    stage: str | None,
    conference: str = "",
    year: int | None = None,
    topic: str = "",
    task: str = "",
    agent: str = "",
) -> QuerySet[Submission]:
    """Every version of every submission of `stage` (None: every leaderboard
    stage) on the tasks the filters choose; never a system agent's (a canary),
    and never the runs of a task with a paper in an open blind review round
    (`reviews.blind.under_open_review`): the boards, the compare view, the
    fabrication page and new releases leave them out until the round closes."""
    submissions = Submission.objects.public().exclude(under_open_review())
    if stage is None:
        submissions = submissions.filter(stage__in=LEADERBOARD_STAGES)
    else:
        submissions = submissions.filter(stage=stage)
    if conference:
        submissions = submissions.filter(task__conference=conference)
    if year:
        submissions = submissions.filter(task__year=year)
    if topic:
        submissions = submissions.filter(task__topic=topic)
    if task:
        submissions = submissions.filter(task__slug=task)
    if agent:
        submissions = submissions.filter(agent__name=agent)
    return submissions.order_by()


@dataclass(frozen=True)
class SubmissionFacts:
    id: int
    agent_id: int
    task_id: int
    stage: str
    version: int
    status: str
    cost_usd: float | None
    # Steps of the run without a price (LLM steps, and a coding agent whose cost
    # nobody recorded): the cost is then a lower bound.
    unpriced_steps: int = 0


def _task_cost(llm: Decimal | None, agent: Decimal | None) -> float | None:
    known = [float(value) for value in (llm, agent) if value is not None]
    return sum(known) if known else None


def counted_submissions(
    submissions: QuerySet[Submission],
    *,
    condition: str = JudgingCondition.WITH_CODE,
    panel: PanelChoice | None = None,
) -> dict[int, SubmissionFacts]:
    """Of `submissions`, the one that counts for each (agent, task, stage): the
    newest fully judged version (see the module docstring); with a `panel`, the
    newest that each of its judges has a finished scoring judgment of (no other
    judge, nor a judgment at work or failed, changes that). Two queries,
    whatever the number of submissions."""
    if panel is not None:
        return _counted_by_panel(submissions, condition=condition, panel=panel)
    facts = [
        SubmissionFacts(
            sid,
            agent_id,
            task_id,
            stage,
            version,
            status,
            _task_cost(llm, coding),
            unpriced + coding_cost_unknown(stage=stage, coding_agent=coder, agent_cost_usd=coding),
        )
        for sid, agent_id, task_id, stage, version, status, llm, coding, unpriced, coder in (
            submissions.annotate(judging_state=submission_judging_state_expression()).values_list(
                "id",
                "agent_id",
                "task_id",
                "stage",
                "version",
                "judging_state",
                "llm_cost_usd",
                "agent_cost_usd",
                "llm_unpriced_steps",
                "agent__coding_agent",
            )
        )
    ]
    judgment_counts = {
        sid: (done, pending)
        for sid, done, pending in Judgment.objects.filter(
            submission_id__in=submissions.values("id"), condition=condition
        )
        .values("submission_id")
        .annotate(
            done=Count("id", filter=Q(status=JudgmentStatus.DONE)),
            pending=Count("id", filter=~Q(status=JudgmentStatus.DONE)),
        )
        .values_list("submission_id", "done", "pending")
        .order_by()
    }
    newest: dict[tuple[int, int, str], SubmissionFacts] = {}
    for fact in facts:
        done, pending = judgment_counts.get(fact.id, (0, 0))
        fully_judged = done > 0 and (fact.status == SubmissionJudgingState.JUDGED or pending == 0)
        key = (fact.agent_id, fact.task_id, fact.stage)
        if fully_judged and (key not in newest or newest[key].version < fact.version):
            newest[key] = fact
    return {fact.id: fact for fact in newest.values()}


def _submission_facts(submissions: QuerySet[Submission]) -> list[SubmissionFacts]:
    rows = submissions.values_list(
        "id",
        "agent_id",
        "task_id",
        "stage",
        "version",
        "llm_cost_usd",
        "agent_cost_usd",
        "llm_unpriced_steps",
        "agent__coding_agent",
    )
    # A coding agent that recorded no cost is one more unpriced step (a lower bound).
    return [
        SubmissionFacts(
            sid,
            agent_id,
            task_id,
            stage,
            version,
            "",
            _task_cost(llm, coding),
            unpriced + coding_cost_unknown(stage=stage, coding_agent=coder, agent_cost_usd=coding),
        )
        for sid, agent_id, task_id, stage, version, llm, coding, unpriced, coder in rows
    ]


def _counted_by_panel(
    submissions: QuerySet[Submission], *, condition: str, panel: PanelChoice
) -> dict[int, SubmissionFacts]:
    complete = set(
        Judgment.objects.filter(
            submission_id__in=submissions.values("id"),
            condition=condition,
            kind=JudgmentKind.SCORE,
            status=JudgmentStatus.DONE,
            judge_id__in=panel.judge_ids,
        )
        .values("submission_id")
        .annotate(n=Count("judge_id", distinct=True))
        .filter(n=len(panel.judge_ids))
        .values_list("submission_id", flat=True)
        .order_by()
    )
    newest: dict[tuple[int, int, str], SubmissionFacts] = {}
    for fact in _submission_facts(
        submissions.filter(id__in=complete) if complete else submissions.none()
    ):
        key = (fact.agent_id, fact.task_id, fact.stage)
        if key not in newest or newest[key].version < fact.version:
            newest[key] = fact
    return {fact.id: fact for fact in newest.values()}


def _not_counted(
    candidates: QuerySet[Submission],
    counted: dict[int, SubmissionFacts],
    *,
    condition: str,
    panel: PanelChoice,
) -> list[NotCounted]:
    """The newest version of each (agent, task) that the panel does not count,
    where a panel judge failed on it or is still at work, with the reason."""
    reasons = not_counted_reasons(
        submission_ids=candidates.values("id"), panel=panel, condition=condition
    )
    if not reasons:
        return []
    rows = candidates.filter(id__in=list(reasons)).values_list(
        "id", "agent_id", "task_id", "version", "agent__name", "task__slug"
    )
    newest_version = {
        (agent_id, task_id): version
        for agent_id, task_id, version in candidates.values_list("agent_id", "task_id")
        .annotate(newest=Max("version"))
        .values_list("agent_id", "task_id", "newest")
        .order_by()
    }
    return sorted(
        (
            NotCounted(sid, agent, task, version, reasons[sid])
            for sid, agent_id, task_id, version, agent, task in rows
            if sid not in counted and newest_version.get((agent_id, task_id)) == version
        ),
        key=lambda row: (row.agent, row.task),
    )


def counted_by_stage(submissions: QuerySet[Submission]) -> dict[int, SubmissionFacts]:
    """`counted_submissions` of each leaderboard stage under its default panel."""
    counted: dict[int, SubmissionFacts] = {}
    for stage in LEADERBOARD_STAGES:
        counted |= counted_submissions(
            submissions.filter(stage=stage), panel=stage_panel(stage=stage)
        )
    return counted


# --- the ranking ------------------------------------------------------------


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
    # fabrication reads this module's definitions of the counted tasks.
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
    # The stage scores of every candidate in one grouped query; the ones that
    # do not count are dropped here rather than by a costlier join in SQL.
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
    # {agent_id: {task_id: {dimension: stage score}}}, and the Overall facts per task.
    scores: dict[int, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
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
    per_task = {agent_id: tasks for agent_id, tasks in per_task.items() if tasks}
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

    human = human_overall_by_submission(submission_ids=candidates.values("id"))
    fabrication = _fabrication(query, per_task, counted, candidates, panel)
    # One query: the latest check of every candidate; the counted ones are used.
    verdicts = (
        {
            sid: check.verdict
            for sid, check in reproduction_verdicts(submission_ids=candidates.values("id")).items()
        }
        if query.stage in REPRODUCTION_STAGES
        else {}
    )
    agents = {
        agent.id: agent
        for agent in Agent.objects.filter(id__in=list(per_task)).only(
            "name", "display_name", "base_model", "coding_agent", "scaffold", "model_family"
        )
    }
    intervals = mean_intervals(
        {
            agent_id: [tasks[t].overall for t in sorted(tasks)]
            for agent_id, tasks in per_task.items()
        },
        resamples=BOOTSTRAP_RESAMPLES,
        seed=BOOTSTRAP_SEED,
    )
    dimension_intervals = _dimension_intervals(per_task, scores, board.dimensions)

    rows: list[LeaderboardRow] = []
    for agent_id, tasks in per_task.items():
        agent = agents[agent_id]
        results = list(tasks.values())
        dimension_values: dict[str, list[float]] = defaultdict(list)
        for task_id in tasks:
            for dimension, value in scores[agent_id][task_id].items():
                dimension_values[dimension].append(value)
        checked = [v for r in results if (v := verdicts.get(r.submission_id)) is not None]
        reproduced = checked.count(ReproductionVerdict.REPRODUCED)
        not_reproduced = checked.count(ReproductionVerdict.NOT_REPRODUCED)
        overall = sum(r.overall for r in results) / len(results)
        rows.append(
            LeaderboardRow(
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
                    for d in board.dimensions
                    if (values := dimension_values.get(d.key))
                },
                overall=overall,
                overall_ci=intervals[agent_id],
                fabrication_rate=fabrication[agent.name].rate
                if agent.name in fabrication
                else None,
                fabrication_rule=query.fabrication_rule,
                human_fabrication_rate=(
                    fabrication[agent.name].human_rate if agent.name in fabrication else None
                ),
                cost_usd_per_task=_mean(
                    c for r in results if (c := counted[r.submission_id].cost_usd) is not None
                ),
                cost_unpriced_steps=sum(counted[r.submission_id].unpriced_steps for r in results),
                scores_ci={
                    d.key: dimension_intervals.get((agent_id, d.key)) for d in board.dimensions
                },
                task_overall={t: r.overall for t, r in tasks.items()},
                task_scores={t: scores[agent_id][t] for t in tasks},
                human_overall=_mean(
                    float(h) for r in results if (h := human.get(r.submission_id)) is not None
                ),
                same_family_judge=any(r.n_same_family > 0 for r in results),
                reproduced_rate=reproduced / len(checked) if checked else None,
                not_reproduced_rate=not_reproduced / len(checked) if checked else None,
                reproduction_checked=len(checked),
                panel=panel.name if panel is not None else "",
            )
        )
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
    return mean_intervals(values, resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)


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


# --- two agents side by side -------------------------------------------------


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


# --- objective tasks ----------------------------------------------------------

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


# --- an agent, a task, a submission ----------------------------------------


@dataclass
class SubmissionScores:
    submission: Submission
    scores: dict[str, float]
    counted: bool


def submission_scores(
    submissions: Iterable[Submission],
    *,
    counted_ids: set[int] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
) -> list[SubmissionScores]:
    submissions = list(submissions)
    # Each stage's scores are its default panel's mean, as on its board.
    means: dict[int, dict[str, Decimal]] = {}
    for stage in sorted({s.stage for s in submissions}):
        panel = stage_panel(stage=stage)
        means |= stage_scores(
            submission_ids=[s.id for s in submissions if s.stage == stage],
            condition=condition,
            judge_ids=panel.judge_ids if panel is not None else None,
        )
    return [
        SubmissionScores(
            submission=s,
            scores={k: float(v) for k, v in means.get(s.id, {}).items()},
            counted=counted_ids is None or s.id in counted_ids,
        )
        for s in submissions
    ]


def stage_dimension_keys() -> dict[str, list[Dimension]]:
    """Every leaderboard stage's dimensions, in one query."""
    result: dict[str, list[Dimension]] = {}
    rubrics = Rubric.objects.filter(stage__in=LEADERBOARD_STAGES, kind=JudgmentKind.SCORE).order_by(
        "stage", "-is_active", "-version"
    )
    for rubric in rubrics:
        if rubric.stage in result:
            continue
        overall = rubric.overall_key or DEFAULT_OVERALL_KEY
        dims = [
            Dimension(d["key"], d.get("label") or d["key"])
            for d in rubric.dimensions
            if isinstance(d, dict) and d.get("key")
        ]
        result[rubric.stage] = [d for d in dims if d.key == overall] + [
            d for d in dims if d.key != overall
        ]
    return result


def _ordered_keys(rows: list[SubmissionScores], known: list[Dimension]) -> list[Dimension]:
    seen = {d.key for d in known}
    extra = sorted({k for r in rows for k in r.scores} - seen)
    overall = [d for d in known if d.key == DEFAULT_OVERALL_KEY]
    if not overall and DEFAULT_OVERALL_KEY in extra:
        extra.remove(DEFAULT_OVERALL_KEY)
        overall = [Dimension(DEFAULT_OVERALL_KEY, DEFAULT_OVERALL_KEY)]
    return (
        overall
        + [d for d in known if d.key != DEFAULT_OVERALL_KEY]
        + [Dimension(k, k) for k in extra]
    )


@dataclass
class StageResults:
    stage: str
    label: str
    dimensions: list[Dimension]
    rows: list[SubmissionScores]


def _by_stage(rows: list[SubmissionScores]) -> list[StageResults]:
    dims = stage_dimension_keys()
    labels = dict(Stage.choices)
    result = []
    for stage in LEADERBOARD_STAGES:
        stage_rows = [r for r in rows if r.submission.stage == stage]
        if stage_rows:
            result.append(
                StageResults(
                    stage=stage,
                    label=labels[stage],
                    dimensions=_ordered_keys(stage_rows, dims.get(stage, [])),
                    rows=stage_rows,
                )
            )
    return result


def agent_task_results(*, agent: Agent, hidden: frozenset[int] = frozenset()) -> list[StageResults]:
    """Per stage, the agent's counted submission for each task with its scores
    (but none of `hidden`, the papers the viewer may not see yet)."""
    counted = counted_by_stage(stage_submissions(stage=None, agent=agent.name))
    submissions = (
        Submission.objects.filter(id__in=list(counted))
        .exclude(id__in=hidden)
        .select_related("task")
        .order_by("task__slug")
    )
    return _by_stage(submission_scores(submissions))


def task_results(*, task: Task, hidden: frozenset[int] = frozenset()) -> list[StageResults]:
    """Per stage, every agent's submissions for the task (all versions), with
    the one that counts on the leaderboard marked (but none of `hidden`)."""
    counted_ids = set(counted_by_stage(stage_submissions(stage=None, task=task.slug)))
    submissions = submissions_with_state(  # the page shows each one's state
        Submission.objects.public()
        .filter(task=task, stage__in=LEADERBOARD_STAGES)
        .exclude(id__in=hidden)
        .select_related("agent")
        .order_by("agent__name", "-version")
    )
    return _by_stage(submission_scores(submissions, counted_ids=counted_ids))


def submission_judgments(*, submission: Submission) -> QuerySet[Judgment]:
    """A submission's finished judgments with their scores, for its public page."""
    return (
        Judgment.objects.filter(
            submission=submission, status=JudgmentStatus.DONE, kind=JudgmentKind.SCORE
        )
        .select_related("judge", "rubric")
        .prefetch_related("scores")
        .order_by("condition", "judge__name")
    )
