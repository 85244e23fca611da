"""Queueing experiment runs: a submission's dev, test or reproduction run, cancel and
re-run. Every run goes to the `gpu` queue after its row commits."""

from __future__ import annotations

import logging
from pathlib import PurePosixPath

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.utils import timezone

from benchmark.models import Agent
from common.results import results_changed
from experiments.models import (
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
)
from submissions.models import Artifact, ArtifactKind, Stage, Submission

from . import mlrc
from .environments import run_environment
from .errors import ExperimentRefused
from .results import method_lloc
from .selectors import idea_source_of, method_choice_of, objective_best_dev_run, trial_of
from .slots import gpu_capacity
from .tasks import experiment_run_task

logger = logging.getLogger(__name__)


REPRO_STAGES = (Stage.EXPERIMENT, Stage.END2END)
# Artifacts copied into a run's fresh work folder: everything the run's
# commands may read where they read it (the code, the data it ships, the
# documents and other files beside it, wherever it keeps its run.sh), so that
# run.sh replays as it ran. What the run reports is not: the paper, results,
# figures, the log and traces; it must produce its numbers again.
RUN_SCRIPT = "run.sh"
_REPORTED_KINDS = frozenset(
    {
        ArtifactKind.PAPER,
        ArtifactKind.RESULTS,
        ArtifactKind.FIGURE,
        ArtifactKind.LOG,
        ArtifactKind.TRACE,
        ArtifactKind.TOKEN_USAGE,
    }
)


def _replayed(artifact: Artifact) -> bool:
    if PurePosixPath(artifact.path).name == RUN_SCRIPT:
        return True
    if artifact.kind in _REPORTED_KINDS:
        return False
    # An unclassified file under results/ is an output of the original run.
    return not (artifact.kind == ArtifactKind.OTHER and artifact.path.startswith("results/"))


def code_artifacts(submission: Submission) -> list[Artifact]:
    return [artifact for artifact in submission.artifacts.all() if _replayed(artifact)]


def code_root_of(artifacts: list[Artifact]) -> str:
    """The folder holding the shallowest run.sh ("" for the top), where commands run."""
    scripts = [
        PurePosixPath(artifact.path)
        for artifact in artifacts
        if PurePosixPath(artifact.path).name == RUN_SCRIPT
    ]
    if not scripts:
        return ""
    shallowest = min(scripts, key=lambda path: (len(path.parts), str(path)))
    parent = str(shallowest.parent)
    return "" if parent == "." else parent


def repro_command_find(submission: Submission) -> str | None:
    """How to re-run an experiment: the command given with the upload, else its run.sh."""
    given = (getattr(submission, "run_command", "") or "").strip()
    if given:
        return given
    artifacts = code_artifacts(submission)
    if any(PurePosixPath(a.path).name == RUN_SCRIPT for a in artifacts):
        return f"sh {RUN_SCRIPT}"
    return None


def gpu_check(gpu_count: int) -> None:
    if gpu_count <= 0:
        return
    capacity = gpu_capacity()
    if capacity is None:
        raise ExperimentRefused(
            f"the run asks for {gpu_count} GPU(s) but no gpu worker has announced its GPUs "
            "yet; start a worker on the `gpu` queue or set GPU_MAX_PER_HOST"
        )
    if gpu_count > capacity:
        raise ExperimentRefused(
            f"the run asks for {gpu_count} GPU(s) but the largest gpu worker host has "
            f"{capacity}; it would wait forever, so it is not queued"
        )


def _enqueue(run: ExperimentRun) -> None:
    transaction.on_commit(lambda: experiment_run_task.delay(run.pk))


def _time_limit(seconds: int | None) -> int:
    limit = seconds or settings.EXPERIMENT_TIME_LIMIT_SECONDS
    if limit < 1:
        raise ExperimentRefused("the time limit must be at least one second")
    return min(limit, int(settings.EXPERIMENT_MAX_TIME_LIMIT_SECONDS))


def _run_create(
    *,
    submission: Submission,
    phase: str,
    command: str,
    gpu_count: int,
    time_limit_seconds: int,
    requested_by: User | AnonymousUser | None = None,
    rerun_of: ExperimentRun | None = None,
    task_version: int | None = None,
    trial: int = 1,
) -> ExperimentRun:
    gpu_check(gpu_count)
    run = ExperimentRun.objects.create(
        submission=submission,
        phase=phase,
        command=command,
        gpu_count=gpu_count,
        time_limit_seconds=time_limit_seconds,
        requested_by=requested_by if isinstance(requested_by, User) and requested_by.pk else None,
        rerun_of=rerun_of,
        task_version=task_version,
        trial=trial,
    )
    _enqueue(run)
    return run


def _objective_of(submission: Submission) -> ObjectiveTask:
    if submission.stage != Stage.METHOD:
        raise ExperimentRefused(
            f"dev and test runs are for method submissions of objective tasks; submission "
            f"{submission.pk} is of stage {submission.stage}"
        )
    try:
        return submission.task.objective
    except ObjectiveTask.DoesNotExist:
        raise ExperimentRefused(
            f"task {submission.task.slug} is not an objective task (no metric, data or "
            "evaluation program is defined for it)"
        ) from None


def _dev_command(
    submission: Submission, objective: ObjectiveTask, command: str | None
) -> tuple[str, int]:
    """The dev run's command and the trial it belongs to. An MLRC-Bench task runs
    its own main.py on the method the archive names; no other command."""
    if not objective.is_mlrc:
        return command or objective.method_command, trial_of(submission=submission)
    choice = method_choice_of(submission=submission, objective=objective)
    if choice.name is None:
        raise ExperimentRefused(f"submission {submission.pk}: {choice.problem}")
    return mlrc.command_for(choice.name, ExperimentPhase.DEV), choice.trial


def _test_command(best: ExperimentRun, objective: ObjectiveTask) -> str:
    method = mlrc.method_of_command(best.command) if objective.is_mlrc else None
    if method is None:
        return best.command
    return mlrc.command_for(method, ExperimentPhase.TEST)


def experiment_queue(
    *,
    submission: Submission,
    phase: str,
    command: str | None = None,
    gpu_count: int | None = None,
    time_limit_seconds: int | None = None,
    requested_by: User | AnonymousUser | None = None,
) -> ExperimentRun:
    """Queue a sandboxed run of a submission's code on the `gpu` queue.

    `dev` runs a method on its objective task's dev data; `test` evaluates the
    agent's best dev run once on the test data (see `objective_test_queue`);
    `repro` re-runs an experiment or end-to-end submission's run.sh (or the
    given command) and checks the numbers its paper reports.

    Long because the three phases' checks share the submission's rows and the one insert."""
    if phase not in ExperimentPhase.values:
        raise ExperimentRefused(
            f"unknown phase {phase!r}; one of {', '.join(ExperimentPhase.values)}"
        )
    if phase == ExperimentPhase.TEST:
        objective = _objective_of(submission)
        return objective_test_queue(
            agent=submission.agent,
            objective=objective,
            requested_by=requested_by,
            submission=submission,
            trial=_trial_of_dev_runs(submission, objective),
        )
    if phase == ExperimentPhase.DEV:
        objective = _objective_of(submission)
        if objective.is_mlrc:
            # A run needs its task version's environment: refused, with the reason, without.
            run_environment(objective, objective.version)
        dev_command, trial = _dev_command(submission, objective, command)
        return _run_create(
            submission=submission,
            phase=phase,
            command=dev_command,
            gpu_count=objective.gpu_count if gpu_count is None else gpu_count,
            time_limit_seconds=_time_limit(time_limit_seconds or objective.time_limit_seconds),
            requested_by=requested_by,
            task_version=objective.version,
            trial=trial,
        )
    if submission.stage not in REPRO_STAGES:
        raise ExperimentRefused(
            f"reproduction runs are for experiment and end-to-end submissions; submission "
            f"{submission.pk} is of stage {submission.stage}"
        )
    command = command or repro_command_find(submission)
    if not command:
        raise ExperimentRefused(
            f"submission {submission.pk} does not say how to run it: it has no {RUN_SCRIPT} "
            "among its files and no command was given"
        )
    return _run_create(
        submission=submission,
        phase=phase,
        command=command,
        gpu_count=gpu_count or 0,
        time_limit_seconds=_time_limit(time_limit_seconds),
        requested_by=requested_by,
    )


def experiment_refusal_record(*, submission: Submission, phase: str, reason: str) -> ExperimentRun:
    """A run that was refused when nobody waited on a command line (a submission
    queued on its own when it became ready), kept as a failed run so that the
    submission page and the API say why."""
    objective = getattr(submission.task, "objective", None)
    return ExperimentRun.objects.create(
        submission=submission,
        phase=phase,
        command=objective.method_command if objective else (repro_command_find(submission) or ""),
        status=ExperimentStatus.FAILED,
        gpu_count=objective.gpu_count if objective else 0,
        time_limit_seconds=settings.EXPERIMENT_TIME_LIMIT_SECONDS,
        reason=reason,
        finished_at=timezone.now(),
    )


def _trial_of_dev_runs(submission: Submission, objective: ObjectiveTask) -> int:
    run = (
        submission.experiment_runs.filter(phase=ExperimentPhase.DEV, task_version=objective.version)
        .order_by("-id")
        .first()
    )
    return run.trial if run is not None else trial_of(submission=submission)


def objective_test_queue(
    *,
    agent: Agent,
    objective: ObjectiveTask,
    requested_by: User | AnonymousUser | None = None,
    submission: Submission | None = None,
    trial: int = 1,
) -> ExperimentRun:
    """Evaluate the best dev run of one of the agent's trials on the test data, once.

    The best dev run is the one with the best score among the trial's method
    submissions for the task's current version, in the metric's direction. A
    second evaluation is refused; organisers re-run the test run instead.

    Long because choosing the best dev run, the refusals and the insert happen under one lock."""
    if objective.test_phase_is_external:
        raise ExperimentRefused(
            f"the test phase of {objective.task.slug} is scored elsewhere: an organiser "
            f"records the score with `objective_task test-score --submission ID --score X "
            f"--source TEXT`"
        )
    best = objective_best_dev_run(agent_id=agent.pk, objective=objective, trial=trial)
    trial_label = f" (trial {trial})" if trial != 1 else ""
    if best is None:
        raise ExperimentRefused(
            f"agent {agent.name}{trial_label} has no succeeded dev run on "
            f"{objective.task.slug} to evaluate"
        )
    if submission is not None and submission.pk != best.submission_id:
        raise ExperimentRefused(
            f"only the agent's best dev run is evaluated on test: that is run {best.pk} of "
            f"submission {best.submission_id} ({objective.metric} {best.score:g}), "
            f"not submission {submission.pk}"
        )
    if objective.is_mlrc:
        run_environment(objective, objective.version)
    existing = ObjectiveResult.objects.filter(
        objective=objective, agent=agent, trial=trial, task_version=objective.version
    ).first()
    if existing is not None:
        raise ExperimentRefused(
            f"agent {agent.name}{trial_label} was already evaluated on the test data of "
            f"{objective.task.slug} (run {existing.test_run_id}); an organiser may re-run that run"
        )
    lloc, baseline_lloc = method_lloc(best, objective)
    try:
        with transaction.atomic():
            run = _run_create(
                submission=best.submission,
                phase=ExperimentPhase.TEST,
                command=_test_command(best, objective),
                gpu_count=best.gpu_count,
                time_limit_seconds=best.time_limit_seconds,
                requested_by=requested_by,
                task_version=objective.version,
                trial=trial,
            )
            ObjectiveResult.objects.create(
                objective=objective,
                agent=agent,
                dev_run=best,
                test_run=run,
                idea_source=idea_source_of(submission=best.submission),
                lloc=lloc,
                baseline_lloc=baseline_lloc,
                trial=trial,
                task_version=objective.version,
            )
            results_changed([best.submission.stage])  # the trial's result, awaiting its score
    except IntegrityError:
        raise ExperimentRefused(
            f"agent {agent.name}{trial_label} was already evaluated on the test data of "
            f"{objective.task.slug}"
        ) from None
    return run


def experiment_cancel(*, run: ExperimentRun) -> ExperimentRun:
    """Cancel a queued run at once, or ask its worker to kill a running one."""
    now = timezone.now()
    cancelled = ExperimentRun.objects.filter(pk=run.pk, status=ExperimentStatus.QUEUED).update(
        status=ExperimentStatus.CANCELLED,
        cancel_requested=True,
        finished_at=now,
        reason="cancelled by an organiser before it started",
    )
    if not cancelled:
        cancelled = ExperimentRun.objects.filter(pk=run.pk, status=ExperimentStatus.RUNNING).update(
            cancel_requested=True
        )
    run.refresh_from_db()
    if not cancelled:
        raise ExperimentRefused(f"run {run.pk} has already finished ({run.status})")
    if run.is_finished:  # a running one is finished by its worker
        results_changed([run.submission.stage])
    return run


def experiment_rerun(
    *, run: ExperimentRun, requested_by: User | AnonymousUser | None = None
) -> ExperimentRun:
    """Queue the same run again (a finished one); a test run keeps its place as
    the agent's one test evaluation."""
    if not run.is_finished:
        raise ExperimentRefused(f"run {run.pk} is still {run.status}; cancel it first")
    with transaction.atomic():
        new = _run_create(
            submission=run.submission,
            phase=run.phase,
            command=run.command,
            gpu_count=run.gpu_count,
            time_limit_seconds=run.time_limit_seconds,
            requested_by=requested_by,
            rerun_of=run,
            task_version=run.task_version,
            trial=run.trial,
        )
        rescored = ObjectiveResult.objects.filter(test_run=run).update(
            test_run=new, test_score=None, relative_improvement=None, runtime_seconds=None
        )
        if rescored:  # its test score is gone until the new run's
            results_changed([run.submission.stage])
    return new
