"""MLRC-Bench's analyses of one objective task's results (read-only).

Best of k trials (MLRC-Bench's Pass@k): for k = 1..K, the share of the
agent's tasks (here: this one task, n = 1) where the best of its first k
trials beats the baseline; and beside relative improvement to human, the
absolute and percentage improvement over the baseline. Each figure has its
n; an empty one says why.
"""

from __future__ import annotations

from django.db.models import Q

from experiments.models import ExperimentStatus, ObjectiveResult, ObjectiveTask

from .environments import environment_state


def _best_of_k(improvements: list[float | None], k_max: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for k in range(1, k_max + 1):
        first = improvements[:k]
        if len(first) < k:
            rows.append({"k": k, "n": 0, "share": None, "why_empty": f"fewer than {k} trials"})
            continue
        # A trial whose test run gave no score counts as the baseline (0%), as in MLRC-Bench.
        best = max(value if value is not None else 0.0 for value in first)
        rows.append({"k": k, "n": 1, "share": 1.0 if best > 0 else 0.0, "why_empty": ""})
    return rows


def objective_analyses(*, objective: ObjectiveTask) -> dict:
    """The analyses of the task's current version, per agent."""
    results = list(
        ObjectiveResult.objects.filter(objective=objective, task_version=objective.version)
        .filter(
            Q(test_run__isnull=True, test_score__isnull=False)
            | ~Q(test_run__status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING])
        )
        .select_related("agent")
        .order_by("agent__name", "trial")
    )
    by_agent: dict[str, list[ObjectiveResult]] = {}
    for result in results:
        by_agent.setdefault(result.agent.name, []).append(result)
    k_max = max((len(trials) for trials in by_agent.values()), default=0)
    sign = 1 if objective.higher_is_better else -1
    agents = []
    for name, trials in by_agent.items():
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
                "trials": len(trials),
                "best_of_k": _best_of_k(improvements, k_max),
                "best_test_score": best.test_score if best else None,
                "absolute_improvement": gain,
                "percent_improvement": (
                    gain / abs(objective.baseline_score) * 100
                    if gain is not None and objective.baseline_score
                    else None
                ),
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
        "n_agents": len(agents),
        "k_max": k_max,
        "agents": agents,
        "environment": environment_state(list(objective.environment_requirements or [])),
    }
