"""Executing a queued run on a gpu worker: claim it with a conditional update,
take a slot, copy the code into a fresh work folder, run it in the sandbox,
stream the log, collect outputs, and record what it produced."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import sandbox
from common.leases import Lease, lease_claim, lease_heartbeat
from common.results import results_changed
from common.storage import object_save
from experiments.models import (
    ExperimentLimit,
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveTask,
    TaskEnvironment,
    TestFolder,
)
from submissions.models import Submission

from . import claims as claims_module
from . import mlrc
from .environments import base_prefix, run_environment
from .queue import code_artifacts, code_root_of
from .results import OUTPUT_FILE_MAX_BYTES, objective_result_record, reproduction_check_record
from .slots import HostTooSmall, Slots, SlotsBusy, gpu_capacity, gpu_host_announce, host_name
from .slots import slots_acquire as _slots_acquire
from .stored_log import StoredLog

logger = logging.getLogger(__name__)


# A run names no holder (its worker_host says where it runs): one worker at a
# time takes it. A running run whose worker has not written a heartbeat for
# LEASE_STALE_SECONDS is taken to be lost; a redelivered message may then run it again.
EXPERIMENT_LEASE = Lease(running=ExperimentStatus.RUNNING, token_field=None)
OUTPUT_FILES_MAX = 500


@dataclass
class _RunContext:
    run: ExperimentRun
    slots: Slots
    run_dir: Path
    work: Path
    code_root: str
    objective: ObjectiveTask | None
    # MLRC-Bench tasks: bytes of the task copied into the work folder (they do
    # not count as bytes the run wrote), and read-only files the archive had.
    copied_bytes: int = 0
    restored: tuple[str, ...] = ()
    # MLRC-Bench tasks: the task version's files for this phase (the scoring
    # step copies them again, with the labels) and the task version's
    # environment (None: the host's Python).
    task_copy: mlrc.TaskCopy | None = None
    environment: TaskEnvironment | None = None
    # A test run in the folder its dev phase left (MLRC-Bench's README): the
    # method's dev step runs first, then the test data is laid over it.
    dev_first: bool = False


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
    if run.is_finished:  # its outcome, and what it recorded (a score, a reproduction check)
        results_changed([run.submission.stage])
    return run


def _claim(run: ExperimentRun, slots: Slots) -> bool:
    now = timezone.now()
    claimed = lease_claim(
        ExperimentRun.objects.filter(pk=run.pk),
        lease=EXPERIMENT_LEASE,
        free=Q(status=ExperimentStatus.QUEUED, cancel_requested=False),
        stale_seconds=settings.LEASE_STALE_SECONDS,
        now=now,
        started_at=now,
        worker_host=host_name(),
        gpus=slots.gpus,
    )
    run.refresh_from_db()
    return bool(claimed)


def _finish_unstarted(run: ExperimentRun, reason: str) -> None:
    ExperimentRun.objects.filter(pk=run.pk, status=ExperimentStatus.QUEUED).update(
        status=ExperimentStatus.FAILED, reason=reason, finished_at=timezone.now()
    )
    run.refresh_from_db()
    results_changed([run.submission.stage])


def _finish(run: ExperimentRun, **fields: Any) -> bool:
    """End a running run. A test run's trial result is written in the same
    transaction: no reader (a board, a waiting organiser) sees a finished test
    run whose score is not on its trial yet."""
    fields.setdefault("finished_at", timezone.now())
    with transaction.atomic():
        done = ExperimentRun.objects.filter(pk=run.pk, status=ExperimentStatus.RUNNING).update(
            **fields
        )
        run.refresh_from_db()
        if done and run.phase == ExperimentPhase.TEST:
            objective_result_record(run=run)
    return bool(done)


def _sandbox_owned(path: Path, uid: int | None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if uid is not None and os.geteuid() == 0:
        os.chown(path, uid, uid)
    os.chmod(path, 0o755)


def _prepare(run: ExperimentRun, slots: Slots, run_dir: Path) -> _RunContext:
    uid = slots.uid if os.geteuid() == 0 else None
    work_root = Path(settings.EXPERIMENT_WORK_ROOT)
    for folder in (work_root, work_root / "runs"):
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)
    run_dir.mkdir()
    os.chmod(run_dir, 0o755)
    work = run_dir / "work"
    work.mkdir()
    objective = None
    if run.phase in (ExperimentPhase.DEV, ExperimentPhase.TEST):
        objective = run.submission.task.objective
    context = _RunContext(
        run=run, slots=slots, run_dir=run_dir, work=work, code_root="", objective=objective
    )
    if objective is not None and objective.is_mlrc:
        _prepare_mlrc(context, objective)
    else:
        artifacts = code_artifacts(run.submission)
        _artifacts_copy(artifacts, work)
        context.code_root = code_root_of(artifacts)
    (work / context.code_root / "output").mkdir(parents=True, exist_ok=True)
    if uid is not None:
        for current, dirs, files in os.walk(work):
            os.chown(current, uid, uid)
            for name in dirs + files:
                os.chown(os.path.join(current, name), uid, uid, follow_symlinks=False)
    return context


def _artifacts_copy(artifacts, work: Path) -> None:
    for artifact in artifacts:
        relative = PurePosixPath(artifact.path)
        if relative.is_absolute() or ".." in relative.parts:
            raise sandbox.SandboxError(f"artifact path {artifact.path!r} leaves the run folder")
        target = work.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with artifact.file.open("rb") as source, open(target, "wb") as copy:
            shutil.copyfileobj(source, copy)
        os.chmod(target, 0o755 if target.suffix in (".sh", ".py") else 0o644)


def _task_version_folders(run: ExperimentRun, objective: ObjectiveTask) -> tuple[Path, Path]:
    """The env/ and test data of the version the run was queued on (a re-run of an
    old run keeps its version while that version's copy is kept)."""
    env_dir, test_dir = Path(objective.dev_data_dir), Path(objective.test_data_dir)
    if run.task_version and run.task_version != objective.version:
        old = env_dir.parent.with_name(f"v{run.task_version}")
        if (old / "env").is_dir():
            return old / "env", old / "test_data"
    return env_dir, test_dir


def _task_copy(run: ExperimentRun, objective: ObjectiveTask) -> mlrc.TaskCopy:
    env_dir, test_dir = _task_version_folders(run, objective)
    test = run.phase == ExperimentPhase.TEST
    return mlrc.TaskCopy(
        env_dir=env_dir,
        patterns=list(objective.read_only_files or []),
        labels=list(objective.label_files or []),
        test_data_dir=test_dir if test else None,
        test_constants=test_dir.parent / "test_constants.py" if test else None,
        scripts_dir=env_dir.parent / mlrc.SCRIPTS_FOLDER,
        version_test_data=test_dir if test or objective.dev_sees_test_data else None,
        scripts_hidden=() if test or objective.dev_sees_test_data else ("test_constants.py",),
    )


def _prepare_mlrc(context: _RunContext, objective: ObjectiveTask) -> None:
    """A fresh copy of the task's env/ without its label files, the archive's
    methods/ over it, the task's scripts/ beside it, and for the test phase
    only, the test data and constants (after the dev step, for a task whose
    test phase runs in the folder dev left)."""
    run = context.run
    context.environment = run_environment(objective, run.task_version or objective.version)
    method_files = []
    for artifact in run.submission.artifacts.all():
        if artifact.path.startswith(f"{mlrc.METHODS_FOLDER}/"):
            with artifact.file.open("rb") as handle:
                method_files.append((artifact.path, handle.read()))
    context.task_copy = _task_copy(run, objective)
    context.dev_first = (
        run.phase == ExperimentPhase.TEST and objective.test_folder == TestFolder.DEV_LEFT
    )
    first = context.task_copy
    if context.dev_first:
        first = dataclasses.replace(first, test_data_dir=None, test_constants=None)
    copied, restored = mlrc.work_prepare(task=first, method_files=method_files, work=context.work)
    if context.dev_first:
        # What the test phase will lay over it counts as copied in too.
        copied += _size_of(context.task_copy.test_data_dir)
    context.copied_bytes, context.restored = copied, tuple(restored)
    context.code_root = mlrc.ENV_FOLDER


def _size_of(folder: Path | None) -> int:
    if folder is None:
        return 0
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _limits(seconds: float, copied_bytes: int = 0) -> sandbox.Limits:
    return sandbox.Limits(
        wall_seconds=seconds,
        memory_bytes=settings.SANDBOX_MEMORY_BYTES,
        processes=settings.SANDBOX_PROCESSES,
        disk_bytes=settings.SANDBOX_DISK_BYTES + copied_bytes,
    )


def _extra_mounts() -> list[sandbox.Mount]:
    return [sandbox.Mount(Path(path), path) for path in settings.SANDBOX_RO_PATHS if path]


def _passthrough() -> dict[str, str]:
    return {name: os.environ[name] for name in settings.SANDBOX_ENV_ALLOW if name in os.environ}


def _log_open(context: _RunContext) -> StoredLog:
    """The run's log, published to the store as the run goes so the page can
    show its tail (from any host)."""
    run = context.run
    name = f"experiments/{run.pk}/log.txt"
    log = StoredLog(name=name, local=context.run_dir / "log.txt")
    ExperimentRun.objects.filter(pk=run.pk).update(log=name)
    return log


def _cancel_poller(run: ExperimentRun) -> Callable[[], bool]:
    last_beat = timezone.now()

    def should_cancel() -> bool:
        nonlocal last_beat
        now = timezone.now()
        query = ExperimentRun.objects.filter(pk=run.pk)
        if (now - last_beat).total_seconds() >= settings.EXPERIMENT_HEARTBEAT_SECONDS:
            lease_heartbeat(query, lease=EXPERIMENT_LEASE)
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
    log: sandbox.LogSink,
    read_only: tuple[str, ...] = (),
    copied_bytes: int | None = None,
) -> sandbox.SandboxResult:
    uid = context.slots.uid if os.geteuid() == 0 else None
    if copied_bytes is None:
        copied_bytes = context.copied_bytes if workdir == context.work else 0
    spec = sandbox.SandboxSpec(
        command=command,
        workdir=workdir,
        limits=_limits(seconds, copied_bytes),
        mounts=[*mounts, *_extra_mounts()],
        env=env,
        gpus=context.slots.gpus,
        uid=uid,
        cwd=cwd,
        cgroups=settings.SANDBOX_CGROUPS,
        scratch=context.run_dir,
        read_only=list(read_only),
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
    """Long because the sandboxed command, its mounts, log and outputs are one step of the run."""
    run, objective = context.run, context.objective
    if objective is not None and objective.is_mlrc:
        _execute_mlrc(context, objective)
        return
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
    with _log_open(context) as log:
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
        metrics: dict[str, Any] = {}
        score = None
        if objective is not None and data_dir is not None and status == ExperimentStatus.SUCCEEDED:
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
    if finished and run.phase == ExperimentPhase.REPRO:
        reproduction_check_record(run=run, produced=_produced_numbers(run, context.work, before))


def _mlrc_env(
    context: _RunContext, objective: ObjectiveTask
) -> tuple[list[sandbox.Mount], dict[str, str]]:
    """The MLAgentBench stand-in at /opt/mlrc, on the Python path, with a `python`:
    the task version's environment (mounted read-only where it is on the host),
    or the host's Python for a task that asks for no packages."""
    path = _passthrough().get("PATH", sandbox.SANDBOX_PATH)
    mounts = []
    environment = context.environment
    if environment is not None:
        python = environment.python
        mounts.append(sandbox.Mount(Path(environment.path), environment.path))
        prefix = base_prefix(environment)
        if prefix is not None:
            mounts.append(sandbox.Mount(prefix, str(prefix)))
        path = f"{environment.path}/bin:{path}"
    else:
        python = shutil.which("python3", path=path) or "/usr/bin/python3"
    shim = mlrc.shim_install(context.run_dir / "mlrc", python)
    mounts.append(sandbox.Mount(shim, mlrc.SHIM_INSIDE))
    env = {
        "PYTHONPATH": mlrc.SHIM_INSIDE,
        # Last, so a `python` the organiser provides comes first.
        "PATH": f"{path}:{mlrc.SHIM_INSIDE}/bin",
        "MLRC_TASK": objective.task.slug,
        "MLRC_BASELINE_SCORE": repr(objective.baseline_score),
        "MLRC_HUMAN_SCORE": repr(objective.human_score),
        "MLRC_BASELINE_RUNTIME": repr(objective.baseline_runtime_seconds or ""),
        "MLRC_BASELINE_METHOD": objective.baseline_method,
        "EXPERIMENT_PHASE": context.run.phase,
        "EXPERIMENT_RUN_ID": str(context.run.pk),
    }
    return mounts, env


@dataclass
class _Steps:
    """The two sandboxed steps of an MLRC-Bench run and what each gave."""

    method: sandbox.SandboxResult
    report: dict[str, float]
    score: sandbox.SandboxResult | None = None
    evaluation: mlrc.Evaluation = mlrc.Evaluation(None, {}, "")


def _method_step(
    context: _RunContext,
    *,
    method: str,
    phase: str,
    mounts: list[sandbox.Mount],
    env: dict[str, str],
    seconds: float,
    log: sandbox.LogSink,
) -> sandbox.SandboxResult:
    command = mlrc.METHOD_STEP.format(method=method, phase=phase)
    log.write(f"$ {command}\n".encode())
    log.flush()
    # Nothing is mounted read-only: in MLRC-Bench read-only means a method may
    # not edit those files, not that the task's code may not write there
    # (model_dir_NN/model.pt). The scoring step never sees what it changed.
    result = _sandbox(
        context,
        command=command,
        workdir=context.work,
        cwd=f"{sandbox.INSIDE_WORKDIR}/{mlrc.ENV_FOLDER}",
        mounts=mounts,
        env=env,
        seconds=seconds,
        log=log,
    )
    _log_footer(log, f"method ({phase})", result)
    return result


def _execute_mlrc(context: _RunContext, objective: ObjectiveTask) -> None:
    """MLRC-Bench's main.py in two sandboxed processes: the method's step (no
    label files in its folder) runs `evaluate_model`; the scoring step, in a
    fresh copy of the task version with the labels and the method's output/
    but none of its code, runs the task's own `get_score`. The score is the
    one the scoring step saved.

    Long because the method's step and the scoring step share the run's folders and log."""
    run = context.run
    method = mlrc.method_of_command(run.command) or objective.baseline_method
    mounts, env = _mlrc_env(context, objective)
    env_dir = context.work / mlrc.ENV_FOLDER
    before = _manifest(env_dir)
    seconds = float(run.time_limit_seconds)
    with _log_open(context) as log:
        for path in context.restored:
            log.write(f"read-only {path}: the task's own copy is used\n".encode())
        python = context.environment.python if context.environment else "the host's Python"
        log.write(
            f"$ {run.command}\n(python: {python}; the method, then its scoring apart)\n".encode()
        )
        result = None
        if context.dev_first:
            log.write(b"(test phase in the folder the dev phase leaves: dev first)\n")
            result = _method_step(
                context,
                method=method,
                phase="dev",
                mounts=mounts,
                env=env,
                seconds=seconds,
                log=log,
            )
            seconds = max(seconds - result.wall_seconds, 1.0)
            if result.outcome == sandbox.Outcome.SUCCEEDED:
                assert context.task_copy is not None  # set by _prepare_mlrc
                mlrc.test_phase_lay(context.task_copy, env_dir)
                _sandbox_own_tree(context, env_dir)
                (env_dir / mlrc.METHOD_REPORT).unlink(missing_ok=True)
                result = None
        if result is None:
            result = _method_step(
                context,
                method=method,
                phase=run.phase,
                mounts=mounts,
                env=env,
                seconds=seconds,
                log=log,
            )
        report = mlrc.method_report_read(_safe_read(env_dir / mlrc.METHOD_REPORT, 1024 * 1024))
        steps = _Steps(method=result, report=report)
        if result.outcome == sandbox.Outcome.SUCCEEDED and "runtime" in report:
            _score_step(context, objective, steps, mounts=mounts, env=env, log=log)
    status, reason = _mlrc_status(run, steps, objective)
    evaluation = steps.evaluation
    outputs = _outputs_collect(run, env_dir, before)
    _finish(
        run,
        status=status,
        exit_code=result.exit_code,
        limit_hit=(steps.score.limit if steps.score else "")
        or result.limit
        or ExperimentLimit.NONE,
        reason=reason,
        outputs=outputs,
        metrics=evaluation.entry,
        score=evaluation.score if status == ExperimentStatus.SUCCEEDED else None,
        wall_seconds=result.wall_seconds,
        peak_memory_bytes=result.peak_memory_bytes,
    )


def _sandbox_own_tree(context: _RunContext, folder: Path) -> None:
    """Files the worker laid into a work folder: the sandbox's user owns them."""
    uid = context.slots.uid if os.geteuid() == 0 else None
    for current, dirs, files in os.walk(folder):
        os.chmod(current, 0o755)
        for name in files:
            path = os.path.join(current, name)
            if not os.path.islink(path):
                os.chmod(path, 0o644)
        if uid is not None:
            os.chown(current, uid, uid)
            for name in dirs + files:
                os.chown(os.path.join(current, name), uid, uid, follow_symlinks=False)


def _score_step(
    context: _RunContext,
    objective: ObjectiveTask,
    steps: _Steps,
    *,
    mounts: list[sandbox.Mount],
    env: dict[str, str],
    log: sandbox.LogSink,
) -> None:
    """The scoring step: a fresh copy of the task version (labels included, the
    task's own methods/), the method's output/ files, the task's get_score.

    Long because the scoring copy, its sandbox and the score's checks are one step."""
    run, task_copy = context.run, context.task_copy
    assert task_copy is not None  # set by _prepare_mlrc
    score_work = context.run_dir / "score"
    score_work.mkdir()
    copied, _ = mlrc.work_prepare(
        task=task_copy, method_files=[], work=score_work, with_labels=True
    )
    score_env = score_work / mlrc.ENV_FOLDER
    copied += mlrc.outputs_copy(
        context.work / mlrc.ENV_FOLDER / "output", score_env / "output", _safe_read
    )
    _sandbox_own_tree(context, score_work)
    method = mlrc.method_of_command(run.command) or objective.baseline_method
    command = mlrc.SCORE_STEP.format(method=method, phase=run.phase)
    report = steps.report
    step_env = {
        **env,
        "MLRC_METHOD_RUNTIME": repr(report.get("runtime", "")),
        "MLRC_METHOD_COMPLEXITY": repr(report.get("method_complexity", "")),
        "MLRC_BASE_COMPLEXITY": repr(report.get("base_complexity", "")),
    }
    log.write(
        f"\n== scoring (the task's get_score, apart from the method) ==\n$ {command}\n".encode()
    )
    log.flush()
    seconds = max(run.time_limit_seconds - steps.method.wall_seconds, 30.0)
    steps.score = _sandbox(
        context,
        command=command,
        workdir=score_work,
        cwd=f"{sandbox.INSIDE_WORKDIR}/{mlrc.ENV_FOLDER}",
        mounts=mounts,
        env=step_env,
        seconds=seconds,
        log=log,
        read_only=(
            mlrc.SCRIPTS_FOLDER,
            *(
                f"{mlrc.ENV_FOLDER}/{path}"
                for path in mlrc.read_only_paths(
                    score_env, [*task_copy.patterns, *task_copy.labels]
                )
            ),
        ),
        copied_bytes=copied,
    )
    _log_footer(log, "scoring", steps.score)
    evaluation = mlrc.evaluation_read(
        _safe_read(score_env / mlrc.EVALS_FILE, 1024 * 1024), run.phase
    )
    if evaluation.score is not None:
        problem = mlrc.score_range_problem(
            evaluation.score, objective.metric_min, objective.metric_max, objective.metric
        )
        if problem:
            evaluation = mlrc.Evaluation(None, evaluation.entry, problem)
    steps.evaluation = evaluation


def _mlrc_status(run: ExperimentRun, steps: _Steps, objective: ObjectiveTask) -> tuple[str, str]:
    """A crash, a time-out or no usable score says so, with the log's tail."""
    method = _status_of(steps.method)
    if method != ExperimentStatus.SUCCEEDED:
        status, why = method, steps.method.reason or f"the method's run {method}"
    elif "runtime" not in steps.report:
        status = ExperimentStatus.COULD_NOT_RUN
        why = "the run saved no score: the method's step ended before evaluate_model returned"
    elif steps.score is None or _status_of(steps.score) != ExperimentStatus.SUCCEEDED:
        scored = _status_of(steps.score) if steps.score else ExperimentStatus.FAILED
        status = ExperimentStatus.FAILED if scored == ExperimentStatus.SUCCEEDED else scored
        detail = steps.score.reason if steps.score else ""
        why = f"the scoring step (get_score) failed{': ' + detail if detail else ''}"
    elif steps.evaluation.score is None:
        status, why = ExperimentStatus.COULD_NOT_RUN, steps.evaluation.problem
    else:
        return ExperimentStatus.SUCCEEDED, ""
    if status == ExperimentStatus.CANCELLED:
        return status, why
    return status, f"{why}; the log ends:\n{mlrc.log_tail(_log_text(run))}"


def _log_text(run: ExperimentRun) -> str:
    run.refresh_from_db(fields=["log"])
    if not run.log:
        return ""
    with contextlib.suppress(OSError), run.log.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(size - 4 * mlrc.LOG_TAIL_CHARS, 0))
        return handle.read().decode("utf-8", errors="replace")
    return ""


def _log_footer(log: sandbox.LogSink, step: str, result: sandbox.SandboxResult) -> None:
    detail = f"; {result.reason}" if result.reason else ""
    log.write(
        (
            f"\n== {step} ended: {result.outcome} (exit {result.exit_code}) after "
            f"{result.wall_seconds:.1f} s{detail}; memory limit by {result.memory_enforcement} ==\n"
        ).encode()
    )
    log.flush()


def _evaluate(
    context: _RunContext, objective: ObjectiveTask, data_dir: Path, log: sandbox.LogSink
) -> tuple[dict[str, Any], float | None, str, str]:
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
    problem = mlrc.score_range_problem(
        float(score), objective.metric_min, objective.metric_max, objective.metric
    )
    if problem:
        return metrics, None, ExperimentStatus.COULD_NOT_RUN, problem
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


def _metrics_file(folder: Path) -> dict[str, Any]:
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


def _outputs_collect(
    run: ExperimentRun, work: Path, before: dict[str, tuple[int, int]]
) -> list[dict[str, Any]]:
    """Keep the files the run created or changed (within size limits) in storage."""
    outputs = []
    budget = settings.EXPERIMENT_OUTPUT_MAX_BYTES
    for relative, size in _changed_files(work, before)[:OUTPUT_FILES_MAX]:
        entry = {"path": relative, "size": size, "stored": False}
        if size <= min(OUTPUT_FILE_MAX_BYTES, budget):
            content = _safe_read(work / relative, OUTPUT_FILE_MAX_BYTES)
            if content is not None:
                object_save(f"experiments/{run.pk}/outputs/{relative}", content)
                entry["stored"] = True
                budget -= len(content)
        outputs.append(entry)
    return outputs


def _produced_numbers(
    run: ExperimentRun, work: Path, before: dict[str, tuple[int, int]]
) -> list[claims_module.Number]:
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


def experiment_give_up(*, run_id: int, reason: str) -> None:
    """A queued run that no worker could take in time fails with the reason."""
    given_up = ExperimentRun.objects.filter(pk=run_id, status=ExperimentStatus.QUEUED).update(
        status=ExperimentStatus.FAILED, reason=reason, finished_at=timezone.now()
    )
    if given_up:
        results_changed(
            Submission.objects.filter(experiment_runs__pk=run_id).values_list("stage", flat=True)
        )
