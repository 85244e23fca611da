"""Statistics computed by another project's formula, under that project's name.

Each function here reproduces one formula of MLRC-Bench (Zhang et al., 2025;
github.com/yunx-z/MLRC-Bench) and its docstring names the file and function it
follows; the site's own measures live with the code that uses them. Pure
functions of numbers: no Django, no database.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

# plot.py: `SUCCESS_THRESHOLD = 5.0` ("Consider success if improvement_perc > 5.0").
MLRC_SUCCESS_THRESHOLD = 5.0
# plot.py, `find_most_recent_8_runs_for_pipeline` and `compute_pass_at_k_data` (`m=8`).
MLRC_TRIALS = 8
# plot.py, `compute_pass_at_k_data`: multi-agent pass@k pools N = 1, 2, 4 of the ideas.
MLRC_POOLED_IDEAS = (1, 2, 4)
# LLM_as_a_Judge.py, `rubric` (its keys, in order) and `validate_json_response` (1-5).
MLRC_JUDGE_DIMENSIONS = (
    "Clarity",
    "Validity",
    "Rigorousness",
    "Innovativeness",
    "Generalizability",
)
MLRC_JUDGE_SCALE = (1, 5)
# plot.py, `plot_correlation_heatmaps`: the objective columns and the names it shows.
MLRC_OBJECTIVE_MEASURES = (
    ("improvement_perc", "Effectiveness"),
    ("relative_runtime", "Efficiency"),
    ("relative_complexity", "Simplicity"),
)


def mlrc_improvement_perc(
    score: float | None, baseline: float | None, *, higher_is_better: bool = True
) -> float | None:
    """MLAgentBench/utils.py, `save_evals`:
    `100 * (score - BASE_PERFORMANCE) / BASE_PERFORMANCE`, where BASE_PERFORMANCE
    is `ALL_BASE_PERFORMANCE[task_name][phase]`: the baseline of the same phase,
    with its sign (no absolute value). MLRC-Bench's `get_score` returns "a single
    number, the higher the better"; for a task of the site whose metric is lower
    is better the margin is taken in the metric's direction (baseline - score),
    which leaves every MLRC-Bench task's number unchanged. The same formula gives
    `relative_runtime` and `relative_complexity`. None where it is undefined."""
    if score is None or baseline is None or baseline == 0:
        return None
    margin = score - baseline if higher_is_better else baseline - score
    return 100 * margin / baseline


def mlrc_success(improvement_perc: float | None) -> bool:
    """plot.py, `compute_success_rates_data`: `r[0] > SUCCESS_THRESHOLD`; a missing
    result is no success."""
    return improvement_perc is not None and improvement_perc > MLRC_SUCCESS_THRESHOLD


def mlrc_pass_at_k(*, n: int, c: int, k: int) -> float:
    """plot.py, `compute_pass_at_k_data` (single agent): with m = n trials of which
    c succeeded on dev, `pass_k = 1.0 - comb(m - c, k) / comb(m, k)`."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass@k needs 0 <= c <= n and k >= 1 (n={n}, c={c}, k={k})")
    if k > n:
        return 1.0 if c > 0 else 0.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mlrc_pass_at_k_pooled(*, successes: Sequence[int], n: int, ideas: int, k: int) -> float:
    """plot.py, `compute_pass_at_k_data` (multi-agent, N ideas pooled): over every
    subset S of N = `ideas` of the ideas (idea i with c_i dev successes in its m = n
    trials), `pass_k = 1 - sum_S prod_{i in S} comb(m - c_i, k) / (comb(len, N) * comb(m, k) ** N)`.
    (MLRC-Bench has four ideas, `comb(4, N)`; here the number of ideas given.)"""
    if not 1 <= ideas <= len(successes):
        raise ValueError(f"cannot pool {ideas} of {len(successes)} ideas")
    if any(not 0 <= c <= n for c in successes) or k < 1:
        raise ValueError(f"pass@k needs 0 <= c <= n and k >= 1 (n={n}, k={k})")
    numerator = 0
    for subset in combinations(range(len(successes)), ideas):
        product = 1
        for index in subset:
            product *= math.comb(n - successes[index], k)  # 0 where m - c_i < k, as upstream
        numerator += product
    denominator = math.comb(len(successes), ideas) * math.comb(n, k) ** ideas
    return 1.0 - numerator / denominator if denominator > 0 else 0.0


@dataclass(frozen=True)
class CostPoint:
    key: str
    avg_cost: float
    avg_sr: float


def mlrc_pareto_front(points: Iterable[CostPoint]) -> list[CostPoint]:
    """plot.py, `compute_pareto_front`: sorted by average cost, each point whose
    success rate is above every cheaper one's (`p["avg_sr"] > max_sr`). Ties in
    cost keep their order (Python's sort is stable, as upstream)."""
    front = []
    best = -1.0
    for point in sorted(points, key=lambda p: p.avg_cost):
        if point.avg_sr > best:
            front.append(point)
            best = point.avg_sr
    return front


def mlrc_cost_point(
    *, key: str, costs: Sequence[float | None], test_successes: Sequence[bool]
) -> CostPoint | None:
    """plot.py, `compute_api_cost_and_success_for_scatter`: `avg_cost` is the mean
    of each trial's `api_cost.json` `total_cost` (`load_api_cost`: a missing
    file counts 0.0), `avg_sr` the mean test success times 100. None without trials."""
    if not costs or not test_successes:
        return None
    cost = sum(value or 0.0 for value in costs) / len(costs)
    return CostPoint(key, cost, sum(1 for s in test_successes if s) / len(test_successes) * 100)


def pearson(pairs: Iterable[tuple[float | None, float | None]]) -> tuple[float | None, int]:
    """(Pearson's r, n) over the pairs where both values are known, as pandas'
    `DataFrame.corr()` (MLRC-Bench's plot.py, `plot_correlation_heatmaps`) pairs
    them; None below two pairs or where one side does not vary (pandas: NaN)."""
    known = [(x, y) for x, y in pairs if x is not None and y is not None]
    if len(known) < 2:
        return None, len(known)
    xs, ys = zip(*known, strict=True)
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return None, len(known)
    from scipy import stats

    return float(stats.pearsonr(xs, ys).statistic), len(known)


def mlrc_calculate_complexity(source: str) -> int | None:
    """MLAgentBench/utils.py, `calculate_complexity`: the number of `ast.stmt`
    nodes of the parsed source (`sum(isinstance(node, ast.stmt) for node in
    ast.walk(tree))`). None for source that does not parse (upstream raises)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return sum(isinstance(node, ast.stmt) for node in ast.walk(tree))
