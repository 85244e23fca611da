"""Ranks that respect ties, and the Pareto frontier of cost against score.

Two agents are compared on the tasks both were judged on, with a paired
bootstrap of the mean Overall difference (tasks resampled; common.stats' seed
policy and resample count): the two-sided p is twice the smaller share of resampled mean
differences on either side of 0. Holm's correction runs across every pair of
the board. An agent's rank is 1 + the number of agents significantly better
than it, so agents the data cannot tell apart share a rank (LMArena's
rank-by-CI); `rank_strict` is the plain position by mean.

The resampled means of every agent on a common task set come out of one
matrix product (`common.stats.resample_counts`), so a board of a hundred
agents on the same tasks costs one product, not one per pair.

Pure computation on plain data; no database.
"""

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Generic, TypeVar

import numpy as np

from common.stats import bootstrap_p, holm_adjust, percentile_interval, resample_counts

K = TypeVar("K", bound=Hashable)
T = TypeVar("T", bound=Hashable)

ALPHA = 0.05
# Fewer common tasks than this and a pair is never called different: below
# six, not even every task going one way is significant for an exact sign
# test (2 / 2^5 > 0.05), while a bootstrap of so few would say p = 0.
MIN_COMMON_TASKS = 6


@dataclass(frozen=True)
class PairedDifference:
    """Mean of `a - b` over the common tasks, its 95% interval and two-sided p."""

    n_tasks: int
    mean: float | None
    interval: tuple[float, float] | None
    p_value: float | None


def paired_difference(a: Mapping[T, float], b: Mapping[T, float]) -> PairedDifference:
    """The paired bootstrap of `a - b` over the keys both have (the compare
    view's figures; the ranks also need `MIN_COMMON_TASKS`)."""
    common = sorted(set(a) & set(b), key=repr)
    if not common:
        return PairedDifference(0, None, None, None)
    diffs = np.array([a[t] - b[t] for t in common], dtype=float)
    if len(common) < 2:
        return PairedDifference(len(common), float(diffs.mean()), None, None)
    means = resample_counts(len(common)) @ diffs / len(common)
    return PairedDifference(
        len(common), float(diffs.mean()), percentile_interval(means), bootstrap_p(means)
    )


@dataclass(frozen=True)
class RankFacts(Generic[K]):
    rank: int
    rank_strict: int
    n_better: int


def _pair_p_values(
    per_task: Mapping[K, Mapping[T, float]],
) -> dict[tuple[K, K], tuple[float, float]]:
    """`{(a, b): (mean of a - b, p)}` for every pair with enough common tasks.
    Pairs sharing one task set share one resampling of it."""
    by_common: dict[frozenset, list[tuple[K, K]]] = defaultdict(list)
    keys = list(per_task)
    for a, b in combinations(keys, 2):
        common = frozenset(per_task[a]) & frozenset(per_task[b])
        if len(common) >= MIN_COMMON_TASKS:
            by_common[common].append((a, b))
    result: dict[tuple[K, K], tuple[float, float]] = {}
    for common, pairs in by_common.items():
        tasks = sorted(common, key=repr)
        agents = sorted({k for pair in pairs for k in pair}, key=keys.index)
        column = {agent: i for i, agent in enumerate(agents)}
        values = np.array([[per_task[agent][t] for agent in agents] for t in tasks], dtype=float)
        means = resample_counts(len(tasks)) @ values / len(tasks)  # (resamples, agents)
        observed = values.mean(axis=0)
        for a, b in pairs:
            difference = means[:, column[a]] - means[:, column[b]]
            mean = float(observed[column[a]] - observed[column[b]])
            result[(a, b)] = (mean, bootstrap_p(difference))
    return result


def tie_aware_ranks(
    per_task: Mapping[K, Mapping[T, float]],
    order: Sequence[K],
    *,
    alpha: float = ALPHA,
) -> dict[K, RankFacts[K]]:
    """Ranks of the agents in `order` (best mean first) from their per-task
    Overall scores: `n_better` agents are better with Holm-adjusted p < alpha."""
    pairs = _pair_p_values(per_task)
    items = list(pairs.items())
    adjusted = holm_adjust([p for _pair, (_mean, p) in items])
    n_better: dict[K, int] = dict.fromkeys(order, 0)
    for ((a, b), (mean, _p)), p_holm in zip(items, adjusted, strict=True):
        if p_holm < alpha and mean != 0:
            n_better[b if mean > 0 else a] += 1
    return {
        key: RankFacts(rank=1 + n_better[key], rank_strict=position, n_better=n_better[key])
        for position, key in enumerate(order, start=1)
    }


def pareto_optimal(points: Mapping[K, tuple[float, float]]) -> set[K]:
    """Of `{key: (cost, score)}`, the keys no other point dominates (no more
    cost and no less score, better in one): the cost-score frontier."""
    frontier = set()
    for key, (cost, score) in points.items():
        dominated = any(
            other_cost <= cost
            and other_score >= score
            and (other_cost < cost or other_score > score)
            for other, (other_cost, other_score) in points.items()
            if other != key
        )
        if not dominated:
            frontier.add(key)
    return frontier
