"""Every write about experiment runs, objective tasks and reproduction checks."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from benchmark import sandbox
from benchmark.models import (
    TASK_SLUG_PATTERN,
    Agent,
    Artifact,
    ArtifactKind,
    ExperimentLimit,
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
    ReproductionCheck,
    ReproductionVerdict,
    Stage,
    Submission,
    Task,
    TaskKind,
)
from mlrbench_site.celery import GPU_QUEUE

from . import claims as claims_module
from .lloc import file_lloc
from .selectors import objective_best_dev_run
from .slots import HostTooSmall, Slots, SlotsBusy, gpu_capacity, gpu_host_announce, host_name
from .slots import slots_acquire as _slots_acquire

logger = logging.getLogger(__name__)

# A running run whose worker has not written a heartbeat for this long is
# taken to be lost; a redelivered message may then run it again.
STALE_AFTER_SECONDS = 180
HEARTBEAT_EVERY_SECONDS = 15
OUTPUT_FILE_MAX_BYTES = 5 * 1024 * 1024
OUTPUT_FILES_MAX = 500
REPRO_STAGES = (Stage.EXPERIMENT, Stage.END2END)
# Artifacts copied into a run's fresh work folder: the code, the data it
# ships, and wherever it keeps its run.sh. Papers and results are not: the
# run must produce its numbers again.
RUN_SCRIPT = "run.sh"


class ExperimentRefused(Exception):
    """A run cannot be queued, cancelled or re-run; the message says why."""


class ObjectiveTaskInvalid(Exception):
    """An objective task definition is refused; `problems` names each problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


# ---------------------------------------------------------------- queueing


def _code_artifacts(submission: Submission) -> list[Artifact]:
    return [
        artifact
        for artifact in submission.artifacts.all()
        if artifact.kind in (ArtifactKind.CODE, ArtifactKind.DATA)
        or PurePosixPath(artifact.path).name == RUN_SCRIPT
    ]


def _code_root(artifacts: list[Artifact]) -> str:
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
    artifacts = _code_artifacts(submission)
    if any(PurePosixPath(a.path).name == RUN_SCRIPT for a in artifacts):
        return f"sh {RUN_SCRIPT}"
    return None


def _gpu_check(gpu_count: int) -> None:
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
    from benchmark.tasks import experiment_run_task

    transaction.on_commit(lambda: experiment_run_task.apply_async(args=[run.pk], queue=GPU_QUEUE))


def _time_limit(seconds: int | None) -> int:
    limit = seconds or settings.EXPERIMENT_TIME_LIMIT_SECONDS
    if limit < 1:
        raise ExperimentRefused("the time limit must be at least one second")
    return min(limit, settings.EXPERIMENT_MAX_TIME_LIMIT_SECONDS)


def _run_create(
    *,
    submission: Submission,
    phase: str,
    command: str,
    gpu_count: int,
    time_limit_seconds: int,
    requested_by=None,
    rerun_of: ExperimentRun | None = None,
) -> ExperimentRun:
    _gpu_check(gpu_count)
    run = ExperimentRun.objects.create(
        submission=submission,
        phase=phase,
        command=command,
        gpu_count=gpu_count,
        time_limit_seconds=time_limit_seconds,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        rerun_of=rerun_of,
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


def experiment_queue(
    *,
    submission: Submission,
    phase: str,
    command: str | None = None,
    gpu_count: int | None = None,
    time_limit_seconds: int | None = None,
    requested_by=None,
) -> ExperimentRun:
    """Queue a sandboxed run of a submission's code on the `gpu` queue.

    `dev` runs a method on its objective task's dev data; `test` evaluates the
    agent's best dev run once on the test data (see `objective_test_queue`);
    `repro` re-runs an experiment or end-to-end submission's run.sh (or the
    given command) and checks the numbers its paper reports.
    """
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
        )
    if phase == ExperimentPhase.DEV:
        objective = _objective_of(submission)
        return _run_create(
            submission=submission,
            phase=phase,
            command=command or objective.method_command,
            gpu_count=objective.gpu_count if gpu_count is None else gpu_count,
            time_limit_seconds=_time_limit(time_limit_seconds or objective.time_limit_seconds),
            requested_by=requested_by,
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


def objective_test_queue(
    *,
    agent: Agent,
    objective: ObjectiveTask,
    requested_by=None,
    submission: Submission | None = None,
) -> ExperimentRun:
    """Evaluate the agent's best dev run on the test data, once.

    The best dev run is the one with the best score among the agent's method
    submissions for the task, in the metric's direction. A second evaluation
    is refused; organisers re-run the test run instead.
    """
    best = objective_best_dev_run(agent_id=agent.pk, objective=objective)
    if best is None:
        raise ExperimentRefused(
            f"agent {agent.name} has no succeeded dev run on {objective.task.slug} to evaluate"
        )
    if submission is not None and submission.pk != best.submission_id:
        raise ExperimentRefused(
            f"only the agent's best dev run is evaluated on test: that is run {best.pk} of "
            f"submission {best.submission_id} ({objective.metric} {best.score:g}), "
            f"not submission {submission.pk}"
        )
    existing = ObjectiveResult.objects.filter(objective=objective, agent=agent).first()
    if existing is not None:
        raise ExperimentRefused(
            f"agent {agent.name} was already evaluated on the test data of "
            f"{objective.task.slug} (run {existing.test_run_id}); an organiser may re-run that run"
        )
    try:
        with transaction.atomic():
            run = _run_create(
                submission=best.submission,
                phase=ExperimentPhase.TEST,
                command=best.command,
                gpu_count=best.gpu_count,
                time_limit_seconds=best.time_limit_seconds,
                requested_by=requested_by,
            )
            ObjectiveResult.objects.create(
                objective=objective,
                agent=agent,
                dev_run=best,
                test_run=run,
                lloc=submission_lloc(submission=best.submission),
            )
    except IntegrityError:
        raise ExperimentRefused(
            f"agent {agent.name} was already evaluated on the test data of {objective.task.slug}"
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
    return run


def experiment_rerun(*, run: ExperimentRun, requested_by=None) -> ExperimentRun:
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
        )
        ObjectiveResult.objects.filter(test_run=run).update(
            test_run=new, test_score=None, relative_improvement=None, runtime_seconds=None
        )
    return new


# ---------------------------------------------------------------- execution


@dataclass
class _RunContext:
    run: ExperimentRun
    slots: Slots
    run_dir: Path
    work: Path
    code_root: str
    objective: ObjectiveTask | None


def experiment_execute(*, run_id: int) -> ExperimentRun | None:
    """Run one queued run on this worker: claim it, sandbox it, record it.

    Idempotent: a run that another worker holds, or that has finished, is left
    alone. Raises `SlotsBusy` (or `HostTooSmall` when another host could take
    it) so that the Celery task retries later.
    """
    run = (
        ExperimentRun.objects.select_related("submission__task", "submission__agent")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.is_finished:
        return run
    gpu_host_announce()
    try:
        slots = _slots_acquire(gpus=run.gpu_count, wait_seconds=10)
    except HostTooSmall as exc:
        capacity = gpu_capacity()
        if capacity is not None and capacity >= run.gpu_count:
            raise
        _finish_unstarted(run, f"no gpu worker host has {run.gpu_count} GPU(s): {exc}")
        return run
    except SlotsBusy:
        raise
    with slots:
        if not _claim(run, slots):
            return run
        run_dir = Path(settings.EXPERIMENT_WORK_ROOT) / "runs" / f"{run.pk}-{secrets.token_hex(4)}"
        try:
            context = _prepare(run, slots, run_dir)
            _execute(context)
        except BaseException as exc:
            # Whatever broke (a missing file, no bwrap, the task's own time
            # limit), the run must not stay `running`.
            logger.exception("experiment run %s could not run", run.pk)
            _finish(
                run,
                status=ExperimentStatus.FAILED,
                reason=f"could not run: {exc}" if str(exc) else f"could not run: {exc!r}",
            )
            if not isinstance(exc, Exception):
                raise
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
    run.refresh_from_db()
    return run


def _claim(run: ExperimentRun, slots: Slots) -> bool:
    now = timezone.now()
    stale = now - timedelta(seconds=STALE_AFTER_SECONDS)
    claimed = (
        ExperimentRun.objects.filter(pk=run.pk)
        .filter(
            Q(status=ExperimentStatus.QUEUED, cancel_requested=False)
            | Q(status=ExperimentStatus.RUNNING, heartbeat_at__lt=stale)
        )
        .update(
            status=ExperimentStatus.RUNNING,
            started_at=now,
            heartbeat_at=now,
            worker_host=host_name(),
            gpus=slots.gpus,
        )
    )
    run.refresh_from_db()
    return bool(claimed)


def _finish_unstarted(run: ExperimentRun, reason: str) -> None:
    ExperimentRun.objects.filter(pk=run.pk, status=ExperimentStatus.QUEUED).update(
        status=ExperimentStatus.FAILED, reason=reason, finished_at=timezone.now()
    )
    run.refresh_from_db()


def _finish(run: ExperimentRun, **fields) -> bool:
    fields.setdefault("finished_at", timezone.now())
    done = ExperimentRun.objects.filter(pk=run.pk, status=ExperimentStatus.RUNNING).update(**fields)
    run.refresh_from_db()
    return bool(done)


def _sandbox_owned(path: Path, uid: int | None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if uid is not None and os.geteuid() == 0:
        os.chown(path, uid, uid)
    os.chmod(path, 0o755)


def _prepare(run: ExperimentRun, slots: Slots, run_dir: Path) -> _RunContext:
    uid = slots.uid if os.geteuid() == 0 else None
    root = Path(settings.EXPERIMENT_WORK_ROOT)
    for folder in (root, root / "runs"):
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)
    run_dir.mkdir()
    os.chmod(run_dir, 0o755)
    work = run_dir / "work"
    work.mkdir()
    artifacts = _code_artifacts(run.submission)
    for artifact in artifacts:
        relative = PurePosixPath(artifact.path)
        if relative.is_absolute() or ".." in relative.parts:
            raise sandbox.SandboxError(f"artifact path {artifact.path!r} leaves the run folder")
        target = work.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with artifact.file.open("rb") as source, open(target, "wb") as copy:
            shutil.copyfileobj(source, copy)
        os.chmod(target, 0o755 if target.suffix in (".sh", ".py") else 0o644)
    code_root = _code_root(artifacts)
    (work / code_root / "output").mkdir(parents=True, exist_ok=True)
    if uid is not None:
        for folder, dirs, files in os.walk(work):
            os.chown(folder, uid, uid)
            for name in dirs + files:
                os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)
    objective = None
    if run.phase in (ExperimentPhase.DEV, ExperimentPhase.TEST):
        objective = run.submission.task.objective
    return _RunContext(
        run=run, slots=slots, run_dir=run_dir, work=work, code_root=code_root, objective=objective
    )


def _limits(seconds: float) -> sandbox.Limits:
    return sandbox.Limits(
        wall_seconds=seconds,
        memory_bytes=settings.SANDBOX_MEMORY_BYTES,
        processes=settings.SANDBOX_PROCESSES,
        disk_bytes=settings.SANDBOX_DISK_BYTES,
    )


def _extra_mounts() -> list[sandbox.Mount]:
    return [sandbox.Mount(Path(path), path) for path in settings.SANDBOX_RO_PATHS if path]


def _passthrough() -> dict[str, str]:
    return {name: os.environ[name] for name in settings.SANDBOX_ENV_ALLOW if name in os.environ}


def _log_open(run: ExperimentRun):
    """The run's log, written as the run goes so the page can show its tail."""
    name = f"experiments/{run.pk}/log.txt"
    path = Path(default_storage.path(name))
    path.parent.mkdir(parents=True, exist_ok=True)
    ExperimentRun.objects.filter(pk=run.pk).update(log=name)
    return open(path, "wb")  # noqa: SIM115 - closed by the caller


def _cancel_poller(run: ExperimentRun):
    last_beat = timezone.now()

    def should_cancel() -> bool:
        nonlocal last_beat
        now = timezone.now()
        query = ExperimentRun.objects.filter(pk=run.pk)
        if (now - last_beat).total_seconds() >= HEARTBEAT_EVERY_SECONDS:
            query.update(heartbeat_at=now)
            last_beat = now
        return bool(query.filter(cancel_requested=True).exists())

    return should_cancel


def _sandbox(
    context: _RunContext,
    *,
    command: str,
    workdir: Path,
    cwd: str,
    mounts: list[sandbox.Mount],
    env: dict[str, str],
    seconds: float,
    log,
) -> sandbox.SandboxResult:
    uid = context.slots.uid if os.geteuid() == 0 else None
    spec = sandbox.SandboxSpec(
        command=command,
        workdir=workdir,
        limits=_limits(seconds),
        mounts=[*mounts, *_extra_mounts()],
        env=env,
        gpus=context.slots.gpus,
        uid=uid,
        cwd=cwd,
        cgroups=settings.SANDBOX_CGROUPS,
        scratch=context.run_dir,
    )
    return sandbox.sandbox_run(
        spec,
        log=log,
        should_cancel=_cancel_poller(context.run),
        log_max_bytes=settings.EXPERIMENT_LOG_MAX_BYTES,
        env_passthrough=_passthrough(),
    )


def _status_of(result: sandbox.SandboxResult) -> str:
    return {
        sandbox.Outcome.SUCCEEDED: ExperimentStatus.SUCCEEDED,
        sandbox.Outcome.FAILED: ExperimentStatus.FAILED,
        sandbox.Outcome.TIMED_OUT: ExperimentStatus.TIMED_OUT,
        sandbox.Outcome.CANCELLED: ExperimentStatus.CANCELLED,
    }[result.outcome]


def _execute(context: _RunContext) -> None:
    run, objective = context.run, context.objective
    cwd = str(PurePosixPath(sandbox.INSIDE_WORKDIR) / context.code_root)
    env = {
        "OUTPUT_DIR": f"{cwd}/output",
        "EXPERIMENT_PHASE": run.phase,
        "EXPERIMENT_RUN_ID": str(run.pk),
    }
    mounts: list[sandbox.Mount] = []
    data_dir = None
    if objective is not None:
        data_dir = Path(
            objective.dev_data_dir if run.phase == ExperimentPhase.DEV else objective.test_data_dir
        )
        # The method sees the public half of its phase's data, and nothing else.
        mounts.append(sandbox.Mount(data_dir / "public", "/data"))
        env["DATA_DIR"] = "/data"
    before = _manifest(context.work)
    with _log_open(run) as log:
        log.write(f"$ {run.command}\n".encode())
        log.flush()
        result = _sandbox(
            context,
            command=run.command,
            workdir=context.work,
            cwd=cwd,
            mounts=mounts,
            env=env,
            seconds=run.time_limit_seconds,
            log=log,
        )
        _log_footer(log, "run", result)
        status, reason = _status_of(result), result.reason
        metrics: dict = {}
        score = None
        if objective is not None and status == ExperimentStatus.SUCCEEDED:
            metrics, score, status, reason = _evaluate(context, objective, data_dir, log)
        elif objective is None:
            metrics = _metrics_file(context.work / context.code_root)
    outputs = _outputs_collect(run, context.work, before)
    finished = _finish(
        run,
        status=status,
        exit_code=result.exit_code,
        limit_hit=result.limit or ExperimentLimit.NONE,
        reason=reason,
        outputs=outputs,
        metrics=metrics,
        score=score,
        wall_seconds=result.wall_seconds,
        peak_memory_bytes=result.peak_memory_bytes,
    )
    if not finished:
        return
    if run.phase == ExperimentPhase.REPRO:
        reproduction_check_record(run=run, produced=_produced_numbers(run, context.work, before))
    elif run.phase == ExperimentPhase.TEST:
        objective_result_record(run=run)


def _log_footer(log, step: str, result: sandbox.SandboxResult) -> None:
    detail = f"; {result.reason}" if result.reason else ""
    log.write(
        (
            f"\n== {step} ended: {result.outcome} (exit {result.exit_code}) after "
            f"{result.wall_seconds:.1f} s{detail}; memory limit by {result.memory_enforcement} ==\n"
        ).encode()
    )
    log.flush()


def _evaluate(
    context: _RunContext, objective: ObjectiveTask, data_dir: Path, log
) -> tuple[dict, float | None, str, str]:
    """Score the method's predictions in a second sandbox that alone sees the labels."""
    eval_work = context.run_dir / "eval"
    _sandbox_owned(eval_work, context.slots.uid if os.geteuid() == 0 else None)
    predictions = _predictions_copy(
        context.work / context.code_root / "output", context.run_dir / "predictions"
    )
    mounts = [
        sandbox.Mount(data_dir / "public", "/data"),
        sandbox.Mount(data_dir / "private", "/private"),
        sandbox.Mount(predictions, "/predictions"),
    ]
    if objective.eval_dir:
        mounts.append(sandbox.Mount(Path(objective.eval_dir), "/task"))
    log.write(f"\n== evaluation ==\n$ {objective.eval_command}\n".encode())
    log.flush()
    result = _sandbox(
        context,
        command=objective.eval_command,
        workdir=eval_work,
        cwd=sandbox.INSIDE_WORKDIR,
        mounts=mounts,
        env={"DATA_DIR": "/data", "LABELS_DIR": "/private", "PREDICTIONS_DIR": "/predictions"},
        seconds=context.run.time_limit_seconds,
        log=log,
    )
    _log_footer(log, "evaluation", result)
    if result.outcome != sandbox.Outcome.SUCCEEDED:
        status = _status_of(result)
        if status == ExperimentStatus.SUCCEEDED:
            status = ExperimentStatus.FAILED
        return {}, None, status, f"the evaluation failed: {result.reason}"
    metrics = _metrics_file(eval_work)
    score = metrics.get(objective.metric)
    if not isinstance(score, int | float):
        return (
            metrics,
            None,
            ExperimentStatus.FAILED,
            f"the evaluation wrote no number for the metric {objective.metric!r} in metrics.json",
        )
    return metrics, float(score), ExperimentStatus.SUCCEEDED, ""


def _predictions_copy(source: Path, target: Path) -> Path:
    """The method's output, as plain files only: a link the method left there
    (say, to /private/labels.csv) must not point the evaluation at the labels."""
    target.mkdir()
    budget = settings.SANDBOX_DISK_BYTES
    for relative, size in _changed_files(source, {}):
        content = _safe_read(source / relative, min(size, budget))
        if content is None:
            continue
        copy = target / relative
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(content)
        budget -= len(content)
    for folder, _, files in os.walk(target):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return target


def _safe_read(path: Path, max_bytes: int) -> bytes | None:
    """Read a file the sandbox wrote, never following its links or blocking on its FIFOs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(max_bytes + 1)[:max_bytes]
    finally:
        os.close(fd)


def _metrics_file(folder: Path) -> dict:
    for candidate in (folder / "metrics.json", folder / "output" / "metrics.json"):
        raw = _safe_read(candidate, 1024 * 1024)
        if raw is None:
            continue
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if isinstance(data, dict):
            return {
                str(key): value
                for key, value in data.items()
                if isinstance(value, int | float | str | bool) or value is None
            }
    return {}


def _manifest(root: Path) -> dict[str, tuple[int, int]]:
    entries = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                entries[os.path.relpath(path, root)] = (info.st_size, info.st_mtime_ns)
    return entries


def _changed_files(root: Path, before: dict[str, tuple[int, int]]) -> list[tuple[str, int]]:
    changed = []
    for relative, signature in sorted(_manifest(root).items()):
        if before.get(relative) != signature:
            changed.append((relative, signature[0]))
    return changed


def _outputs_collect(run: ExperimentRun, work: Path, before) -> list[dict]:
    """Keep the files the run created or changed (within size limits) in storage."""
    outputs = []
    budget = settings.EXPERIMENT_OUTPUT_MAX_BYTES
    for relative, size in _changed_files(work, before)[:OUTPUT_FILES_MAX]:
        entry = {"path": relative, "size": size, "stored": False}
        if size <= min(OUTPUT_FILE_MAX_BYTES, budget):
            content = _safe_read(work / relative, OUTPUT_FILE_MAX_BYTES)
            if content is not None:
                default_storage.save(
                    f"experiments/{run.pk}/outputs/{relative}", ContentFile(content)
                )
                entry["stored"] = True
                budget -= len(content)
        outputs.append(entry)
    return outputs


def _produced_numbers(run: ExperimentRun, work: Path, before) -> list[claims_module.Number]:
    produced = []
    for relative, size in _changed_files(work, before):
        if (
            not relative.lower().endswith(claims_module.TEXT_SUFFIXES)
            or size > OUTPUT_FILE_MAX_BYTES
        ):
            continue
        content = _safe_read(work / relative, OUTPUT_FILE_MAX_BYTES)
        if content is not None:
            produced += claims_module.numbers_in(content.decode(errors="replace"), relative)
    if run.log:
        with contextlib.suppress(OSError), run.log.open("rb") as log:
            produced += claims_module.numbers_in(log.read().decode(errors="replace"), "log")
    return produced


# ---------------------------------------------------------------- results


def submission_lloc(*, submission: Submission) -> int:
    """Logical lines of code of a submission's code files."""
    total = 0
    for artifact in submission.artifacts.filter(kind=ArtifactKind.CODE):
        with contextlib.suppress(OSError), artifact.file.open("rb") as handle:
            total += file_lloc(artifact.path, handle.read().decode(errors="replace"))
    return total


def objective_result_record(*, run: ExperimentRun) -> ObjectiveResult | None:
    """Put a finished test run's score and relative improvement on the agent's result."""
    result = ObjectiveResult.objects.select_related("objective").filter(test_run=run).first()
    if result is None:
        return None
    succeeded = run.status == ExperimentStatus.SUCCEEDED and run.score is not None
    result.test_score = run.score if succeeded else None
    result.relative_improvement = (
        result.objective.relative_improvement(run.score) if succeeded else None
    )
    result.runtime_seconds = run.wall_seconds if succeeded else None
    result.save(
        update_fields=["test_score", "relative_improvement", "runtime_seconds", "updated_at"]
    )
    return result


def reproduction_check_record(
    *, run: ExperimentRun, produced: list[claims_module.Number]
) -> ReproductionCheck:
    """Compare the numbers the submission reports with those the run produced."""
    tolerance = settings.REPRODUCTION_TOLERANCE
    claims = []
    for artifact in run.submission.artifacts.filter(
        kind__in=[ArtifactKind.PAPER, ArtifactKind.RESULTS]
    ):
        if not artifact.path.lower().endswith(claims_module.TEXT_SUFFIXES):
            continue
        with contextlib.suppress(OSError), artifact.file.open("rb") as handle:
            text = handle.read(OUTPUT_FILE_MAX_BYTES).decode(errors="replace")
            if artifact.kind == ArtifactKind.PAPER:
                claims += claims_module.paper_claims(text, artifact.path)
            else:
                claims += claims_module.results_claims(text, artifact.path)
    checks = claims_module.claims_check(claims, produced, tolerance=tolerance)
    evidence = [check.as_evidence() for check in checks]
    missing = [check for check in checks if not check.matched]
    if run.status != ExperimentStatus.SUCCEEDED:
        verdict = ReproductionVerdict.COULD_NOT_RUN
        summary = f"the run {run.get_status_display().lower()}: {run.reason or 'no reason given'}"
    elif not checks:
        verdict = ReproductionVerdict.COULD_NOT_RUN
        summary = "nothing to check: the paper and results report no numbers in tables or files"
    elif missing:
        verdict = ReproductionVerdict.NOT_REPRODUCED
        listed = ", ".join(f"{c.claim.text} ({c.claim.where})" for c in missing[:5])
        summary = (
            f"{len(missing)} of {len(checks)} reported numbers were not produced by the run: "
            f"{listed}"
        )
    else:
        verdict = ReproductionVerdict.REPRODUCED
        summary = f"all {len(checks)} reported numbers were produced by the run"
    check, _ = ReproductionCheck.objects.update_or_create(
        run=run,
        defaults={
            "verdict": verdict,
            "summary": summary,
            "evidence": evidence,
            "tolerance": tolerance,
        },
    )
    return check


# ---------------------------------------------------------------- objective tasks


_SLUG_RE = re.compile(TASK_SLUG_PATTERN)


def objective_task_define(
    *,
    slug: str,
    metric: str,
    higher_is_better: bool,
    baseline_score: float,
    human_score: float,
    eval_command: str,
    dev_data_dir: Path,
    test_data_dir: Path,
    eval_dir: Path | None = None,
    title: str | None = None,
    description: str | None = None,
    method_command: str = "sh run.sh",
    time_limit_seconds: int = 600,
    gpu_count: int = 0,
) -> tuple[ObjectiveTask, bool]:
    """Create or update an objective task (and its catalogue task); returns (it, created).

    Each data folder must hold `public/` (seen by the method) and `private/`
    (seen by the evaluation only); dev and test must be different folders.
    """
    problems = []
    match = _SLUG_RE.match(slug)
    if not match:
        problems.append(f"slug {slug!r} is not <iclr|icml|neurips><year>_<name>")
    if not metric.strip():
        problems.append("the metric needs a name")
    if not eval_command.strip():
        problems.append("the evaluation command is empty")
    if human_score == baseline_score or (human_score > baseline_score) != higher_is_better:
        direction = "higher" if higher_is_better else "lower"
        problems.append(
            f"the human score ({human_score:g}) must be better than the baseline "
            f"({baseline_score:g}); {direction} is better for {metric}"
        )
    folders = {"dev data": Path(dev_data_dir), "test data": Path(test_data_dir)}
    for label, folder in folders.items():
        for half in ("public", "private"):
            if not (folder / half).is_dir():
                problems.append(f"the {label} folder {folder} has no {half}/ folder")
    if Path(dev_data_dir).resolve() == Path(test_data_dir).resolve():
        problems.append("the dev and test data must be different folders")
    if eval_dir is not None and not Path(eval_dir).is_dir():
        problems.append(f"the evaluation folder {eval_dir} does not exist")
    if gpu_count:
        try:
            _gpu_check(gpu_count)
        except ExperimentRefused as exc:
            problems.append(str(exc))
    if problems:
        raise ObjectiveTaskInvalid(problems)
    conference, year = match.group(1), int(match.group(2))
    with transaction.atomic():
        task, _ = Task.objects.get_or_create(
            slug=slug,
            defaults={
                "title": title or slug,
                "conference": conference,
                "year": year,
                "description": description or f"# {title or slug}\n",
                "kind": TaskKind.OBJECTIVE,
            },
        )
        changed = []
        for field_name, value in (
            ("title", title),
            ("description", description),
            ("kind", TaskKind.OBJECTIVE),
        ):
            if value is not None and getattr(task, field_name) != value:
                setattr(task, field_name, value)
                changed.append(field_name)
        if changed:
            task.save(update_fields=[*changed, "updated_at"])
        objective, created = ObjectiveTask.objects.update_or_create(
            task=task,
            defaults={
                "metric": metric.strip(),
                "higher_is_better": higher_is_better,
                "baseline_score": baseline_score,
                "human_score": human_score,
                "eval_command": eval_command.strip(),
                "eval_dir": str(Path(eval_dir).resolve()) if eval_dir else "",
                "dev_data_dir": str(Path(dev_data_dir).resolve()),
                "test_data_dir": str(Path(test_data_dir).resolve()),
                "method_command": method_command,
                "time_limit_seconds": time_limit_seconds,
                "gpu_count": gpu_count,
            },
        )
    return objective, created


def experiment_give_up(*, run_id: int, reason: str) -> None:
    """A queued run that no worker could take in time fails with the reason."""
    ExperimentRun.objects.filter(pk=run_id, status=ExperimentStatus.QUEUED).update(
        status=ExperimentStatus.FAILED, reason=reason, finished_at=timezone.now()
    )
