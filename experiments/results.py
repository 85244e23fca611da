"""Recording what a finished run produced: an objective task's test score and
relative improvement, a reproduction check of the paper's numbers."""

from __future__ import annotations

import contextlib
import logging
import math
from typing import Any

from django.conf import settings
from django.db import transaction

from common.results import results_changed
from experiments.models import (
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
    ReproductionCheck,
    ReproductionVerdict,
)
from submissions.derived import artifact_trace, trace_number_sources_store
from submissions.models import ArtifactKind, Submission
from submissions.selectors import trace_artifacts, trace_step_page

from . import claims as claims_module
from . import mlrc
from .errors import ExperimentRefused
from .lloc import file_lloc
from .selectors import idea_source_of

logger = logging.getLogger(__name__)


OUTPUT_FILE_MAX_BYTES = 5 * 1024 * 1024


def submission_lloc(*, submission: Submission) -> int:
    """Logical lines of code of a submission's code files."""
    total = 0
    # all(), not filter(): a caller that prefetched the artifacts reads no table.
    for artifact in (a for a in submission.artifacts.all() if a.kind == ArtifactKind.CODE):
        with contextlib.suppress(OSError), artifact.file.open("rb") as handle:
            total += file_lloc(artifact.path, handle.read().decode(errors="replace"))
    return total


def method_lloc(run: ExperimentRun, objective: ObjectiveTask) -> tuple[int, int | None]:
    """A dev run's method's logical lines and the baseline's: as main.py saved them
    on an MLRC-Bench task (the method's class), else counted over the submission's code."""
    metrics = run.metrics or {}
    method, base = metrics.get("method_complexity"), metrics.get("base_complexity")
    if objective.is_mlrc and isinstance(method, int) and method >= 0:
        return method, base if isinstance(base, int) and base >= 0 else None
    return submission_lloc(submission=run.submission), None


def objective_result_record(*, run: ExperimentRun) -> ObjectiveResult | None:
    """Put a finished test run's score, relative improvement to human, runtime
    and its change against the baseline's on the trial's result."""
    result = ObjectiveResult.objects.select_related("objective").filter(test_run=run).first()
    if result is None:
        return None
    objective = result.objective
    score = run.score if run.status == ExperimentStatus.SUCCEEDED else None
    succeeded = score is not None
    result.test_score = score
    result.relative_improvement = (
        objective.relative_improvement(score) if score is not None else None
    )
    result.runtime_seconds = method_runtime_seconds(run, objective) if succeeded else None
    baseline_runtime = objective.baseline_runtime_seconds
    result.runtime_change_percent = (
        (result.runtime_seconds - baseline_runtime) / baseline_runtime * 100
        if result.runtime_seconds is not None and baseline_runtime
        else None
    )
    fields = ["test_score", "relative_improvement", "runtime_seconds", "runtime_change_percent"]
    lines = (run.metrics or {}).get("method_complexity")
    if succeeded and objective.is_mlrc and isinstance(lines, int) and lines >= 0:
        base = (run.metrics or {}).get("base_complexity")
        result.lloc = lines
        result.baseline_lloc = base if isinstance(base, int) and base >= 0 else None
        fields += ["lloc", "baseline_lloc"]
    result.save(update_fields=[*fields, "updated_at"])
    return result


def objective_test_score_record(
    *, submission: Submission, score: float, source: str
) -> ObjectiveResult:
    """An organiser's record of a test score obtained elsewhere (a task whose test
    phase is external), for the trial of the submission's dev run, with its source.

    Long because the checks and the write of an organiser's score happen under one lock."""
    objective = ObjectiveTask.objects.filter(task_id=submission.task_id).first()
    if objective is None or not objective.test_phase_is_external:
        where = "is not an objective task" if objective is None else "runs its test phase here"
        raise ExperimentRefused(f"task {submission.task.slug} {where}: no external score")
    if not source.strip():
        raise ExperimentRefused("say where the score comes from (--source)")
    if not math.isfinite(score):
        raise ExperimentRefused(f"the score {score!r} is not a finite number")
    problem = mlrc.score_range_problem(
        score, objective.metric_min, objective.metric_max, objective.metric
    )
    if problem:
        raise ExperimentRefused(problem)
    dev_run = (
        submission.experiment_runs.filter(
            phase=ExperimentPhase.DEV,
            status=ExperimentStatus.SUCCEEDED,
            task_version=objective.version,
        )
        .order_by("-finished_at", "-id")
        .first()
    )
    if dev_run is None:
        raise ExperimentRefused(
            f"submission {submission.pk} has no succeeded dev run on version "
            f"{objective.version} of {objective.task.slug}"
        )
    lines = (dev_run.metrics or {}).get("method_complexity")
    base = (dev_run.metrics or {}).get("base_complexity")
    key: dict[str, Any] = {
        "objective": objective,
        "agent_id": submission.agent_id,
        "trial": dev_run.trial,
        "task_version": objective.version,
    }
    with transaction.atomic():
        existing = ObjectiveResult.objects.select_for_update().filter(**key).first()
        if existing is not None and existing.test_run_id is not None:
            raise ExperimentRefused(
                f"this trial was evaluated on the test data here (run {existing.test_run_id})"
            )
        result, _ = ObjectiveResult.objects.update_or_create(
            **key,
            defaults={
                "dev_run": dev_run,
                "test_run": None,
                "test_score": score,
                "test_score_source": source.strip()[:500],
                "idea_source": idea_source_of(submission=submission),
                "relative_improvement": objective.relative_improvement(score),
                "lloc": lines if isinstance(lines, int) and lines >= 0 else 0,
                "baseline_lloc": base if isinstance(base, int) and base >= 0 else None,
            },
        )
        results_changed([submission.stage])
    return result


def method_runtime_seconds(run: ExperimentRun, objective: ObjectiveTask) -> float | None:
    """An MLRC-Bench task's main.py times the method itself (as its baseline
    runtime was timed); other runs are timed by the sandbox."""
    runtime = (run.metrics or {}).get("runtime")
    if objective.is_mlrc and isinstance(runtime, int | float) and math.isfinite(runtime):
        return float(runtime)
    return run.wall_seconds


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
    printed = trace_number_sources_record(
        submission=run.submission, checks=checks, tolerance=tolerance
    )
    evidence = [
        {**check.as_evidence(), **printed.get(_claim_key(check.claim), {})} for check in checks
    ]
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


def trace_step_numbers(trace: dict) -> list[tuple[int, str, list[claims_module.Number]]]:
    """The numbers each tool result of a trace printed: (step, tool, numbers)."""
    found = []
    for step in trace["steps"]:
        for call in step["tool_calls"]:
            if call.get("result"):
                # Read as a text file: numbers with a decimal point or a percent sign.
                numbers = claims_module.results_claims(call["result"], "output.txt")
                if numbers:
                    found.append((step["index"], call["name"], numbers))
    return found


def trace_number_sources(
    trace: dict, claims: list[claims_module.Number], *, tolerance: float
) -> list[dict]:
    """For each claim, the first step whose tool output printed it (claims no
    step printed are left out)."""
    printed = trace_step_numbers(trace)
    sources = []
    for claim in claims:
        for step, tool, numbers in printed:
            (check,) = claims_module.claims_check([claim], numbers, tolerance=tolerance)
            if check.matched:
                sources.append(
                    {"text": claim.text, "where": claim.where, "step": step, "tool": tool}
                )
                break
    return sources


def _claim_key(claim: claims_module.Number) -> tuple[str, str]:
    return (claim.text, claim.where)


def trace_number_sources_record(
    *, submission: Submission, checks: list[claims_module.ClaimCheck], tolerance: float
) -> dict[tuple[str, str], dict]:
    """Link the paper's numbers that the re-run reproduced to the step of the
    submission's trace whose output printed them, once, at check time: the
    trace page shows the stored links. Returns, by claim, the trace and step
    for the check's evidence (`trace_path`, `trace_step`, `trace_page`)."""
    found = [check.claim for check in checks if check.matched]
    printed: dict[tuple[str, str], dict] = {}
    for artifact in trace_artifacts(list(submission.artifacts.all())):
        trace = artifact_trace(artifact)
        if trace is None or not trace["steps"]:
            continue
        sources = trace_number_sources(trace, found, tolerance=tolerance)
        trace_number_sources_store(artifact=artifact, sources=sources)
        for source in sources:
            printed.setdefault(
                (source["text"], source["where"]),
                {
                    "trace_path": artifact.path,
                    "trace_step": source["step"],
                    "trace_page": trace_step_page(trace, source["step"]),
                },
            )
    return printed
