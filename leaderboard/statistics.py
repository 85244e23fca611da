"""The 95% interval around an agent's Overall score: a percentile bootstrap
over its tasks (tasks are the unit that was sampled from the workshops).

Resampling draws task indices from a generator seeded with a fixed seed and
the number of tasks, so the interval of a given list of scores is the same on
every request and on every worker. Agents with the same number of tasks share
one set of resamples, turned into a count matrix so that the means of all of
them come out of one matrix product.
"""

from collections.abc import Mapping, Sequence

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20250601
CONFIDENCE = 0.95


def _resample_counts(n: int) -> np.ndarray:
    """`(resamples, n)` matrix: how often each task is drawn in each resample."""
    rng = np.random.default_rng([BOOTSTRAP_SEED, n])
    draws = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    flat = (np.arange(BOOTSTRAP_RESAMPLES)[:, None] * n + draws).ravel()
    return np.bincount(flat, minlength=BOOTSTRAP_RESAMPLES * n).reshape(BOOTSTRAP_RESAMPLES, n)


def bootstrap_intervals(
    values_by_key: Mapping[object, Sequence[float]],
) -> dict[object, tuple[float, float] | None]:
    """`{key: (low, high)}` for each list of per-task scores; None under two tasks,
    where resampling says nothing."""
    tail = (1 - CONFIDENCE) / 2 * 100
    result: dict[object, tuple[float, float] | None] = {}
    by_size: dict[int, list[object]] = {}
    for key, values in values_by_key.items():
        if len(values) < 2:
            result[key] = None
        else:
            by_size.setdefault(len(values), []).append(key)
    for n, keys in by_size.items():
        counts = _resample_counts(n)
        matrix = np.array([values_by_key[key] for key in keys], dtype=float).T
        means = counts @ matrix / n
        lows, highs = np.percentile(means, [tail, 100 - tail], axis=0)
        for key, low, high in zip(keys, lows, highs, strict=True):
            result[key] = (float(low), float(high))
    return result


def bootstrap_interval(values: Sequence[float]) -> tuple[float, float] | None:
    return bootstrap_intervals({0: values})[0]
