"""Percentile bootstrap intervals of means, all resamples in one matrix product.

Resampling draws indices from a generator with a fixed seed, so the interval
of a given list of values is the same on every request and on every worker.
The draws are turned into a count matrix (how often each item is drawn in
each resample), so the means of many value vectors of the same length come
out of one matrix product instead of a loop over resamples.
"""

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


def resample_counts(n: int, *, resamples: int, seed: int | Sequence[int]) -> np.ndarray:
    """`(resamples, n)` integer matrix: how often each of `n` items is drawn
    (with replacement) in each resample; the same seed draws the same."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    flat = (np.arange(resamples)[:, None] * n + draws).ravel()
    return np.bincount(flat, minlength=resamples * n).reshape(resamples, n)


def resampled_means(
    values: Sequence[float], *, resamples: int, seed: int | Sequence[int]
) -> np.ndarray:
    """The means of `resamples` bootstrap resamples of `values`, drawn as counts
    of its distinct values (a multinomial with the empirical shares): the same
    distribution as drawing the items one by one, at a cost that grows with the
    number of distinct values (scores: a handful), not with `len(values)`."""
    distinct, counts = np.unique(np.asarray(values, dtype=float), return_counts=True)
    n = int(counts.sum())
    rng = np.random.default_rng(seed)
    drawn = rng.multinomial(n, counts / n, size=resamples)
    return np.asarray(drawn @ distinct / n, dtype=float)


def mean_intervals(
    values_by_key: Mapping[K, Sequence[float]],
    *,
    resamples: int,
    seed: int,
    confidence: float = 0.95,
) -> dict[K, tuple[float, float] | None]:
    """`{key: (low, high)}`: the percentile interval of the mean of each list
    of values; None under two values, where resampling says nothing. Lists of
    the same length share one set of resamples (seeded by `seed` and the length)."""
    tail = (1 - confidence) / 2 * 100
    result: dict[K, tuple[float, float] | None] = {}
    by_size: dict[int, list[K]] = {}
    for key, values in values_by_key.items():
        if len(values) < 2:
            result[key] = None
        else:
            by_size.setdefault(len(values), []).append(key)
    for n, keys in by_size.items():
        counts = resample_counts(n, resamples=resamples, seed=[seed, n])
        matrix = np.array([values_by_key[key] for key in keys], dtype=float).T
        means = counts @ matrix / n
        lows, highs = np.percentile(means, [tail, 100 - tail], axis=0)
        for key, low, high in zip(keys, lows, highs, strict=True):
            result[key] = (float(low), float(high))
    return result
