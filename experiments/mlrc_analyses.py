"""MLRC-Bench's analyses of one objective task, computed as MLRC-Bench computes
them (its `plot.py` and `MLAgentBench/utils.py`; the formulas are in
`common/stats.py`, each naming its upstream function).

A trial here is MLRC-Bench's run: one agent, one configuration (the method's
idea source), one trial number; its dev runs are MLRC-Bench's dev entries of
`idea_evals.json` and its test run the one test entry. Read-only.

Where the site differs from what MLRC-Bench can know, it says so in the
answer: the dev baseline is the organiser's (`--dev-baseline-score`) or the
one the forged-label check measured at import; MLRC-Bench's per-phase baseline
runtime is the task's one `baseline_runtime_seconds`.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import F

from common.stats import (
    MLRC_POOLED_IDEAS,
    MLRC_SUCCESS_THRESHOLD,
    MLRC_TRIALS,
    CostPoint,
    mlrc_calculate_complexity,
    mlrc_cost_point,
    mlrc_improvement_perc,
    mlrc_pareto_front,
    mlrc_pass_at_k,
    mlrc_pass_at_k_pooled,
    mlrc_success,
)
from experiments.models import (
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
)
from submissions.models import Submission

from . import mlrc

# MLRC-Bench's runs write `env_log/api_cost.json` ({"total_cost": USD}); an
# archive may hold it at any depth.
API_COST_FILE = "api_cost.json"
# MLRC-Bench's multi-agent pipeline: ideas from Chain-of-Ideas, one per run
# folder `TASK--IDX--MODEL`; here one configuration per idea (coi, coi-1, coi.2 ...).
CHAIN_OF_IDEAS_PREFIX = "coi"
SOURCES = {
    "improvement_perc": "MLAgentBench/utils.py save_evals",
    "success": "plot.py compute_success_rates_data (improvement_perc > 5.0)",
    "pass_at_k": "plot.py compute_pass_at_k_data",
    "complexity": "MLAgentBench/utils.py calculate_complexity",
    "cost": "plot.py compute_api_cost_and_success_for_scatter, load_api_cost",
    "pareto_front": "plot.py compute_pareto_front",
    "idea_pooling": "plot.py compute_pass_at_k_data (multi-agent, N = 1, 2, 4)",
}


@dataclass
class Trial:
    agent: str
    agent_id: int
    idea_source: str
    trial: int
    dev_scores: list[float] = field(default_factory=list)
    result: ObjectiveResult | None = None
    submission: Submission | None = None

    @classmethod
    def of_result(cls, result: ObjectiveResult) -> Trial:
        """The trial whose best dev run `result` evaluated on test (its dev scores
        not yet read)."""
        return cls(
            agent=result.agent.name,
            agent_id=result.agent_id,
            idea_source=result.idea_source,
            trial=result.trial,
            result=result,
            submission=result.dev_run.submission,
        )


def methods_complexity(files: list[tuple[str, str]]) -> int | None:
    """MLRC-Bench's `calculate_complexity` summed over a method's Python files
    (its `methods/*.py`); None when none parses."""
    counts = [
        mlrc_calculate_complexity(source)
        for path, source in files
        if path.startswith(f"{mlrc.METHODS_FOLDER}/") and path.endswith(".py")
    ]
    known = [count for count in counts if count is not None]
    return sum(known) if known else None


def _submission_files(submission: Submission, *, suffix: str) -> list[tuple[str, str]]:
    files = []
    for artifact in submission.artifacts.all():
        if not artifact.path.endswith(suffix):
            continue
        with contextlib.suppress(OSError), artifact.file.open("rb") as handle:
            files.append((artifact.path, handle.read(1 << 20).decode("utf-8", errors="replace")))
    return files


def _task_methods(objective: ObjectiveTask) -> list[tuple[str, str]]:
    folder = Path(objective.dev_data_dir) / mlrc.METHODS_FOLDER
    files = []
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        with contextlib.suppress(OSError):
            files.append((f"{mlrc.METHODS_FOLDER}/{path.name}", path.read_text(errors="replace")))
    return files


def api_cost_of(submission: Submission) -> float | None:
    """The trial's `api_cost.json` `total_cost`, None without the file (MLRC-Bench's
    `load_api_cost` then counts 0.0; the answer says how many trials had one)."""
    for path, text in _submission_files(submission, suffix=API_COST_FILE):
        if path.rsplit("/", 1)[-1] != API_COST_FILE:
            continue
        try:
            total = float(json.loads(text).get("total_cost", 0.0))
        except (ValueError, TypeError, AttributeError):
            return None
        return total if math.isfinite(total) else None
    return None


def _mean_std(values: list[float]) -> dict[str, float | None]:
    """plot.py, `compute_average_metrics_data.mean_std`: mean and `np.std(ddof=1)`."""
    if not values:
        return {"mean": None, "std": None, "n": 0}
    std = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": statistics.fmean(values), "std": std, "n": len(values)}


def _trial_row(trial: Trial, objective: ObjectiveTask, base_complexity: int | None) -> dict:
    dev_baseline = objective.dev_baseline_score
    direction = objective.higher_is_better
    dev = [
        mlrc_improvement_perc(score, dev_baseline, higher_is_better=direction)
        for score in trial.dev_scores
    ]
    dev_known = [value for value in dev if value is not None]
    result = trial.result
    test_score = result.test_score if result is not None else None
    test = mlrc_improvement_perc(test_score, objective.baseline_score, higher_is_better=direction)
    runtime = result.runtime_seconds if result is not None else None
    complexity = (
        methods_complexity(_submission_files(trial.submission, suffix=".py"))
        if trial.submission is not None
        else None
    )
    cost = api_cost_of(trial.submission) if trial.submission is not None else None
    return {
        "agent": trial.agent,
        "idea_source": trial.idea_source,
        "trial": trial.trial,
        "n_dev_scores": len(trial.dev_scores),
        # plot.py `get_dev_improvement_success`: any dev entry above the threshold.
        "best_dev_improvement_perc": max(dev_known) if dev_known else None,
        "dev_success": any(mlrc_success(value) for value in dev_known),
        "test_score": test_score,
        "test_improvement_perc": test,
        "test_success": mlrc_success(test),
        "runtime": runtime,
        "relative_runtime": mlrc_improvement_perc(runtime, objective.baseline_runtime_seconds),
        "method_complexity": complexity,
        "base_complexity": base_complexity,
        "relative_complexity": mlrc_improvement_perc(complexity, base_complexity),
        "api_cost_usd": cost,
        "submission": trial.submission.pk if trial.submission is not None else None,
        "scoring_forgeable": objective.scoring_forgeable,
    }


def _configuration(agent: str, source: str, rows: list[dict]) -> dict:
    """One agent and configuration over its last `MLRC_TRIALS` trials (MLRC-Bench:
    `find_most_recent_8_runs_for_pipeline`; m stays 8 with fewer, as upstream)."""
    rows = sorted(rows, key=lambda r: r["trial"])[-MLRC_TRIALS:]
    successes = sum(1 for row in rows if row["dev_success"])
    tested = [row for row in rows if row["test_score"] is not None]
    point = mlrc_cost_point(
        key=f"{agent}/{source}",
        costs=[row["api_cost_usd"] for row in rows],
        test_successes=[row["test_success"] for row in rows],
    )
    return {
        "agent": agent,
        "idea_source": source,
        "n_trials": len(rows),
        "n": MLRC_TRIALS,
        "dev_successes": successes,
        "pass_at_k": [
            {"k": k, "value": mlrc_pass_at_k(n=MLRC_TRIALS, c=successes, k=k)}
            for k in range(1, MLRC_TRIALS + 1)
        ],
        # plot.py `compute_success_rates_data`: mean x 100 over the runs (no result: 0).
        "dev_success_rate": sum(r["dev_success"] for r in rows) / len(rows) * 100,
        "test_success_rate": sum(r["test_success"] for r in rows) / len(rows) * 100,
        # plot.py `compute_average_metrics_data` (dev): each run's best dev improvement_perc.
        "dev_improvement_perc": _mean_std(
            [
                r["best_dev_improvement_perc"]
                for r in rows
                if r["best_dev_improvement_perc"] is not None
            ]
        ),
        # plot.py `compute_average_metrics_data` (test): the runs with a test result.
        "test_improvement_perc": _mean_std(
            [r["test_improvement_perc"] for r in tested if r["test_improvement_perc"] is not None]
        ),
        "relative_runtime": _mean_std(
            [r["relative_runtime"] for r in tested if r["relative_runtime"] is not None]
        ),
        "relative_complexity": _mean_std(
            [r["relative_complexity"] for r in tested if r["relative_complexity"] is not None]
        ),
        "mean_api_cost_usd": point.avg_cost if point else None,
        "n_api_cost_files": sum(1 for r in rows if r["api_cost_usd"] is not None),
        "trials": rows,
    }


def _idea_pooling(configurations: list[dict]) -> list[dict]:
    """Per agent, its Chain-of-Ideas configurations (one per idea) pooled N at a time."""
    by_agent: dict[str, list[dict]] = {}
    for configuration in configurations:
        if configuration["idea_source"].startswith(CHAIN_OF_IDEAS_PREFIX):
            by_agent.setdefault(configuration["agent"], []).append(configuration)
    answer = []
    for agent, ideas in sorted(by_agent.items()):
        successes = [idea["dev_successes"] for idea in ideas]
        pools = []
        for size in MLRC_POOLED_IDEAS:
            if size > len(successes):
                pools.append(
                    {"ideas": size, "pass_at_k": [], "why_empty": f"fewer than {size} ideas"}
                )
                continue
            values = [
                {
                    "k": k,
                    "value": mlrc_pass_at_k_pooled(
                        successes=successes, n=MLRC_TRIALS, ideas=size, k=k
                    ),
                }
                for k in range(1, MLRC_TRIALS + 1)
            ]
            pools.append({"ideas": size, "pass_at_k": values, "why_empty": ""})
        answer.append(
            {
                "agent": agent,
                "idea_sources": [idea["idea_source"] for idea in ideas],
                "dev_successes": successes,
                "pools": pools,
            }
        )
    return answer


def _trials_of(
    objective: ObjectiveTask, results: list[ObjectiveResult], dev_runs: dict
) -> list[Trial]:
    trials: dict[tuple[int, int], Trial] = {}
    for result in results:
        trials[(result.agent_id, result.trial)] = Trial.of_result(result)
    for (agent_id, number), runs in dev_runs.items():
        trial = trials.get((agent_id, number))
        if trial is None:
            continue
        trial.dev_scores = [
            float(run.score)
            for run in runs
            if run.status == ExperimentStatus.SUCCEEDED and run.score is not None
        ]
    return list(trials.values())


def mlrc_bench_analyses(
    *,
    objective: ObjectiveTask,
    results: list[ObjectiveResult],
    dev_runs: dict[tuple[int, int], list[ExperimentRun]],
) -> dict:
    """MLRC-Bench's Tables 1-2, Figure 3 (Pass@k, with idea pooling) and its cost
    scatter with Pareto front, for one task's trials (`results`, with their dev
    runs by (agent id, trial))."""
    base_complexity = methods_complexity(_task_methods(objective))
    rows = [
        _trial_row(trial, objective, base_complexity)
        for trial in _trials_of(objective, results, dev_runs)
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["agent"], row["idea_source"]), []).append(row)
    configurations = [
        _configuration(agent, source, group) for (agent, source), group in sorted(groups.items())
    ]
    points = [
        CostPoint(
            f"{c['agent']}/{c['idea_source']}", c["mean_api_cost_usd"], c["test_success_rate"]
        )
        for c in configurations
        if c["mean_api_cost_usd"] is not None
    ]
    return {
        "label": "MLRC-Bench's analyses, by MLRC-Bench's formulas",
        "sources": SOURCES,
        "success_threshold_percent": MLRC_SUCCESS_THRESHOLD,
        "n": MLRC_TRIALS,
        "dev_baseline_score": objective.dev_baseline_score,
        "test_baseline_score": objective.baseline_score,
        "baseline_runtime_seconds": objective.baseline_runtime_seconds,
        "base_complexity": base_complexity,
        "why_no_dev_improvement": (
            ""
            if objective.dev_baseline_score is not None
            else "the task's dev baseline score is unknown (import it with "
            "--dev-baseline-score, or let the forged-label check measure it): "
            "dev improvement_perc, dev success and Pass@k need it"
        ),
        "scoring_forgeable": objective.scoring_forgeable,
        "configurations": configurations,
        "cost_pareto_front": [
            {"configuration": p.key, "mean_api_cost_usd": p.avg_cost, "test_success_rate": p.avg_sr}
            for p in mlrc_pareto_front(points)
        ],
        "idea_pooling": _idea_pooling(configurations),
    }


def mlrc_test_measures() -> list[dict]:
    """Each trial evaluated on test (every objective task's current version) with
    the objective columns MLRC-Bench correlates with its judges' ratings (plot.py,
    `gather_test_correlation_data`): test improvement_perc, relative_runtime and
    relative_complexity, by the trial's method submission."""
    results = (
        ObjectiveResult.objects.filter(
            test_score__isnull=False, task_version=F("objective__version")
        )
        .select_related("objective__task", "agent", "dev_run__submission")
        .prefetch_related("dev_run__submission__artifacts")
        .order_by("objective__task__slug", "agent__name", "trial")
    )
    base: dict[int, int | None] = {}
    answer = []
    for result in results:
        objective = result.objective
        if objective.pk not in base:
            base[objective.pk] = methods_complexity(_task_methods(objective))
        row = _trial_row(Trial.of_result(result), objective, base[objective.pk])
        answer.append(
            {
                "task": objective.task.slug,
                "submission": result.dev_run.submission_id,
                "improvement_perc": row["test_improvement_perc"],
                "relative_runtime": row["relative_runtime"],
                "relative_complexity": row["relative_complexity"],
            }
        )
    return answer


def mlrc_pass_at_k_of_agents(*, idea_source: str | None = None) -> dict[int, dict]:
    """Per agent (by id), MLRC-Bench's Pass@k averaged over its tasks, as plot.py's
    `compute_pass_at_k_data` averages one LM and pipeline over its tasks ("Average
    Over All Tasks"): per task c = the trials (its last 8) whose best dev
    improvement_perc exceeds 5%, pass@k = 1 - C(8-c, k)/C(8, k). A task without a
    dev baseline cannot count (`n_tasks` says how many did). Two queries."""
    results = ObjectiveResult.objects.filter(task_version=F("objective__version"))
    if idea_source:
        results = results.filter(idea_source=idea_source)
    trials: dict[tuple[int, int], set[int]] = {}
    baselines: dict[int, tuple[float | None, bool]] = {}
    for agent_id, task_id, number, dev_base, higher in results.values_list(
        "agent_id",
        "objective__task_id",
        "trial",
        "objective__dev_baseline_score",
        "objective__higher_is_better",
    ):
        trials.setdefault((agent_id, task_id), set()).add(number)
        baselines[task_id] = (dev_base, higher)
    dev_runs = ExperimentRun.objects.filter(
        phase=ExperimentPhase.DEV,
        status=ExperimentStatus.SUCCEEDED,
        score__isnull=False,
        task_version=F("submission__task__objective__version"),
        submission__agent_id__in={agent for agent, _ in trials},
        submission__task_id__in=set(baselines),
    ).values_list("submission__agent_id", "submission__task_id", "trial", "score")
    succeeded: set[tuple[int, int, int]] = set()
    for agent_id, task_id, number, score in dev_runs:
        base, higher = baselines[task_id]
        if mlrc_success(mlrc_improvement_perc(score, base, higher_is_better=higher)):
            succeeded.add((agent_id, task_id, number))
    curves: dict[int, list[list[float]]] = {}
    for (agent_id, task_id), numbers in trials.items():
        if baselines[task_id][0] is None:
            continue
        last = sorted(numbers)[-MLRC_TRIALS:]
        c = sum(1 for number in last if (agent_id, task_id, number) in succeeded)
        curves.setdefault(agent_id, []).append(
            [mlrc_pass_at_k(n=MLRC_TRIALS, c=c, k=k) for k in range(1, MLRC_TRIALS + 1)]
        )
    return {
        agent_id: {
            "n_tasks": len(rows),
            "pass_at_k": [
                {"k": k, "value": sum(row[k - 1] for row in rows) / len(rows)}
                for k in range(1, MLRC_TRIALS + 1)
            ],
        }
        for agent_id, rows in curves.items()
    }
