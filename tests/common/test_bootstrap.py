"""Bootstrap means drawn as counts of distinct values: the same distribution as
drawing the items one by one, seeded."""

import numpy as np
import pytest

from common.bootstrap import resample_counts, resampled_means


def test_resampled_means_are_seeded_and_match_the_item_by_item_bootstrap():
    values = [1, 3, 3, 4, 7, 7, 7, 9, 10, 2] * 50

    means = resampled_means(values, resamples=4000, seed=[1, 2])

    assert np.array_equal(means, resampled_means(values, resamples=4000, seed=[1, 2]))
    assert not np.array_equal(means, resampled_means(values, resamples=4000, seed=[1, 3]))
    by_item = resample_counts(len(values), resamples=4000, seed=7) @ np.array(values) / len(values)
    # Both centre on the mean, with the standard error sd / sqrt(n).
    standard_error = np.std(values) / np.sqrt(len(values))
    for draws in (means, by_item):
        assert draws.mean() == pytest.approx(np.mean(values), abs=standard_error / 5)
        assert draws.std() == pytest.approx(standard_error, rel=0.1)


def test_one_distinct_value_has_no_spread():
    assert set(resampled_means([6.0] * 30, resamples=100, seed=0)) == {6.0}
