"""An agent's, a task's and a submission's results: the scores of the counted
submissions per stage, for their public pages."""

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import QuerySet

from benchmark.models import Agent, Task
from judging.models import JudgingCondition, Judgment, JudgmentKind, JudgmentStatus, Rubric
from judging.selectors import stage_panel, stage_scores
from submissions.models import Stage, Submission
from submissions.states import submissions_with_state

from .board import DEFAULT_OVERALL_KEY, Dimension
from .counting import LEADERBOARD_STAGES, counted_by_stage, stage_submissions


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
