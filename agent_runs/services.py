"""Every write of MLR-Agent runs: create (validated before anything is queued),
cancel, execute one stage (claimed, checkpointed, idempotent), store the
finished workspace through the normal intake, and resume runs whose worker
died."""

from __future__ import annotations

import functools
import logging
import os
import re
import secrets
import shutil
import signal
import tarfile
import tempfile
import threading
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone

from benchmark.forms import model_family_guess
from benchmark.models import Agent, Task, Team
from benchmark.models.agents import AGENT_NAME_PATTERN
from benchmark.roles import is_organiser
from common import llm as gateway
from common.errors import ApplicationError, ErrorItem, ValidationFailed
from common.leases import Lease, lease_claim, lease_heartbeat, lease_reap, lease_release
from common.llm_policy import llm_destination_problems
from common.results import results_changed
from common.tasks import run_soon
from experiments.slots import SlotsBusy
from submissions.intake import submission_intake
from submissions.lineage import previous_stage, stage_inputs_resolve, stage_inputs_sample
from submissions.models import ArtifactKind, Stage, Submission, SubmissionSource
from submissions.run_layout import primary_path

from . import coding, stages
from .context import BudgetSpent, RunCancelled, StageContext, StageFailed
from .models import (
    DONE_STAGE_STATUSES,
    STEPWISE_STAGES,
    AgentRun,
    AgentRunStage,
    RunMode,
    RunStatus,
    StageName,
    StageStatus,
)
from .workspace import TRACE_NAME, Trace, regular_files, run_folder, text_write, workspace_of

logger = logging.getLogger(__name__)

# A stage is held by its run token ("" while nobody holds it) and kept alive by
# the heartbeat thread below; AGENT_RUN_STALE_SECONDS of silence and another
# worker may take it over.
STAGE_LEASE = Lease(running=StageStatus.RUNNING)

AGENT_RUNS_TEAM = ("MLR-Agent runs", "mlr-agent-runs")
SCAFFOLD = "MLR-Agent"
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

END2END_PLAN = (
    StageName.IDEA,
    StageName.LIT,
    StageName.PROPOSAL,
    StageName.EXPERIMENT,
    StageName.PAPER,
    StageName.STORE,
)
STEPWISE_PLAN = {
    Stage.IDEA: (StageName.IDEA, StageName.STORE),
    Stage.PROPOSAL: (StageName.LIT, StageName.PROPOSAL, StageName.STORE),
    Stage.EXPERIMENT: (StageName.EXPERIMENT, StageName.STORE),
    Stage.PAPER: (StageName.PAPER, StageName.STORE),
}
STAGE_FUNCTIONS: dict[str, Callable[[StageContext], str]] = {
    StageName.IDEA: stages.idea_stage,
    StageName.LIT: stages.lit_stage,
    StageName.PROPOSAL: stages.proposal_stage,
    StageName.EXPERIMENT: coding.experiment_stage,
    StageName.PAPER: stages.paper_stage,
}


class StageHeld(Exception):
    """Another worker holds the stage, or an earlier stage is not done: this message
    must not go on with the chain."""


# ------------------------------------------------------------------ create


def _positive_int(value: int | None, field: str, problems: list[ErrorItem]) -> None:
    if value is not None and (isinstance(value, bool) or value < 1):
        problems.append(ErrorItem("invalid", f"{field} must be a positive whole number", field))


def _budget_problems(
    max_steps: int, max_tokens: int | None, max_cost_usd: Decimal | None
) -> list[ErrorItem]:
    problems: list[ErrorItem] = []
    _positive_int(max_steps, "max_steps", problems)
    _positive_int(max_tokens, "max_tokens", problems)
    if max_cost_usd is not None:
        try:
            positive = Decimal(max_cost_usd) > 0
        except (InvalidOperation, TypeError, ValueError):
            positive = False
        if not positive:
            problems.append(ErrorItem("invalid", "max_cost must be more than 0 USD", "max_cost"))
    return problems


def _model_problems(models: dict[str, str], api_base: str, api_key_env: str) -> list[ErrorItem]:
    problems = []
    for field, model in models.items():
        problem = gateway.model_problem(model, api_base=api_base)
        if problem:
            problems.append(ErrorItem("unknown_model", problem, field))
    # Where the key and the calls may go (the same policy as the model's clean()).
    policy = llm_destination_problems(
        models=models.values(), api_base=api_base, api_key_env=api_key_env
    )
    problems += [item for item in policy if item.field == "api_base"]
    if api_key_env:
        if not _ENV_NAME_RE.match(api_key_env):
            problems.append(
                ErrorItem(
                    "invalid",
                    f"{api_key_env!r} is not an environment variable name (give the "
                    "variable's NAME, never the key)",
                    "api_key_env",
                )
            )
        elif refused := [item for item in policy if item.field == "api_key_env"]:
            problems += refused
        elif not os.environ.get(api_key_env):
            problems.append(
                ErrorItem(
                    "missing_key",
                    f"the environment variable {api_key_env} is not set (the API key of "
                    "the run's models is read from it)",
                    "api_key_env",
                )
            )
    return problems


def agent_run_models_check(
    *, models: dict[str, str], api_base: str, api_key_env: str
) -> list[ErrorItem]:
    """One small call to each distinct model of a run, before anything is queued: a
    bad key, a server that is not there or a model it does not serve is the
    form's error, not a run that fails at its first stage."""
    problems = []
    checked: set[str] = set()
    for field, model in models.items():
        if model in checked:
            continue
        checked.add(model)
        config = gateway.ModelConfig(
            model=model, caller="the agent run", api_base=api_base, api_key_env=api_key_env
        )
        try:
            gateway.model_check(config)
        except gateway.LLMError as exc:
            problems.append(ErrorItem("model_check_failed", f"{model}: {exc}", field))
    return problems


def _mode_problems(mode: str, stage: str) -> list[ErrorItem]:
    if mode not in RunMode.values:
        return [ErrorItem("invalid_choice", f"unknown mode {mode!r} (end2end or stepwise)", "mode")]
    if mode == RunMode.STEPWISE and stage not in STEPWISE_STAGES:
        choices = ", ".join(STEPWISE_STAGES)
        return [ErrorItem("invalid_choice", f"a stepwise run needs --stage ({choices})", "stage")]
    if mode == RunMode.END2END and stage:
        return [ErrorItem("invalid", "--stage is for stepwise runs only", "stage")]
    return []


def _tasks_of(slugs: list[str]) -> tuple[list[Task], list[ErrorItem]]:
    if not slugs:
        return [], [ErrorItem("required", "name at least one task", "task")]
    found = {task.slug: task for task in Task.objects.filter(slug__in=slugs)}
    missing = [slug for slug in slugs if slug not in found]
    problems = [
        ErrorItem("not_found", f"no task {slug!r} in the catalogue", "task") for slug in missing
    ]
    return [found[slug] for slug in dict.fromkeys(slugs) if slug in found], problems


def agent_for_run(*, name: str, model: str, requested_by: User | None) -> Agent:
    """The named agent, registered in the organisers' MLR-Agent team when new."""
    agent = Agent.objects.filter(name=name).first()
    if agent is not None:
        return agent
    if not re.match(AGENT_NAME_PATTERN, name):
        raise ValidationFailed(
            "the agent name must be lower-case letters, digits, '.', '-' or '_'", field="agent"
        )
    team, _ = Team.objects.get_or_create(
        slug=AGENT_RUNS_TEAM[1], defaults={"name": AGENT_RUNS_TEAM[0]}
    )
    if requested_by is not None and is_organiser(requested_by):
        team.members.add(requested_by)
    base_model = model.split("/", 1)[1] if "/" in model else model
    agent, _ = Agent.objects.get_or_create(
        name=name,
        defaults={
            "team": team,
            "display_name": f"MLR-Agent ({base_model})",
            "base_model": base_model,
            "scaffold": SCAFFOLD,
            "model_family": model_family_guess(model),
            "description": "Runs of the reference MLR-Agent scaffold on the site.",
        },
    )
    return agent


def _plan_of(mode: str, stage: str) -> tuple[str, ...]:
    return END2END_PLAN if mode == RunMode.END2END else STEPWISE_PLAN[Stage(stage)]


def agent_run_create(
    *,
    tasks: list[str],
    agent_name: str,
    model: str,
    api_base: str = "",
    api_key_env: str = "",
    coding_model: str = "",
    lit_model: str = "",
    lit_review: bool = True,
    mode: str = RunMode.END2END,
    stage: str = "",
    max_steps: int = 50,
    max_tokens: int | None = None,
    max_cost_usd: Decimal | None = None,
    seed: int = 0,
    input_ids: list[int] | None = None,
    requested_by: User | None = None,
    check_models: bool = False,
) -> list[AgentRun]:
    """One run per task, queued after commit. Everything is checked first: an unknown
    model, a missing key variable, a task that does not exist, budgets that are not
    positive, a stage the mode does not take raise `ValidationFailed` naming every
    problem, and nothing is created or queued. With `check_models` (the command and
    the form), each model is then called once (`agent_run_models_check`).

    Long because every input is checked, naming each problem, before anything is created."""
    coding_model = coding_model.strip() or model.strip()
    lit_model = (lit_model.strip() or model.strip()) if lit_review else ""
    found, problems = _tasks_of(tasks)
    models = {"model": model.strip(), "coding_model": coding_model}
    if lit_model:
        models["lit_model"] = lit_model
    problems += _model_problems(models, api_base.strip(), api_key_env.strip())
    problems += _budget_problems(max_steps, max_tokens, max_cost_usd)
    problems += _mode_problems(mode, stage)
    if not agent_name or not re.match(AGENT_NAME_PATTERN, agent_name):
        problems.append(
            ErrorItem(
                "invalid",
                "the agent name must be lower-case letters, digits, '.', '-' or '_'",
                "agent",
            )
        )
    inputs: dict[int, list[int]] = {}
    if not problems and mode == RunMode.STEPWISE:
        inputs, problems = _stepwise_inputs(found, stage, agent_name, seed, input_ids or [])
    if not problems and check_models:
        problems = agent_run_models_check(
            models=models, api_base=api_base.strip(), api_key_env=api_key_env.strip()
        )
    if problems:
        raise ValidationFailed(items=problems)
    runs = []
    with transaction.atomic():
        agent = agent_for_run(name=agent_name, model=model.strip(), requested_by=requested_by)
        for task in found:
            run = AgentRun.objects.create(
                task=task,
                agent=agent,
                requested_by=requested_by,
                mode=mode,
                stage=stage if mode == RunMode.STEPWISE else "",
                model=model.strip(),
                lit_model=lit_model,
                coding_model=coding_model,
                api_base=api_base.strip(),
                api_key_env=api_key_env.strip(),
                max_steps=max_steps,
                max_tokens=max_tokens,
                max_cost_usd=max_cost_usd,
                seed=seed,
                input_ids=inputs.get(task.pk, []),
            )
            AgentRunStage.objects.bulk_create(
                AgentRunStage(run=run, name=name, position=index)
                for index, name in enumerate(_plan_of(mode, stage))
            )
            runs.append(run)
            transaction.on_commit(functools.partial(agent_run_enqueue, run_id=run.pk))
    return runs


def _stepwise_inputs(
    tasks: list[Task], stage: str, agent_name: str, seed: int, given: list[int]
) -> tuple[dict[int, list[int]], list[ErrorItem]]:
    """Each task's inputs of a stepwise stage: the submissions given by id, or one
    drawn with the seed from the task's previous-stage submissions by other agents."""
    if previous_stage(stage) is None:
        if given:
            return {}, [ErrorItem("invalid", f"a stepwise {stage} run takes no inputs", "input")]
        return {}, []
    if given and len(tasks) > 1:
        return {}, [ErrorItem("invalid", "inputs given by id are for one task only", "input")]
    agent = Agent.objects.filter(name=agent_name).first()
    inputs, problems = {}, []
    for task in tasks:
        try:
            picked = (
                stage_inputs_resolve(task=task, stage=stage, ids=given)
                if given
                else stage_inputs_sample(task=task, stage=stage, seed=seed, exclude_agent=agent)
            )
        except ValidationFailed as exc:
            problems += [ErrorItem(i.code, i.message, "input") for i in exc.items]
            continue
        inputs[task.pk] = [submission.pk for submission in picked]
    return inputs, problems


def agent_run_enqueue(*, run_id: int) -> None:
    """Send the chain of the run's stages that are not done, in order."""
    from .tasks import stage_chain

    names = list(
        AgentRunStage.objects.filter(run_id=run_id)
        .exclude(status__in=DONE_STAGE_STATUSES)
        .order_by("position")
        .values_list("name", flat=True)
    )
    if names:
        chain = stage_chain(run_id, names)
        if chain.app.conf.task_always_eager:
            # No broker: the stages run after the response, not inside the request.
            run_soon(chain.apply_async)
        else:
            chain.apply_async()


# ------------------------------------------------------------------ cancel


def agent_run_cancel(*, run: AgentRun, reason: str = "cancelled by an organiser") -> AgentRun:
    """Stop a run. A queued run ends now; a running stage stops at its next call or
    command. A cancelled run stores no submission."""
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_final:
            raise ValidationFailed(
                f"the run is already {locked.get_status_display().lower()}", code="final"
            )
        locked.cancel_requested = True
        locked.reason = reason
        fields = ["cancel_requested", "reason"]
        running = locked.stages.filter(status=StageStatus.RUNNING).first()
        if running is None:
            _final(locked, RunStatus.CANCELLED, reason=reason, stage=_next_stage_name(locked))
        else:
            locked.save(update_fields=fields)
    locked.refresh_from_db()
    return locked


def _next_stage_name(run: AgentRun) -> str:
    stage = run.stages.exclude(status__in=DONE_STAGE_STATUSES).order_by("position").first()
    return stage.name if stage else ""


def _final(run: AgentRun, status: str, *, reason: str, stage: str) -> None:
    """End the run (inside the caller's transaction); no submission is stored."""
    run.status = status
    run.reason = reason
    run.failed_stage = stage
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "reason", "failed_stage", "finished_at", "cancel_requested"])
    stage_status = StageStatus.CANCELLED if status == RunStatus.CANCELLED else StageStatus.FAILED
    run.stages.filter(name=stage).exclude(status__in=DONE_STAGE_STATUSES).update(
        status=stage_status, finished_at=run.finished_at, run_token="", error=reason
    )


# ------------------------------------------------------------------ execute


def _claim(run: AgentRun, stage: AgentRunStage) -> str | None:
    """Take the stage (pending, or running with a stale heartbeat) when every earlier
    stage is done; the token that says this worker holds it, or None."""
    earlier_open = run.stages.filter(position__lt=stage.position).exclude(
        status__in=DONE_STAGE_STATUSES
    )
    if earlier_open.exists():
        return None
    now = timezone.now()
    token = secrets.token_hex(16)
    with transaction.atomic():
        claimed = lease_claim(
            AgentRunStage.objects.filter(pk=stage.pk),
            lease=STAGE_LEASE,
            free=Q(status=StageStatus.PENDING),
            stale_seconds=settings.AGENT_RUN_STALE_SECONDS,
            token=token,
            now=now,
            started_at=now,
            attempts=stage.attempts + 1,
            error="",
        )
        if not claimed:
            return None
        AgentRun.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, started_at=now
        )
    return token


class _Heartbeat(threading.Thread):
    """Says the stage is alive while it runs (a call or a command can take minutes)."""

    def __init__(self, stage_id: int, token: str):
        super().__init__(daemon=True)
        self.stage_id, self.token = stage_id, token
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.AGENT_RUN_HEARTBEAT_SECONDS):
                rows = AgentRunStage.objects.filter(pk=self.stage_id)
                lease_heartbeat(rows, lease=STAGE_LEASE, token=self.token)
        finally:
            close_old_connections()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)


class _CancelInterrupt(BaseException):
    """Raised in the stage by the cancel signal: a BaseException, so that no
    `except Exception` on the way (a model call's retries) takes it for a
    failure to retry."""


class _CancelWatch(threading.Thread):
    """Stops a running stage within seconds of a cancel, whatever it is doing
    (a model call, a file, a command): polls the run's `cancel_requested` and
    then sends the stage's thread SIGUSR1, whose handler raises _CancelInterrupt,
    so even a call blocked in the kernel returns. Only where the stage runs in
    the main thread (a Celery prefork or solo worker, the command line), the
    one thread a signal handler runs in; elsewhere cancel stays cooperative
    (checked before each call and during each command)."""

    def __init__(self, run_id: int):
        super().__init__(daemon=True)
        self.run_id = run_id
        self.stopped = threading.Event()
        self.armed = False
        self.target = threading.get_ident()
        self.previous: Any = None

    def __enter__(self) -> _CancelWatch:
        if threading.current_thread() is not threading.main_thread():
            return self
        self.previous = signal.signal(signal.SIGUSR1, self._interrupt)
        self.armed = True
        self.start()
        return self

    def _interrupt(self, signum: int, frame: object) -> None:
        if self.armed:
            self.armed = False
            raise _CancelInterrupt("cancelled while the stage was running")

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.AGENT_RUN_CANCEL_POLL_SECONDS):
                if AgentRun.objects.filter(pk=self.run_id, cancel_requested=True).exists():
                    if self.armed:
                        signal.pthread_kill(self.target, signal.SIGUSR1)
                    return
        finally:
            close_old_connections()

    def __exit__(self, *exc: object) -> None:
        self.armed = False
        if self.previous is not None:
            self.stopped.set()
            self.join(timeout=10)
            signal.signal(signal.SIGUSR1, self.previous)


# What a stepwise stage takes from its inputs, and where MLR-Agent's own run keeps it.
_INPUT_KINDS: dict[str, str] = {
    ArtifactKind.IDEA: "idea.md",
    ArtifactKind.PROPOSAL: "proposal.md",
    ArtifactKind.RELATED_WORK: "related_work.md",
    ArtifactKind.LOG: "results/log.txt",
}
_INPUT_FILES = (ArtifactKind.CODE, ArtifactKind.DATA, ArtifactKind.RESULTS, ArtifactKind.FIGURE)


def _inputs_place(run: AgentRun, workspace: Path) -> None:
    """A stepwise run's inputs in the workspace: their idea, proposal and log under
    the names this agent's stages read, their code, results and figures as they are."""
    submissions = Submission.objects.prefetch_related("artifacts").in_bulk(run.input_ids)
    for pk in run.input_ids:
        artifacts = list(submissions[pk].artifacts.all())
        paths = [a.path for a in artifacts]
        for artifact in artifacts:
            if artifact.kind in _INPUT_KINDS:
                if artifact.path != primary_path(paths, artifact.kind):
                    continue
                target = workspace / _INPUT_KINDS[artifact.kind]
            elif artifact.kind in _INPUT_FILES and ".." not in artifact.path.split("/"):
                target = workspace / artifact.path
            else:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with artifact.file.open("rb") as source:
                target.write_bytes(source.read())


def _workspace_prepare(run: AgentRun) -> Path:
    workspace = workspace_of(run.pk)
    workspace.mkdir(parents=True, exist_ok=True)
    if not (workspace / "task.md").is_file():
        if run.input_ids:
            _inputs_place(run, workspace)
        text_write(workspace / "task.md", run.task.description)
    return workspace


def agent_run_stage_execute(*, run_id: int, stage: str) -> str:
    """Run one stage of a run, once. Returns `done`, `skipped` (already done: the
    chain goes on) or `stopped` (the run has ended); raises StageHeld when another
    worker holds the stage or an earlier one is not done, and SlotsBusy (the stage
    given back) when the host has no free sandbox slot."""
    run = AgentRun.objects.select_related("task", "agent").filter(pk=run_id).first()
    if run is None or run.is_final:
        return "stopped"
    row = AgentRunStage.objects.filter(run=run, name=stage).first()
    if row is None:
        return "stopped"
    if row.status in DONE_STAGE_STATUSES:
        return "skipped"
    token = _claim(run, row)
    if token is None:
        raise StageHeld(f"run {run_id}: the {stage} stage is held or not yet due")
    row.refresh_from_db()
    if run.cancel_requested:
        with transaction.atomic():
            _final(run, RunStatus.CANCELLED, reason=run.reason or "cancelled", stage=stage)
        return "stopped"
    heartbeat = _Heartbeat(row.pk, token)
    heartbeat.start()
    try:
        return _stage_run(run, row, token)
    finally:
        heartbeat.stop()


def _stage_run(run: AgentRun, row: AgentRunStage, token: str) -> str:
    try:
        with _CancelWatch(run.pk):
            return _stage_body(run, row, token)
    except (RunCancelled, _CancelInterrupt) as exc:
        # Raised by the watch's signal anywhere in the stage, a query included:
        # a connection it cut short is not reused.
        connection.close_if_unusable_or_obsolete()
        # The organiser's reason, as the cancel stored it (this object predates it).
        stored = AgentRun.objects.filter(pk=run.pk).values_list("reason", flat=True).first()
        with transaction.atomic():
            _final(
                run,
                RunStatus.CANCELLED,
                reason=f"{stored or run.reason or 'cancelled'} ({exc})",
                stage=row.name,
            )
        _workspace_remove(run)
        return "stopped"


def _stage_body(run: AgentRun, row: AgentRunStage, token: str) -> str:
    workspace = _workspace_prepare(run)
    trace = Trace(workspace / TRACE_NAME, model=run.model, agent=run.agent.name)
    trace.stage_restart(row.name)
    context = StageContext(run=run, stage=row, workspace=workspace, trace=trace)
    try:
        if row.name == StageName.STORE:
            return _store(run, row, token, workspace)
        if row.name == StageName.LIT and not run.lit_model:
            _stage_done(row, token, StageStatus.SKIPPED, "no literature review (--no-lit-review)")
            return "done"
        note = STAGE_FUNCTIONS[row.name](context)
        context.usage_write()
    except SlotsBusy:
        rows = AgentRunStage.objects.filter(pk=row.pk)
        lease_release(rows, lease=STAGE_LEASE, token=token, status=StageStatus.PENDING)
        raise
    except RunCancelled:
        raise
    except Exception as exc:  # any failure ends the run with the reason and the stage
        logger.exception("agent run %s: the %s stage failed", run.pk, row.name)
        known = isinstance(exc, StageFailed | BudgetSpent | ApplicationError)
        message = str(exc) if known else f"{type(exc).__name__}: {exc}"
        with transaction.atomic():
            _final(run, RunStatus.FAILED, reason=message, stage=row.name)
        return "stopped"
    _stage_done(row, token, StageStatus.FINISHED, note)
    return "done"


def _stage_done(row: AgentRunStage, token: str, status: str, note: str) -> None:
    rows = AgentRunStage.objects.filter(pk=row.pk)
    lease_release(
        rows,
        lease=STAGE_LEASE,
        token=token,
        status=status,
        note=note[:2000],
        finished_at=timezone.now(),
    )


def _workspace_remove(run: AgentRun) -> None:
    shutil.rmtree(run_folder(run.pk), ignore_errors=True)


def _archive(workspace: Path, target: Path) -> Path:
    archive = target / "run.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for relative, path in regular_files(workspace):
            if relative.rsplit("/", 1)[-1].startswith("."):
                continue  # a temporary file of an atomic write
            tar.add(path, arcname=relative, recursive=False)
    return archive


def _store(run: AgentRun, row: AgentRunStage, token: str, workspace: Path) -> str:
    """The workspace through the normal intake, and the run finished, in one
    transaction: a cancel that came first wins and nothing is stored."""
    stage = Stage.END2END if run.mode == RunMode.END2END else run.stage
    with tempfile.TemporaryDirectory(dir=run_folder(run.pk)) as temporary:
        archive = _archive(workspace, Path(temporary))
        with transaction.atomic():
            locked = AgentRun.objects.select_for_update().get(pk=run.pk)
            if locked.cancel_requested:
                raise RunCancelled("cancelled before the run was stored")
            submission = submission_intake(
                agent=run.agent,
                task=run.task,
                stage=stage,
                archive=archive,
                archive_name=f"agent-run-{run.pk}.tar.gz",
                uploader=run.requested_by,
                source=SubmissionSource.API,
                based_on=run.input_ids or None,
            )
            locked.submission = submission
            locked.status = RunStatus.FINISHED
            locked.finished_at = timezone.now()
            locked.save(update_fields=["submission", "status", "finished_at"])
            _stage_done(row, token, StageStatus.FINISHED, f"stored as submission {submission.pk}")
            results_changed([stage])  # a new submission of the stage (its intake's rows too)
    return "done"


# ------------------------------------------------------------------ resume


def agent_runs_resume_stalled(*, older_than: float | None = None) -> list[int]:
    """Resume the runs whose stage has not had a heartbeat for `older_than` seconds
    (AGENT_RUN_STALE_SECONDS): its worker died. The stage goes back to pending and
    the chain is sent again from there; the finished stages are kept."""
    seconds = settings.AGENT_RUN_STALE_SECONDS if older_than is None else older_than
    with transaction.atomic():
        freed = lease_reap(
            AgentRunStage.objects.exclude(
                run__status__in=[RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED]
            ),
            lease=STAGE_LEASE,
            stale_seconds=seconds,
            status=StageStatus.PENDING,
            error="resumed: its worker stopped before finishing",
        )
        stages = AgentRunStage.objects.filter(pk__in=freed).order_by("pk")
        resumed = list(stages.values_list("run_id", flat=True))
        for run_id in resumed:
            transaction.on_commit(functools.partial(agent_run_enqueue, run_id=run_id))
    if resumed:
        logger.warning("resumed %d stalled agent run(s): %s", len(resumed), resumed)
    return resumed
