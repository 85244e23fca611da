"""Analyses of one objective task's results (read-only): the site's own, and
MLRC-Bench's as MLRC-Bench computes them (`mlrc_bench`, see mlrc_analyses.py).

The site's own, per agent and configuration (the method's idea source: none,
human, agent, or a label such as coi): best of k trials (for k = 1..K, whether
the best of its first k test results beats the baseline; not MLRC-Bench's
Pass@k, which is under `mlrc_bench`); beside relative improvement to human,
the absolute and percentage improvement over the test baseline in the
metric's direction (not MLRC-Bench's improvement_perc); and cost: each trial's
LLM cost as its submission recorded it (its usage files or trace, priced at
intake), the mean per trial, and relative improvement points per dollar; and
from the trials' traces, the share of tool calls with argument errors and the
share of failed code executions the agent repaired itself later (a later call
of the same execution tool that succeeded); and the trend over its dev runs
(each a snapshot of the method's code, in the order they ran within a trial)
of the method's logical lines, its runtime and its dev score. Each figure has
its n; an empty one says why.
"""

from __future__ import annotations

import json
import re

from django.db.models import Q

from experiments.models import (
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
)
from submissions.derived import artifact_trace
from submissions.selectors import trace_artifacts

from .environments import environment_state
from .mlrc_analyses import mlrc_bench_analyses
from .results import method_lloc, method_runtime_seconds


def _best_of_k(improvements: list[float | None], k_max: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for k in range(1, k_max + 1):
        first = improvements[:k]
        if len(first) < k:
            rows.append({"k": k, "n": 0, "share": None, "why_empty": f"fewer than {k} trials"})
            continue
        # A trial whose test run gave no score counts as the baseline (0%).
        best = max(value if value is not None else 0.0 for value in first)
        rows.append({"k": k, "n": 1, "share": 1.0 if best > 0 else 0.0, "why_empty": ""})
    return rows


def _trial_cost(result: ObjectiveResult) -> tuple[float | None, bool]:
    """(cost in USD, whether it is a lower bound): the LLM steps' priced sum,
    else the cost the agent reported; None when neither is known."""
    submission = result.dev_run.submission
    if submission.llm_cost_usd is not None:
        return float(submission.llm_cost_usd), submission.llm_unpriced_steps > 0
    if submission.agent_cost_usd is not None:
        return float(submission.agent_cost_usd), False
    return None, False


def _cost(trials: list[ObjectiveResult], best_improvement: float | None) -> dict:
    costs = [_trial_cost(t) for t in trials]
    known = [cost for cost, _ in costs if cost is not None]
    lower_bound = any(bound for cost, bound in costs if cost is not None)
    if not known:
        return {
            "n": 0,
            "mean_usd_per_trial": None,
            "is_lower_bound": False,
            "relative_improvement_per_usd": None,
            "why_empty": "no trial's usage files or trace recorded a cost",
        }
    mean = sum(known) / len(known)
    per_dollar = best_improvement / mean if best_improvement is not None and mean > 0 else None
    return {
        "n": len(known),
        "mean_usd_per_trial": mean,
        # Some steps had no price: the mean is at least this, the gain per dollar at most.
        "is_lower_bound": lower_bound,
        "relative_improvement_per_usd": per_dollar,
        "why_empty": "" if per_dollar is not None else "no scored trial or a zero cost",
    }


# Code-execution tools across the trace formats the site reads.
EXECUTION_TOOLS = frozenset({"exec", "run", "bash", "execute", "execute_script", "shell"})
_ARGUMENT_ERROR_RE = re.compile(
    r"invalid (?:argument|parameter|input)|missing (?:required )?(?:argument|parameter)|"
    r"unexpected keyword|argument.{0,40}(?:required|invalid)|could not parse",
    re.IGNORECASE,
)


def _argument_error(call: dict) -> bool:
    """A call the tool refused for its arguments: arguments that are not the JSON
    object they claim to be, or an error result that says the arguments were wrong."""
    arguments = (call.get("arguments") or "").strip()
    if arguments.startswith("{"):
        try:
            json.loads(arguments)
        except ValueError:
            return True
    return bool(call.get("is_error")) and bool(_ARGUMENT_ERROR_RE.search(call.get("result") or ""))


def _calls_of(trials: list[ObjectiveResult]) -> list[list[dict]]:
    """Each trial's tool calls in order, from its method submission's traces."""
    found = []
    for trial in trials:
        artifacts = trace_artifacts(list(trial.dev_run.submission.artifacts.all()))
        calls = [
            call
            for artifact in artifacts
            for step in (artifact_trace(artifact) or {"steps": []})["steps"]
            for call in step["tool_calls"]
        ]
        if artifacts:
            found.append(calls)
    return found


def _trace_figures(trials: list[ObjectiveResult]) -> dict:
    """Tool calls with argument errors, and code-execution errors the agent
    repaired itself (a later call of the same execution tool that succeeded)."""
    traced = _calls_of(trials)
    calls = [call for trial in traced for call in trial]
    argument_errors = sum(1 for call in calls if _argument_error(call))
    execution_errors = repaired = 0
    for trial in traced:
        for index, call in enumerate(trial):
            if call["name"].lower() not in EXECUTION_TOOLS or not call.get("is_error"):
                continue
            execution_errors += 1
            later = trial[index + 1 :]
            if any(c["name"] == call["name"] and not c.get("is_error") for c in later):
                repaired += 1
    return {
        "n_traced_trials": len(traced),
        "n_tool_calls": len(calls),
        "argument_error_share": argument_errors / len(calls) if calls else None,
        "n_execution_errors": execution_errors,
        "repaired_share": repaired / execution_errors if execution_errors else None,
        "why_empty": _trace_why_empty(traced, calls, execution_errors),
    }


def _trace_why_empty(traced: list, calls: list, execution_errors: int) -> str:
    if not traced:
        return "no trial has a trace"
    if not calls:
        return "the traces hold no tool call"
    return "" if execution_errors else "no code execution failed (nothing to repair)"


# A dev run that ended, with or without a score (a cancelled one is no snapshot).
_DEV_RUN_ENDED = [
    ExperimentStatus.SUCCEEDED,
    ExperimentStatus.FAILED,
    ExperimentStatus.TIMED_OUT,
    ExperimentStatus.COULD_NOT_RUN,
]
TREND_SERIES = ("lines", "runtime_seconds", "dev_score")
_TREND_WHY_EMPTY = {
    "lines": "no dev run's code could be counted",
    "runtime_seconds": "no dev run succeeded (a failed run's time is not the method's)",
    "dev_score": "no dev run gave a score",
}


def _dev_runs(objective: ObjectiveTask, results: list[ObjectiveResult]) -> dict:
    """The ended dev runs of the results' trials on the task's version, per
    (agent id, trial), in the order they ran."""
    runs = (
        ExperimentRun.objects.filter(
            phase=ExperimentPhase.DEV,
            status__in=_DEV_RUN_ENDED,
            task_version=objective.version,
            submission__task_id=objective.task_id,
            submission__agent_id__in={r.agent_id for r in results},
        )
        .select_related("submission")
        .prefetch_related("submission__artifacts")
        .order_by("trial", "created_at", "id")
    )
    found: dict[tuple[int, int], list[ExperimentRun]] = {}
    for run in runs:
        found.setdefault((run.submission.agent_id, run.trial), []).append(run)
    return found


def _trend(
    objective: ObjectiveTask, trials: list[ObjectiveResult], runs: dict[tuple[int, int], list]
) -> dict:
    """Per dev run of the trials (a step: a snapshot of the method's code), its
    logical lines, its runtime and its dev score, with each series' n, first and
    last value."""
    steps = []
    lines_of: dict[int, int] = {}  # per submission: its code is one snapshot
    for trial in trials:
        for step, run in enumerate(runs.get((trial.agent_id, trial.trial), []), start=1):
            succeeded = run.status == ExperimentStatus.SUCCEEDED
            if run.submission_id not in lines_of or objective.is_mlrc:
                lines_of[run.submission_id] = method_lloc(run, objective)[0]
            steps.append(
                {
                    "trial": trial.trial,
                    "step": step,
                    "run": run.pk,
                    "status": run.status,
                    "lines": lines_of[run.submission_id],
                    "runtime_seconds": method_runtime_seconds(run, objective)
                    if succeeded
                    else None,
                    "dev_score": run.score if succeeded else None,
                }
            )
    series = {}
    for key in TREND_SERIES:
        values = [step[key] for step in steps if step[key] is not None]
        series[key] = {
            "n": len(values),
            "first": values[0] if values else None,
            "last": values[-1] if values else None,
            "why_empty": "" if values else _TREND_WHY_EMPTY[key],
        }
    return {
        "n_steps": len(steps),
        "steps": steps,
        "series": series,
        "why_empty": "" if steps else "no ended dev run of these trials on this version",
    }


def objective_analyses(*, objective: ObjectiveTask, idea_source: str | None = None) -> dict:
    """The analyses of the task's current version, per agent and configuration.

    Long because one pass over the task's trials builds every analysis column from the same rows."""
    query = ObjectiveResult.objects.filter(objective=objective, task_version=objective.version)
    if idea_source:
        query = query.filter(idea_source=idea_source)
    results = list(
        query.filter(
            Q(test_run__isnull=True, test_score__isnull=False)
            | ~Q(test_run__status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING])
        )
        .select_related("agent", "dev_run__submission")
        .prefetch_related("dev_run__submission__artifacts")
        .order_by("agent__name", "idea_source", "trial")
    )
    by_agent: dict[tuple[str, str], list[ObjectiveResult]] = {}
    for result in results:
        by_agent.setdefault((result.agent.name, result.idea_source), []).append(result)
    k_max = max((len(trials) for trials in by_agent.values()), default=0)
    dev_runs = _dev_runs(objective, results)
    sign = 1 if objective.higher_is_better else -1
    agents = []
    for (name, source), trials in by_agent.items():
        improvements = [t.relative_improvement for t in trials]
        scored = [t for t in trials if t.test_score is not None]
        best = max(scored, key=lambda t: sign * (t.test_score or 0.0), default=None)
        gain = (
            sign * (best.test_score - objective.baseline_score)
            if best and best.test_score is not None
            else None
        )
        agents.append(
            {
                "agent": name,
                "idea_source": source,
                "trials": len(trials),
                "n_scored_trials": len(scored),
                "best_of_k": _best_of_k(improvements, k_max),
                "best_test_score": best.test_score if best else None,
                "absolute_improvement": gain,
                "percent_improvement": (
                    gain / abs(objective.baseline_score) * 100
                    if gain is not None and objective.baseline_score
                    else None
                ),
                "cost": _cost(trials, best.relative_improvement if best else None),
                "trace": _trace_figures(trials),
                "trend": _trend(objective, trials, dev_runs),
                "why_empty": "" if best else "no trial gave a test score",
            }
        )
    return {
        "task": objective.task.slug,
        "task_version": objective.version,
        "metric": objective.metric,
        "higher_is_better": objective.higher_is_better,
        "baseline_score": objective.baseline_score,
        "human_score": objective.human_score,
        "idea_source": idea_source or None,
        "n_agents": len({row["agent"] for row in agents}),
        "k_max": k_max,
        "agents": agents,
        "environment": environment_state(
            list(objective.environment_requirements or []), objective.environment_python
        ),
        "scoring_forgeable": objective.scoring_forgeable,
        "scoring_check": objective.scoring_check,
        "mlrc_bench": mlrc_bench_analyses(objective=objective, results=results, dev_runs=dev_runs),
    }


def objective_analyses_of_tasks(*, slugs: list[str], idea_source: str | None = None) -> list[dict]:
    """`objective_analyses` of each of these objective tasks, by slug."""
    objectives = ObjectiveTask.objects.select_related("task").filter(task__slug__in=slugs)
    return [
        objective_analyses(objective=objective, idea_source=idea_source)
        for objective in objectives.order_by("task__slug")
    ]
