"""Reads of experiment runs, objective results and reproduction verdicts that
pages, the API, the judges and the leaderboard share."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from experiments.models import (
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
    ReproductionCheck,
)

LOG_CHUNK_MAX_BYTES = 64 * 1024
# A reproduction run judges are shown has ended, one way or another.
REPRODUCTION_FINISHED = (
    ExperimentStatus.SUCCEEDED,
    ExperimentStatus.FAILED,
    ExperimentStatus.TIMED_OUT,
)
LOG_TAIL_BYTES = 16 * 1024


def experiment_runs(*, submission_id: int | None = None) -> QuerySet[ExperimentRun]:
    runs = ExperimentRun.objects.select_related("reproduction", "submission")
    if submission_id is not None:
        runs = runs.filter(submission_id=submission_id)
    return runs.order_by("-created_at", "-id")


def objective_best_dev_run(*, agent_id: int, objective: ObjectiveTask) -> ExperimentRun | None:
    """The agent's best succeeded dev run on the task, in the metric's direction
    (the earliest among equals)."""
    order = "-score" if objective.higher_is_better else "score"
    return (
        ExperimentRun.objects.filter(
            submission__agent_id=agent_id,
            submission__task_id=objective.task_id,
            phase=ExperimentPhase.DEV,
            status=ExperimentStatus.SUCCEEDED,
            score__isnull=False,
        )
        .select_related("submission")
        .order_by(order, "finished_at", "id")
        .first()
    )


@dataclass(frozen=True)
class LogChunk:
    text: str
    offset: int  # where the next request continues
    size: int
    start: int  # where this chunk began
    finished: bool
    status: str


def experiment_log_chunk(*, run: ExperimentRun, offset: int | None = None) -> LogChunk:
    """The log from `offset` on (at most 64 KiB), or its last 16 KiB when no offset."""
    size = 0
    data = b""
    start = 0
    if run.log:
        try:
            with run.log.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                start = (
                    max(size - LOG_TAIL_BYTES, 0) if offset is None else min(max(offset, 0), size)
                )
                handle.seek(start)
                data = handle.read(LOG_CHUNK_MAX_BYTES)
        except OSError:
            pass
    text = data.decode("utf-8", errors="replace")
    return LogChunk(
        text=text,
        offset=start + len(data),
        size=size,
        start=start,
        finished=run.is_finished,
        status=run.status,
    )


@dataclass(frozen=True)
class ReproductionForJudges:
    """The site's own re-run of a submission, as its judges are shown it."""

    run_id: int
    command: str
    status: str  # the run's status label, e.g. "Succeeded"
    exit_code: int | None
    log: str  # empty when the run wrote nothing
    verdict: str | None  # the check's label ("Not reproduced"), None without a check
    summary: str
    evidence: list[dict[str, Any]]


def _log_head_and_tail(run: ExperimentRun, max_bytes: int) -> str:
    """The whole log when it is short, else its first and last `max_bytes` around a
    line that says how much was not read: the start shows what ran, the end the numbers."""
    try:
        with run.log.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(0)
            if size <= 2 * max_bytes:
                whole: bytes = handle.read()
                return whole.decode("utf-8", errors="replace")
            head: bytes = handle.read(max_bytes)
            handle.seek(size - max_bytes)
            tail: bytes = handle.read()
    except OSError:
        return ""
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[... {size - len(head) - len(tail)} bytes not read ...]\n"
        + tail.decode("utf-8", errors="replace")
    )


def reproduction_for_judges(
    *, submission_id: int, max_bytes: int = 200_000
) -> ReproductionForJudges | None:
    """The submission's latest finished reproduction run, its log and its check;
    None without one."""
    run = (
        ExperimentRun.objects.filter(
            submission_id=submission_id,
            phase=ExperimentPhase.REPRO,
            status__in=REPRODUCTION_FINISHED,
        )
        .select_related("reproduction")
        .order_by("-finished_at", "-id")
        .first()
    )
    if run is None:
        return None
    check = getattr(run, "reproduction", None)
    return ReproductionForJudges(
        run_id=run.pk,
        command=run.command,
        status=run.get_status_display(),
        exit_code=run.exit_code,
        log=_log_head_and_tail(run, max_bytes) if run.log else "",
        verdict=check.get_verdict_display() if check else None,
        summary=check.summary if check else "",
        evidence=list(check.evidence or []) if check else [],
    )


def reproduction_verdicts(
    *, submission_ids: Iterable[int] | QuerySet[Any]
) -> dict[int, ReproductionCheck]:
    """The latest reproduction check per submission (for pages and the leaderboard column)."""
    latest: dict[int, ReproductionCheck] = {}
    checks = (
        ReproductionCheck.objects.filter(run__submission_id__in=submission_ids)
        .select_related("run")
        .order_by("run__submission_id", "-created_at", "-id")
    )
    for check in checks:
        latest.setdefault(check.run.submission_id, check)
    return latest


@dataclass(frozen=True)
class ObjectiveCell:
    """One agent on one objective task: its test evaluation."""

    task_slug: str
    task_title: str
    metric: str
    higher_is_better: bool
    score: float
    relative_improvement: float
    runtime_seconds: float | None
    lloc: int
    test_run_id: int
    submission_id: int


@dataclass
class ObjectiveRow:
    agent_id: int
    agent_name: str
    agent_display_name: str
    mean_relative_improvement: float
    tasks: list[ObjectiveCell] = field(default_factory=list)

    @property
    def task_count(self) -> int:
        return len(self.tasks)


def objective_leaderboard_rows() -> list[ObjectiveRow]:
    """Agents ranked by mean relative improvement to human over the objective
    tasks they were evaluated on (finished test runs only), with the raw
    score, runtime and logical lines of code per task."""
    results = (
        ObjectiveResult.objects.filter(
            test_score__isnull=False,
            relative_improvement__isnull=False,
            test_run__status=ExperimentStatus.SUCCEEDED,
        )
        .select_related("agent", "objective__task", "test_run")
        .order_by("agent__name", "objective__task__slug")
    )
    rows: dict[int, ObjectiveRow] = {}
    for result in results:
        row = rows.get(result.agent_id)
        if row is None:
            row = rows[result.agent_id] = ObjectiveRow(
                agent_id=result.agent_id,
                agent_name=result.agent.name,
                agent_display_name=result.agent.display_name,
                mean_relative_improvement=0.0,
            )
        # The query keeps only results with both (the filter above).
        assert result.test_score is not None and result.relative_improvement is not None
        row.tasks.append(
            ObjectiveCell(
                task_slug=result.objective.task.slug,
                task_title=result.objective.task.title,
                metric=result.objective.metric,
                higher_is_better=result.objective.higher_is_better,
                score=result.test_score,
                relative_improvement=result.relative_improvement,
                runtime_seconds=result.runtime_seconds,
                lloc=result.lloc,
                test_run_id=result.test_run_id,
                submission_id=result.test_run.submission_id,
            )
        )
    for row in rows.values():
        row.mean_relative_improvement = sum(c.relative_improvement for c in row.tasks) / len(
            row.tasks
        )
    return sorted(rows.values(), key=lambda row: (-row.mean_relative_improvement, row.agent_name))


def objective_task_results(*, task_id: int) -> tuple[ObjectiveTask | None, list[ObjectiveResult]]:
    """An objective task's definition and its agents' test results, best first."""
    objective = ObjectiveTask.objects.filter(task_id=task_id).first()
    if objective is None:
        return None, []
    results = list(
        ObjectiveResult.objects.filter(objective=objective)
        .select_related("agent", "test_run", "dev_run")
        .order_by("-relative_improvement", "agent__name")
    )
    return objective, results
