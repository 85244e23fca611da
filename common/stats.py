"""The site's statistics, one implementation of each, and MLRC-Bench's formulas.

Two kinds of function live here, pure functions of numbers (no Django, no database):

- The site's own measures, each written once and used by every app:
  Spearman's rho with its guard (`spearman`), percentile bootstrap intervals
  and p-values with one seed policy and one resample count
  (`BOOTSTRAP_RESAMPLES`, `bootstrap_rng`), Holm's correction (`holm_adjust`)
  and Wilson intervals (`wilson_interval`, through scipy).
- MLRC-Bench's formulas (Zhang et al., 2025; github.com/yunx-z/MLRC-Bench),
  under MLRC-Bench's names (`mlrc_*`); each docstring names the file and
  function it follows, and they keep MLRC-Bench's formulas exactly.

scipy takes about a second to import: it is imported inside the functions that
need it, so a process that never computes a statistic never pays for it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import NamedTuple, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)
# A confidence interval: (low, high).
Interval = tuple[float, float]
CONFIDENCE = 0.95

# --- The bootstrap: one seed policy, one resample count ---------------------

# Every bootstrap of the site draws this many resamples: enough for a 95%
# percentile interval (Efron and Tibshirani ask 1,000-2,000), and a two-sided p
# resolves 0.001, below Holm's threshold across a board's pairs (0.05 / 45 for
# ten agents; a hundred agents need no resample to cross at any count). The cost
# grows in proportion, and the board's ranks and intervals are the heaviest part
# of its cold compute (10,000 made it about five times slower).
BOOTSTRAP_RESAMPLES = 2_000
# The seed policy: a bootstrap over n units draws from a generator seeded by this
# seed and n (and, where one computation draws more than once, the draw's
# number), so the same data give the same interval on every request and worker.
BOOTSTRAP_SEED = 20250601


def bootstrap_rng(n: int, *stream: int) -> np.random.Generator:
    """The generator of a bootstrap over `n` units (the seed policy above);
    `stream` tells apart the draws of one computation (1, 2, ...)."""
    return np.random.default_rng([BOOTSTRAP_SEED, n, *stream])


def resample_counts(n: int, *stream: int) -> np.ndarray:
    """`(BOOTSTRAP_RESAMPLES, n)` integer matrix: how often each of `n` items
    is drawn (with replacement) in each resample. The means of many value
    vectors of the same length then come out of one matrix product
    (`counts @ values / n`) instead of a loop over resamples."""
    draws = bootstrap_rng(n, *stream).integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    flat = (np.arange(BOOTSTRAP_RESAMPLES)[:, None] * n + draws).ravel()
    return np.bincount(flat, minlength=BOOTSTRAP_RESAMPLES * n).reshape(BOOTSTRAP_RESAMPLES, n)


def resampled_means(values: Sequence[float], *stream: int) -> np.ndarray:
    """The means of the bootstrap resamples of `values`, drawn as counts of
    its distinct values (a multinomial with the empirical shares): the same
    distribution as drawing the items one by one, at a cost that grows with
    the number of distinct values (scores: a handful), not with `len(values)`
    (which is why scipy.stats.bootstrap, item by item, does not fit here)."""
    distinct, counts = np.unique(np.asarray(values, dtype=float), return_counts=True)
    n = int(counts.sum())
    drawn = bootstrap_rng(n, *stream).multinomial(n, counts / n, size=BOOTSTRAP_RESAMPLES)
    return np.asarray(drawn @ distinct / n, dtype=float)


def percentile_interval(values: np.ndarray, *, confidence: float = CONFIDENCE) -> Interval | None:
    """The percentile interval of a bootstrap distribution, over its finite
    values (a resample where the statistic is undefined says nothing); None
    when none is finite."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_p(differences: np.ndarray) -> float:
    """The two-sided percentile-bootstrap p of a resampled difference: twice
    the smaller share of resamples on either side of 0 (0 when none crossed it)."""
    below, above = float(np.mean(differences <= 0)), float(np.mean(differences >= 0))
    return min(1.0, 2 * min(below, above))


def mean_intervals(
    values_by_key: Mapping[K, Sequence[float]], *, confidence: float = CONFIDENCE
) -> dict[K, Interval | None]:
    """`{key: (low, high)}`: the percentile bootstrap interval of the mean of
    each list of values; None under two values, where resampling says nothing.
    Lists of the same length share one set of resamples (`resample_counts`)."""
    tail = (1 - confidence) / 2 * 100
    result: dict[K, Interval | None] = {}
    by_size: dict[int, list[K]] = {}
    for key, values in values_by_key.items():
        if len(values) < 2:
            result[key] = None
        else:
            by_size.setdefault(len(values), []).append(key)
    for n, keys in by_size.items():
        matrix = np.array([values_by_key[key] for key in keys], dtype=float).T
        means = resample_counts(n) @ matrix / n
        lows, highs = np.percentile(means, [tail, 100 - tail], axis=0)
        for key, low, high in zip(keys, lows, highs, strict=True):
            result[key] = (float(low), float(high))
    return result


# --- Spearman's rho, with its guard ------------------------------------------

# Below three pairs a rank correlation says nothing.
SPEARMAN_MIN_N = 3
# Why a `Spearman` has no rho.
TOO_FEW = "too few"
NO_VARIATION = "no variation"


class Spearman(NamedTuple):
    """Spearman's rho and its p over `n` pairs; where it is undefined both are
    None and `reason` says why (`TOO_FEW`: under `min_n` pairs; `NO_VARIATION`:
    one side is constant). No NaN ever comes out."""

    rho: float | None
    p_value: float | None
    n: int
    reason: str = ""


def _finite(value: float) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def spearman(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, min_n: int = SPEARMAN_MIN_N
) -> Spearman:
    """Spearman's rho between paired `x` and `y` (scipy.stats.spearmanr),
    guarded: None below `min_n` pairs or where either side does not vary."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(xs)
    if n < max(min_n, 2):
        return Spearman(None, None, n, TOO_FEW)
    if np.ptp(xs) == 0 or np.ptp(ys) == 0:
        return Spearman(None, None, n, NO_VARIATION)
    from scipy import stats

    result = stats.spearmanr(xs, ys)
    rho = _finite(result.statistic)
    if rho is None:
        return Spearman(None, None, n, NO_VARIATION)
    return Spearman(rho, _finite(result.pvalue), n)


def _spearman_along(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's rho of each row (vectorized for scipy.stats.bootstrap); NaN
    for a row where one side is constant."""
    from scipy import stats

    rx = stats.rankdata(x, axis=axis)
    ry = stats.rankdata(y, axis=axis)
    rx -= rx.mean(axis=axis, keepdims=True)
    ry -= ry.mean(axis=axis, keepdims=True)
    denominator = np.sqrt((rx * rx).sum(axis=axis) * (ry * ry).sum(axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((rx * ry).sum(axis=axis) / denominator)


def spearman_interval(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    min_n: int = SPEARMAN_MIN_N,
    confidence: float = CONFIDENCE,
) -> Interval | None:
    """The percentile bootstrap interval of Spearman's rho, pairs resampled
    (scipy.stats.bootstrap, the seed policy above); resamples where one side is
    constant are left out; None below `min_n` pairs or when every resample is."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(xs)
    if n < max(min_n, 2):
        return None
    import warnings

    from scipy import stats

    with warnings.catch_warnings():
        # The interval is taken here, over the defined resamples only.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            (xs, ys),
            _spearman_along,
            paired=True,
            vectorized=True,
            n_resamples=BOOTSTRAP_RESAMPLES,
            method="percentile",
            rng=bootstrap_rng(n),
        )
    return percentile_interval(result.bootstrap_distribution, confidence=confidence)


# --- Multiple comparisons and proportions -----------------------------------


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (family-wise error), in the input order.
    (scipy's `false_discovery_control` has Benjamini-Hochberg only.)"""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def wilson_interval(successes: int, n: int, *, confidence: float = CONFIDENCE) -> Interval | None:
    """The Wilson score interval of `successes` out of `n` (scipy's
    `binomtest(...).proportion_ci(method="wilson")`); None for n = 0. Unlike
    the normal approximation it stays inside [0, 1] and is not empty at 0 or
    n, which matters for the 10 tasks of a benchmark."""
    if n <= 0:
        return None
    from scipy import stats

    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))


# --- MLRC-Bench's formulas ---------------------------------------------------

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
