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
from experiments.models import ExperimentRun, ExperimentStatus, ObjectiveResult, ObjectiveTask
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
        trials[(result.agent_id, result.trial)] = Trial(
            agent=result.agent.name,
            agent_id=result.agent_id,
            idea_source=result.idea_source,
            trial=result.trial,
            result=result,
            submission=result.dev_run.submission,
        )
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
