"""MLRC-Bench's formulas (common/stats.py) on fixed inputs, against numbers
computed here the way MLRC-Bench's plot.py computes them (scipy's comb and
pearsonr, its loops written out)."""

from itertools import combinations

import pytest
from scipy.special import comb
from scipy.stats import pearsonr

from common.stats import (
    MLRC_JUDGE_DIMENSIONS,
    CostPoint,
    mlrc_calculate_complexity,
    mlrc_cost_point,
    mlrc_improvement_perc,
    mlrc_pareto_front,
    mlrc_pass_at_k,
    mlrc_pass_at_k_pooled,
    mlrc_success,
    pearson,
)


def test_pass_at_k_is_the_unbiased_estimator_over_eight_trials():
    # One dev success in eight: pass@1 = 1 - C(7,1)/C(8,1) = 0.125.
    assert mlrc_pass_at_k(n=8, c=1, k=1) == pytest.approx(0.125)
    for c in range(9):
        for k in range(1, 9):
            expected = 1 - comb(8 - c, k, exact=True) / comb(8, k, exact=True)
            assert mlrc_pass_at_k(n=8, c=c, k=k) == pytest.approx(expected)
    assert mlrc_pass_at_k(n=8, c=0, k=8) == 0.0
    assert mlrc_pass_at_k(n=8, c=1, k=8) == 1.0
    with pytest.raises(ValueError):
        mlrc_pass_at_k(n=8, c=9, k=1)


def test_pooled_pass_at_k_follows_plot_py_over_subsets_of_ideas():
    successes = [0, 1, 3, 8]

    def upstream(size: int, k: int) -> float:
        numerator = 0
        for subset in combinations(range(4), size):
            product = 1
            for index in subset:
                c = successes[index]
                if 8 - c < k:
                    product = 0
                    break
                product *= comb(8 - c, k, exact=True)
            numerator += product
        return 1 - numerator / (comb(4, size, exact=True) * comb(8, k, exact=True) ** size)

    for size in (1, 2, 4):
        for k in range(1, 9):
            got = mlrc_pass_at_k_pooled(successes=successes, n=8, ideas=size, k=k)
            assert got == pytest.approx(upstream(size, k))
    # N = 1 is the mean of the single-idea estimates.
    single = sum(mlrc_pass_at_k(n=8, c=c, k=2) for c in successes) / 4
    assert mlrc_pass_at_k_pooled(successes=successes, n=8, ideas=1, k=2) == pytest.approx(single)
    # One idea always succeeding: every pool of four holds it.
    assert mlrc_pass_at_k_pooled(successes=successes, n=8, ideas=4, k=1) == 1.0
    with pytest.raises(ValueError):
        mlrc_pass_at_k_pooled(successes=[1, 2], n=8, ideas=4, k=1)


def test_improvement_perc_divides_by_the_signed_baseline_of_the_phase():
    # save_evals: 100 * (score - base) / base, the sign of the baseline kept.
    assert mlrc_improvement_perc(0.09, 0.08) == pytest.approx(12.5)
    assert mlrc_improvement_perc(-0.5, -0.4) == pytest.approx(100 * (-0.5 + 0.4) / -0.4)
    assert mlrc_improvement_perc(1.0, 0.0) is None and mlrc_improvement_perc(None, 1.0) is None
    # A lower-is-better metric: the margin is taken in its direction.
    assert mlrc_improvement_perc(0.5, 0.6, higher_is_better=False) == pytest.approx(100 / 6)
    assert mlrc_success(5.01) and not mlrc_success(5.0) and not mlrc_success(None)


def test_pareto_front_keeps_each_cheapest_gain_in_success():
    points = [
        CostPoint("a", 2.0, 50.0),
        CostPoint("b", 1.0, 25.0),
        CostPoint("c", 3.0, 40.0),
        CostPoint("d", 0.5, 25.0),
        CostPoint("e", 4.0, 75.0),
    ]
    assert [p.key for p in mlrc_pareto_front(points)] == ["d", "a", "e"]


def test_cost_point_counts_a_missing_cost_file_as_zero():
    point = mlrc_cost_point(
        key="x", costs=[1.0, None, 2.0, None], test_successes=[True, False, False, False]
    )
    assert point == CostPoint("x", 0.75, 25.0)
    assert mlrc_cost_point(key="x", costs=[], test_successes=[]) is None


def test_pearson_pairs_the_known_values_as_pandas_corr_does():
    x = [1, 2, 3, 4, None]
    y = [10.0, 30.0, 20.0, 50.0, 7.0]
    r, n = pearson(zip(x, y, strict=True))
    assert n == 4
    assert r == pytest.approx(pearsonr([1, 2, 3, 4], [10.0, 30.0, 20.0, 50.0]).statistic)
    assert pearson([(1, 2), (1, 3), (1, 4)]) == (None, 3)
    assert pearson([(1, 2)]) == (None, 1)


def test_calculate_complexity_counts_statements_as_mlagentbench_utils_does():
    source = "import os\n\nclass A:\n    def f(self):\n        x = 1\n        return x\n"
    # import, class, def, assign, return.
    assert mlrc_calculate_complexity(source) == 5
    assert mlrc_calculate_complexity("def (:") is None
    assert MLRC_JUDGE_DIMENSIONS == (
        "Clarity",
        "Validity",
        "Rigorousness",
        "Innovativeness",
        "Generalizability",
    )
