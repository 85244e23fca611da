"""The site's statistics (common/stats.py): one seed policy and one resample
count for every bootstrap, Spearman with its guard, Holm, Wilson through scipy.
Each rule against a direct computation written out here."""

from typing import TypeVar

import numpy as np
import pytest
from scipy import stats

from common.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    NO_VARIATION,
    TOO_FEW,
    bootstrap_p,
    bootstrap_rng,
    holm_adjust,
    mean_intervals,
    percentile_interval,
    resample_counts,
    resampled_means,
    spearman,
    spearman_interval,
    wilson_interval,
)

T = TypeVar("T")


def known(value: T | None) -> T:
    assert value is not None
    return value


def test_one_seed_policy_the_site_seed_and_the_number_of_units():
    assert np.array_equal(
        bootstrap_rng(7).integers(0, 100, 20),
        np.random.default_rng([BOOTSTRAP_SEED, 7]).integers(0, 100, 20),
    )
    # Another size, or another draw of one computation, is another stream.
    first = bootstrap_rng(7).integers(0, 100, 20)
    assert not np.array_equal(first, bootstrap_rng(8).integers(0, 100, 20))
    assert not np.array_equal(first, bootstrap_rng(7, 1).integers(0, 100, 20))


def test_resample_counts_are_the_seeded_draws_counted():
    counts = resample_counts(5)
    assert counts.shape == (BOOTSTRAP_RESAMPLES, 5)
    assert (counts.sum(axis=1) == 5).all()
    draws = bootstrap_rng(5).integers(0, 5, size=(BOOTSTRAP_RESAMPLES, 5))
    for row in (0, 1, BOOTSTRAP_RESAMPLES - 1):
        assert list(counts[row]) == list(np.bincount(draws[row], minlength=5))
    assert np.array_equal(counts, resample_counts(5))


def test_resampled_means_are_seeded_and_match_the_item_by_item_bootstrap():
    values = [1, 3, 3, 4, 7, 7, 7, 9, 10, 2] * 50

    means = resampled_means(values, 1)

    assert len(means) == BOOTSTRAP_RESAMPLES
    assert np.array_equal(means, resampled_means(values, 1))
    assert not np.array_equal(means, resampled_means(values, 2))
    by_item = resample_counts(len(values)) @ np.array(values) / len(values)
    # Both centre on the mean, with the standard error sd / sqrt(n).
    standard_error = np.std(values) / np.sqrt(len(values))
    for draws in (means, by_item):
        assert draws.mean() == pytest.approx(np.mean(values), abs=standard_error / 5)
        assert draws.std() == pytest.approx(standard_error, rel=0.1)


def test_one_distinct_value_has_no_spread():
    assert set(resampled_means([6.0] * 30)) == {6.0}


def test_percentile_interval_over_the_finite_resamples():
    values = np.array([np.nan, *range(101), np.inf])
    assert percentile_interval(values) == pytest.approx((2.5, 97.5))
    assert percentile_interval(values, confidence=0.5) == pytest.approx((25.0, 75.0))
    assert percentile_interval(np.array([np.nan])) is None


def test_bootstrap_p_is_twice_the_smaller_tail():
    assert bootstrap_p(np.array([1.0, 2.0, 3.0, -1.0])) == pytest.approx(0.5)
    assert bootstrap_p(np.array([1.0, 2.0])) == 0.0
    assert bootstrap_p(np.array([0.0, 0.0])) == 1.0


def test_mean_intervals_match_scipy_and_need_two_values():
    values = np.random.default_rng(3).integers(2, 10, size=40).astype(float)

    intervals = mean_intervals({"a": list(values), "b": [5.0], "c": list(values)})

    reference = stats.bootstrap(
        (values,), np.mean, n_resamples=20000, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    low, high = known(intervals["a"])
    assert low == pytest.approx(reference.low, abs=0.1)
    assert high == pytest.approx(reference.high, abs=0.1)
    # Lists of one length share one resampling: the same values, the same interval.
    assert intervals["c"] == intervals["a"]
    assert intervals["b"] is None
    means = resample_counts(40) @ values / 40
    assert intervals["a"] == pytest.approx(np.percentile(means, [2.5, 97.5]))


def test_spearman_is_scipys_with_its_guard():
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    rho = spearman(x, y)
    expected = stats.spearmanr(x, y)
    assert rho.rho == pytest.approx(expected.statistic)
    assert rho.p_value == pytest.approx(expected.pvalue)
    assert (rho.n, rho.reason) == (5, "")
    assert spearman([1, 2], [2, 1]) == (None, None, 2, TOO_FEW)
    assert spearman([1, 2, 3, 4], [1, 2, 3, 4], min_n=5).reason == TOO_FEW
    assert spearman([1, 1, 1], [1, 2, 3]) == (None, None, 3, NO_VARIATION)
    assert spearman([1, 2, 3], [4, 4, 4]).reason == NO_VARIATION


def test_spearman_interval_is_scipys_paired_bootstrap_without_undefined_resamples():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = np.array([2.0, 1.0, 4.0, 3.0, 6.0, 5.0])

    low, high = known(spearman_interval(x, y))

    # Written out: pairs drawn by the seed policy, rho of each, constant ones left out.
    draws = bootstrap_rng(6).integers(0, 6, size=(BOOTSTRAP_RESAMPLES, 6))
    rhos = [
        stats.spearmanr(x[d], y[d]).statistic
        for d in draws
        if np.ptp(x[d]) > 0 and np.ptp(y[d]) > 0
    ]
    assert (low, high) == pytest.approx(tuple(np.percentile(rhos, [2.5, 97.5])))
    assert -1 <= low <= known(spearman(x, y).rho) <= high <= 1
    assert spearman_interval(x[:2], y[:2]) is None
    assert spearman_interval([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None


def test_holm_is_the_step_down_adjustment_in_the_input_order():
    # Sorted 0.01, 0.02, 0.04, 0.3: times 4, 3, 2, 1, never below the one before.
    assert holm_adjust([0.04, 0.01, 0.3, 0.02]) == pytest.approx([0.08, 0.04, 0.3, 0.06])
    assert holm_adjust([0.5, 0.6]) == [1.0, 1.0]
    assert holm_adjust([]) == []


def test_wilson_is_scipys_and_stays_in_the_unit_interval():
    z = stats.norm.ppf(0.975)
    for k, n in [(8, 10), (2, 3), (5, 17)]:
        # The score interval, by hand.
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        assert wilson_interval(k, n) == pytest.approx((centre - half, centre + half))
    low, high = known(wilson_interval(0, 10))
    assert low == 0.0 and 0 < high < 0.35
    assert known(wilson_interval(10, 10))[1] == 1.0
    assert wilson_interval(0, 0) is None
    assert known(wilson_interval(8, 10, confidence=0.99))[0] < known(wilson_interval(8, 10))[0]
