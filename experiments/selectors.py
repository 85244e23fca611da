"""Reads of experiment runs, objective results and reproduction verdicts that
pages, the API, the judges and the leaderboard share."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from experiments.models import (
    FINISHED_STATUSES,
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
    ReproductionCheck,
)
from submissions.models import Submission
from submissions.visibility import hidden_submission_ids

from . import mlrc

LOG_CHUNK_MAX_BYTES = 64 * 1024
# A reproduction run judges are shown has ended, one way or another.
REPRODUCTION_FINISHED = (
    ExperimentStatus.SUCCEEDED,
    ExperimentStatus.FAILED,
    ExperimentStatus.TIMED_OUT,
)
LOG_TAIL_BYTES = 16 * 1024


def experiment_runs(
    *, submission_id: int | None = None, user: User | AnonymousUser | None = None
) -> QuerySet[ExperimentRun]:
    """Runs, newest first; with `user`, without those of submissions hidden
    from that user (a reviewer's blind papers, submissions/visibility.py)."""
    runs = ExperimentRun.objects.select_related("reproduction", "submission")
    if submission_id is not None:
        runs = runs.filter(submission_id=submission_id)
    if user is not None:
        hidden = hidden_submission_ids(user=user)
        if hidden:
            runs = runs.exclude(submission_id__in=hidden)
    return runs.order_by("-created_at", "-id")


def objective_best_dev_run(
    *, agent_id: int, objective: ObjectiveTask, trial: int = 1
) -> ExperimentRun | None:
    """The agent's best succeeded dev run of one trial on the task's current
    version, in the metric's direction (the earliest among equals)."""
    order = "-score" if objective.higher_is_better else "score"
    return (
        ExperimentRun.objects.filter(
            submission__agent_id=agent_id,
            submission__task_id=objective.task_id,
            phase=ExperimentPhase.DEV,
            status=ExperimentStatus.SUCCEEDED,
            score__isnull=False,
            trial=trial,
            task_version=objective.version,
        )
        .select_related("submission")
        .order_by(order, "finished_at", "id")
        .first()
    )


def objective_trials_to_test(*, objective: ObjectiveTask) -> list[tuple[int, int]]:
    """(agent id, trial) of every trial with a succeeded dev run on the task's
    current version and no test evaluation yet, in agent and trial order."""
    tried = (
        ExperimentRun.objects.filter(
            submission__task_id=objective.task_id,
            phase=ExperimentPhase.DEV,
            status=ExperimentStatus.SUCCEEDED,
            score__isnull=False,
            task_version=objective.version,
        )
        .values_list("submission__agent_id", "trial")
        .distinct()
    )
    tested = set(
        ObjectiveResult.objects.filter(
            objective=objective, task_version=objective.version
        ).values_list("agent_id", "trial")
    )
    return sorted(set(tried) - tested)


def _artifact_reader(
    submission: Submission,
) -> tuple[list[str], Callable[[str], bytes | None]]:
    artifacts = {artifact.path: artifact for artifact in submission.artifacts.all()}

    def read(path: str) -> bytes | None:
        artifact = artifacts.get(path)
        if artifact is None:
            return None
        with contextlib.suppress(OSError), artifact.file.open("rb") as handle:
            return bytes(handle.read(64 * 1024))
        return None

    return sorted(artifacts), read


def method_choice_of(*, submission: Submission, objective: ObjectiveTask) -> mlrc.MethodChoice:
    """The method an MLRC-Bench method submission runs, and its trial."""
    paths, read = _artifact_reader(submission)
    task_init = Path(objective.dev_data_dir) / mlrc.METHODS_FOLDER / "__init__.py"
    try:
        init_source = task_init.read_text(encoding="utf-8")
    except OSError:
        init_source = ""
    return mlrc.method_choose(
        paths=paths, read=read, task_init=init_source, baseline=objective.baseline_method
    )


def idea_source_of(*, submission: Submission) -> str:
    """Where a method submission's idea came from (idea_source.txt; `none` without one)."""
    paths, read = _artifact_reader(submission)
    return mlrc.idea_source_read(paths, read)[0]


def trial_of(*, submission: Submission) -> int:
    """The agent's trial a method submission belongs to (trial.txt; 1 without one)."""
    paths, read = _artifact_reader(submission)
    choice = mlrc.method_choose(paths=paths, read=read, task_init="", baseline="")
    return choice.trial


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
    """One agent on one objective task: the test evaluations of its trials on the
    task's latest version it was evaluated on. The score, runtime and lines are
    the best trial's; a trial whose test run gave no score counts as the
    baseline's (0%) in the mean, as MLRC-Bench counts a failed trial."""

    task_slug: str
    task_title: str
    metric: str
    higher_is_better: bool
    score: float
    relative_improvement: float
    runtime_seconds: float | None
    lloc: int
    test_run_id: int | None  # None: the test phase was scored elsewhere
    submission_id: int
    trials: int = 1
    best_relative_improvement: float = 0.0
    mean_relative_improvement_of_trials: float = 0.0
    beat_baseline_share: float = 0.0
    task_version: int = 1
    runtime_change_percent: float | None = None
    lloc_change_percent: float | None = None
    # Where an external test score comes from ('' for a test run here).
    test_score_source: str = ""
    # Beside relative improvement to human, as MLRC-Bench also reports: the
    # score's absolute and percentage improvement over the baseline.
    baseline_score: float | None = None
    absolute_improvement: float | None = None
    percent_improvement: float | None = None
    # Each trial's test relative improvement in trial order (0 for no score).
    trial_relative_improvements: list[float] = field(default_factory=list)
    idea_source: str = "none"
    # The task's get_score reads labels from the method's output (forgery.py).
    scoring_forgeable: bool | None = None


@dataclass
class ObjectiveRow:
    agent_id: int
    agent_name: str
    agent_display_name: str
    mean_relative_improvement: float
    tasks: list[ObjectiveCell] = field(default_factory=list)
    # MLRC-Bench's Pass@k averaged over the agent's tasks (mlrc_analyses), set by the board.
    mlrc_pass_at_k: dict[str, Any] | None = None

    @property
    def task_count(self) -> int:
        return len(self.tasks)

    @property
    def best_of_k(self) -> list[dict[str, object]]:
        """The site's own best of k (not MLRC-Bench's Pass@k, see `mlrc_pass_at_k`):
        for k = 1..K, the share of the agent's tasks (those with at least k trials,
        n) where the best of its first k trials' test results beats the baseline
        (relative improvement above 0)."""
        k_max = max((len(c.trial_relative_improvements) for c in self.tasks), default=0)
        answer: list[dict[str, object]] = []
        for k in range(1, k_max + 1):
            firsts = [
                c.trial_relative_improvements[:k]
                for c in self.tasks
                if len(c.trial_relative_improvements) >= k
            ]
            beat = sum(1 for first in firsts if max(first) > 0)
            answer.append({"k": k, "n": len(firsts), "share": beat / len(firsts)})
        return answer


# A test evaluation that ended: a trial, whether or not it gave a score.
_TRIAL_ENDED = [status for status in FINISHED_STATUSES if status != ExperimentStatus.CANCELLED]


def _trials_of_latest_version(results: list[ObjectiveResult]) -> list[ObjectiveResult]:
    """The trials on the latest task version that has a scored one."""
    scored = [r for r in results if r.relative_improvement is not None and r.test_score is not None]
    if not scored:
        return []
    version = max(r.task_version for r in scored)
    return [r for r in results if r.task_version == version]


def _cell(trials: list[ObjectiveResult]) -> ObjectiveCell | None:
    """One agent's cell on one task from its trials (None without a scored trial)."""
    trials = _trials_of_latest_version(trials)
    scored = [r for r in trials if r.relative_improvement is not None and r.test_score is not None]
    if not scored:
        return None
    best = max(scored, key=lambda r: (r.relative_improvement, -r.trial))
    improvements = [r.relative_improvement or 0.0 for r in trials]
    objective = best.objective
    assert best.relative_improvement is not None and best.test_score is not None
    return ObjectiveCell(
        task_slug=objective.task.slug,
        task_title=objective.task.title,
        metric=objective.metric,
        higher_is_better=objective.higher_is_better,
        score=best.test_score,
        relative_improvement=best.relative_improvement,
        runtime_seconds=best.runtime_seconds,
        lloc=best.lloc,
        test_run_id=best.test_run_id,
        submission_id=best.dev_run.submission_id,
        trials=len(trials),
        best_relative_improvement=best.relative_improvement,
        mean_relative_improvement_of_trials=sum(improvements) / len(improvements),
        beat_baseline_share=sum(1 for value in improvements if value > 0) / len(improvements),
        task_version=best.task_version,
        runtime_change_percent=best.runtime_change_percent,
        lloc_change_percent=best.lloc_change_percent,
        test_score_source=best.test_score_source,
        trial_relative_improvements=improvements,
        idea_source=best.idea_source,
        scoring_forgeable=objective.scoring_forgeable,
        **_improvement_over_baseline(objective, best.test_score),
    )


def _improvement_over_baseline(objective: ObjectiveTask, score: float) -> dict[str, float | None]:
    """In the metric's direction: positive is better than the baseline."""
    sign = 1 if objective.higher_is_better else -1
    gain = sign * (score - objective.baseline_score)
    return {
        "baseline_score": objective.baseline_score,
        "absolute_improvement": gain,
        "percent_improvement": (
            gain / abs(objective.baseline_score) * 100 if objective.baseline_score else None
        ),
    }


def _ended_trials() -> QuerySet[ObjectiveResult]:
    return ObjectiveResult.objects.filter(
        Q(test_run__status__in=_TRIAL_ENDED) | Q(test_run__isnull=True, test_score__isnull=False)
    )


def objective_idea_sources() -> list[str]:
    """The configurations (idea sources) of the trials the objective board counts."""
    return sorted(set(_ended_trials().values_list("idea_source", flat=True)))


def objective_leaderboard_rows(*, idea_source: str | None = None) -> list[ObjectiveRow]:
    """Agents ranked by mean relative improvement to human over the objective
    tasks they were evaluated on (their best trial per task), with the raw
    score, runtime and logical lines of code per task, and how their trials did.
    `idea_source`: only the trials of that configuration (none, human, coi, ...)."""
    results = _ended_trials()
    if idea_source:
        results = results.filter(idea_source=idea_source)
    results = results.select_related("agent", "objective__task", "test_run", "dev_run").order_by(
        "agent__name", "objective__task__slug", "task_version", "trial"
    )
    groups: dict[tuple[int, int], list[ObjectiveResult]] = {}
    for result in results:
        groups.setdefault((result.agent_id, result.objective_id), []).append(result)
    rows: dict[int, ObjectiveRow] = {}
    for trials in groups.values():
        cell = _cell(trials)
        if cell is None:
            continue
        agent = trials[0].agent
        row = rows.get(agent.pk)
        if row is None:
            row = rows[agent.pk] = ObjectiveRow(
                agent_id=agent.pk,
                agent_name=agent.name,
                agent_display_name=agent.display_name,
                mean_relative_improvement=0.0,
            )
        row.tasks.append(cell)
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
        .order_by("-task_version", "-relative_improvement", "agent__name", "trial")
    )
    return objective, results
