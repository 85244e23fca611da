"""Agreement between expert reviewers and the LLM judges, per rubric dimension.

The question of the MLR-Bench paper: is an LLM judge as close to a human as
two humans are to each other? For one dimension:

- human-human gaps: for every submission, for every pair of distinct reviewers
  who both submitted, |h_i - h_j|;
- human-LLM gaps: for every submitted human review of a submission that has an
  LLM stage score, |h - llm|;
- `scipy.stats.mannwhitneyu(human_human, human_llm, alternative="two-sided")`
  with both counts, the mean and median of each group and the rank-biserial
  correlation `2U / (n_hh * n_hl) - 1` (positive: human-human gaps tend to be
  larger than human-LLM gaps, i.e. the LLM is the closer one);
- because a test that finds no difference does not show agreement: ordinal
  Krippendorff's alpha among the humans and among the humans plus the LLM,
  Spearman's rho between each paper's human mean and its LLM score, 95%
  bootstrap intervals (papers resampled, common.stats' seed policy and count)
  of the two mean gaps and of their difference, and Holm-corrected p-values
  across dimensions (common.stats).

Below the minimum amount of data a statistic is None and `unavailable` says
why; no NaN ever leaves this module. Everything here is pure computation on
plain Python data, so it can be checked against a direct scipy computation.
"""

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from math import isfinite
from types import ModuleType
from typing import NamedTuple, SupportsFloat

import numpy as np

from common.stats import (
    TOO_FEW,
    Interval,
    holm_adjust,
    percentile_interval,
    resample_counts,
    spearman,
)

MIN_GAPS_FOR_TEST = 3
MIN_PAPERS_FOR_SPEARMAN = 3
MIN_PAPERS_FOR_BOOTSTRAP = 3
HISTOGRAM_BIN_WIDTH = 1.0


@dataclass(frozen=True)
class DimensionAgreement:
    """The statistics of one dimension. A figure is None below the minimum
    amount of data, and `unavailable` maps its field name to the reason. The
    field order is the order of the API's and the page's columns."""

    dimension: str
    n_papers: int
    n_reviews: int
    n_papers_with_llm: int
    n_human_human: int
    n_human_llm: int
    mean_abs_diff_human_human: float | None
    median_abs_diff_human_human: float | None
    mean_abs_diff_human_llm: float | None
    median_abs_diff_human_llm: float | None
    u_statistic: float | None
    p_value: float | None
    rank_biserial: float | None
    krippendorff_alpha_humans: float | None
    krippendorff_alpha_humans_llm: float | None
    spearman_rho: float | None
    spearman_p_value: float | None
    n_papers_spearman: int
    ci_mean_abs_diff_human_human: Interval | None
    ci_mean_abs_diff_human_llm: Interval | None
    ci_mean_abs_diff_difference: Interval | None
    p_value_holm: float | None
    unavailable: Mapping[str, str]


@dataclass(frozen=True)
class GapHistogram:
    """Share of each group's gaps per bin; `edges` has one more entry than the shares."""

    edges: list[float]
    human_human: list[float]
    human_llm: list[float]


@dataclass(frozen=True)
class DimensionPlot:
    histogram: GapHistogram
    # (human mean, LLM score, how many papers sit on that point), sorted.
    scatter: list[tuple[float, float, int]]


class HumanScore(NamedTuple):
    """One submitted score; plain tuples of the same shape are accepted too."""

    paper: int
    reviewer: int
    dimension: str
    score: float


# scipy and krippendorff take about a second to import: loaded on the first
# agreement computed, not when the app (its admin, its services) loads.
def _stats() -> ModuleType:
    from scipy import stats

    return stats


def _krippendorff() -> ModuleType:
    import krippendorff

    return krippendorff


def _number(value: SupportsFloat | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if isfinite(number) else None


def _pairable_alpha(value_counts: np.ndarray, domain: np.ndarray) -> tuple[float | None, str]:
    """Ordinal alpha from a units x values count matrix, or None and the reason."""
    pairable = value_counts[value_counts.sum(axis=1) >= 2]
    if len(pairable) == 0:
        return None, "no paper has two scores to compare"
    if np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None, "every compared score is the same value, so alpha is undefined"
    alpha = _number(
        _krippendorff().alpha(
            value_counts=pairable, value_domain=domain, level_of_measurement="ordinal"
        )
    )
    if alpha is None:
        return None, "alpha is undefined on these scores"
    return alpha, ""


def _bootstrap_weights(n_papers: int, cache: dict[int, np.ndarray]) -> np.ndarray:
    """`BOOTSTRAP_RESAMPLES x n_papers` multiplicities of papers drawn with
    replacement (common.stats' seed policy: the same papers, the same resamples)."""
    if n_papers not in cache:
        cache[n_papers] = resample_counts(n_papers).astype(np.float64)
    return cache[n_papers]


def _histogram(gaps: np.ndarray, edges: np.ndarray) -> list[float]:
    if len(gaps) == 0:
        return [0.0] * (len(edges) - 1)
    counts, _ = np.histogram(gaps, bins=edges)
    return [float(c) / len(gaps) for c in counts]


def _unavailable(reason: str, *keys: str) -> dict[str, str]:
    """`{key: reason}` for each key, or nothing when there is no reason."""
    return dict.fromkeys(keys, reason) if reason else {}


@dataclass(frozen=True)
class _Scores:
    """One dimension's human scores, grouped by paper (papers in id order)."""

    values: np.ndarray  # every score, sorted by paper
    paper_index: np.ndarray  # for each score, the index of its paper
    counts: np.ndarray  # scores per paper
    llm_of_paper: np.ndarray  # each paper's LLM score, NaN where it has none

    @property
    def n_papers(self) -> int:
        return len(self.counts)

    @property
    def has_llm(self) -> np.ndarray:
        return np.isfinite(self.llm_of_paper)


def _scores_group(scores: Sequence[tuple[int, float]], llm: Mapping[int, float]) -> _Scores:
    papers_of = np.fromiter((p for p, _ in scores), dtype=np.int64, count=len(scores))
    values = np.fromiter((s for _, s in scores), dtype=np.float64, count=len(scores))
    order = np.argsort(papers_of, kind="stable")
    papers_of, values = papers_of[order], values[order]
    papers, paper_index, counts = np.unique(papers_of, return_inverse=True, return_counts=True)
    llm_of_paper = np.array([llm.get(int(p), np.nan) for p in papers], dtype=np.float64)
    return _Scores(values, paper_index, counts, llm_of_paper)


@dataclass(frozen=True)
class _Gaps:
    """Absolute score gaps of one kind, and per paper their sum and count
    (what the bootstrap resamples)."""

    gaps: np.ndarray
    paper_sum: np.ndarray
    paper_n: np.ndarray

    @property
    def n_papers(self) -> int:
        """Papers that contribute at least one gap."""
        return int((self.paper_n > 0).sum())


def _human_human_gaps(scores: _Scores) -> _Gaps:
    """Grouped by how many reviewers a paper has, so each group is one
    matrix and every pair of its columns one vector operation."""
    n_papers = scores.n_papers
    starts = np.concatenate(([0], np.cumsum(scores.counts)[:-1])).astype(np.int64)
    parts: list[np.ndarray] = []
    paper_sum = np.zeros(n_papers)
    paper_n = np.zeros(n_papers)
    for k in np.unique(scores.counts):
        if k < 2:
            continue
        group = np.flatnonzero(scores.counts == k)
        matrix = scores.values[starts[group][:, None] + np.arange(k)]
        pairs = np.stack(
            [np.abs(matrix[:, i] - matrix[:, j]) for i, j in combinations(range(k), 2)], axis=1
        )
        parts.append(pairs.ravel())
        paper_sum[group] = pairs.sum(axis=1)
        paper_n[group] = pairs.shape[1]
    return _Gaps(np.concatenate(parts) if parts else np.empty(0), paper_sum, paper_n)


def _human_llm_gaps(scores: _Scores) -> _Gaps:
    n_papers = scores.n_papers
    llm_of_score = scores.llm_of_paper[scores.paper_index] if n_papers else np.empty(0)
    has_llm = np.isfinite(llm_of_score)
    gaps = np.abs(scores.values[has_llm] - llm_of_score[has_llm])
    paper_sum = np.bincount(scores.paper_index[has_llm], weights=gaps, minlength=n_papers)
    paper_n = np.bincount(scores.paper_index[has_llm], minlength=n_papers).astype(np.float64)
    return _Gaps(gaps, paper_sum, paper_n)


class _Centre(NamedTuple):
    mean: float | None
    median: float | None


def _gap_centre(gaps: np.ndarray) -> _Centre:
    if not len(gaps):
        return _Centre(None, None)
    return _Centre(float(gaps.mean()), float(np.median(gaps)))


class _Test(NamedTuple):
    u_statistic: float | None
    p_value: float | None
    rank_biserial: float | None
    reason: str


def _mann_whitney(hh: np.ndarray, hl: np.ndarray) -> _Test:
    """The paper's test of human-human against human-LLM gaps."""
    if len(hh) < MIN_GAPS_FOR_TEST or len(hl) < MIN_GAPS_FOR_TEST:
        return _Test(
            None,
            None,
            None,
            f"the test needs at least {MIN_GAPS_FOR_TEST} gaps in each group "
            f"(human-human {len(hh)}, human-LLM {len(hl)})",
        )
    test = _stats().mannwhitneyu(hh, hl, alternative="two-sided")
    u, p = _number(test.statistic), _number(test.pvalue)
    if u is None or p is None:
        return _Test(None, None, None, "the test is undefined on these gaps")
    return _Test(u, p, 2.0 * u / (len(hh) * len(hl)) - 1.0, "")


# Krippendorff's alpha works on per-paper value counts (alpha depends on each
# paper's multiset of values only, not on who gave them).


def _alpha_humans(scores: _Scores) -> tuple[float | None, str]:
    if not scores.n_papers:
        return None, "no submitted human review"
    domain = np.unique(scores.values)
    counts = np.zeros((scores.n_papers, len(domain)))
    np.add.at(counts, (scores.paper_index, np.searchsorted(domain, scores.values)), 1)
    return _pairable_alpha(counts, domain)


def _alpha_humans_llm(scores: _Scores) -> tuple[float | None, str]:
    """The LLM counts as one more rater of each paper it scored."""
    has_llm = scores.has_llm
    if not (scores.n_papers and has_llm.any()):
        return None, "no reviewed paper has an LLM score"
    llm_values = scores.llm_of_paper[has_llm]
    domain = np.unique(np.concatenate([scores.values, llm_values]))
    counts = np.zeros((scores.n_papers, len(domain)))
    np.add.at(counts, (scores.paper_index, np.searchsorted(domain, scores.values)), 1)
    np.add.at(counts, (np.flatnonzero(has_llm), np.searchsorted(domain, llm_values)), 1)
    return _pairable_alpha(counts, domain)


def _human_mean_and_llm(scores: _Scores) -> tuple[np.ndarray, np.ndarray]:
    """Each paper's human mean and its LLM score, for the papers that have both."""
    n_papers = scores.n_papers
    human_mean = (
        np.bincount(scores.paper_index, weights=scores.values, minlength=n_papers) / scores.counts
        if n_papers
        else np.empty(0)
    )
    return human_mean[scores.has_llm], scores.llm_of_paper[scores.has_llm]


class _Correlation(NamedTuple):
    rho: float | None
    p_value: float | None
    reason: str


def _spearman(x: np.ndarray, y: np.ndarray) -> _Correlation:
    rho = spearman(x, y, min_n=MIN_PAPERS_FOR_SPEARMAN)
    if rho.reason == TOO_FEW:
        return _Correlation(
            None,
            None,
            f"needs at least {MIN_PAPERS_FOR_SPEARMAN} papers with both scores (has {len(x)})",
        )
    if rho.reason:
        return _Correlation(
            None, None, "the human means or the LLM scores are all the same, so rho is undefined"
        )
    return _Correlation(rho.rho, rho.p_value, "")


class _Intervals(NamedTuple):
    human_human: Interval | None
    human_llm: Interval | None
    difference: Interval | None
    unavailable: dict[str, str]


def _bootstrap_intervals(
    hh: _Gaps, hl: _Gaps, *, n_papers: int, weights_cache: dict[int, np.ndarray]
) -> _Intervals:
    """Papers resampled: a resample's mean gap is its papers' gap sums over
    their gap counts, each paper weighted by how often it was drawn."""
    boot_hh = boot_hl = np.empty(0)
    if n_papers:
        weights = _bootstrap_weights(n_papers, weights_cache)
        # One matrix product for all four per-paper vectors.
        sums = weights @ np.column_stack([hh.paper_sum, hh.paper_n, hl.paper_sum, hl.paper_n])
        with np.errstate(invalid="ignore", divide="ignore"):
            boot_hh = sums[:, 0] / sums[:, 1]
            boot_hl = sums[:, 2] / sums[:, 3]
    unavailable: dict[str, str] = {}
    intervals: list[Interval | None] = []
    for key, gaps, boot in (
        ("ci_mean_abs_diff_human_human", hh, boot_hh),
        ("ci_mean_abs_diff_human_llm", hl, boot_hl),
    ):
        if gaps.n_papers < MIN_PAPERS_FOR_BOOTSTRAP:
            unavailable[key] = (
                f"needs gaps on at least {MIN_PAPERS_FOR_BOOTSTRAP} papers (has {gaps.n_papers})"
            )
            intervals.append(None)
        else:
            intervals.append(percentile_interval(boot))
    ci_hh, ci_hl = intervals
    difference = None
    if ci_hh is not None and ci_hl is not None:
        difference = percentile_interval(boot_hl - boot_hh)
    else:
        unavailable["ci_mean_abs_diff_difference"] = "needs both intervals"
    return _Intervals(ci_hh, ci_hl, difference, unavailable)


def _plot(hh: np.ndarray, hl: np.ndarray, x: np.ndarray, y: np.ndarray) -> DimensionPlot:
    top = max([float(hh.max()) if len(hh) else 0.0, float(hl.max()) if len(hl) else 0.0, 1.0])
    edges = np.arange(0.0, np.floor(top / HISTOGRAM_BIN_WIDTH) + 2) * HISTOGRAM_BIN_WIDTH
    points: dict[tuple[float, float], int] = defaultdict(int)
    for hx, ly in zip(np.round(x, 2), np.round(y, 2), strict=True):
        points[(float(hx), float(ly))] += 1
    return DimensionPlot(
        histogram=GapHistogram(
            edges=[float(e) for e in edges],
            human_human=_histogram(hh, edges),
            human_llm=_histogram(hl, edges),
        ),
        scatter=[(hx, ly, n) for (hx, ly), n in sorted(points.items())],
    )


_NO_HUMAN_PAIRS = "no paper has two submitted human reviews"
_NO_LLM_SCORE = "no reviewed paper has an LLM score"


def dimension_agreement(
    scores: Sequence[tuple[int, float]],
    llm: Mapping[int, float],
    *,
    dimension: str,
    weights_cache: dict[int, np.ndarray] | None = None,
) -> tuple[DimensionAgreement, DimensionPlot]:
    """Statistics of one dimension from `(paper, human score)` pairs (one per
    submitted review) and `{paper: llm score}`, and the plot data (gap
    histograms and the human-mean/LLM scatter). `p_value_holm` is left None:
    it needs every dimension (`agreement_compute`).

    Long because the statistics of one dimension share its paired scores."""
    grouped = _scores_group(scores, llm)
    hh, hl = _human_human_gaps(grouped), _human_llm_gaps(grouped)
    hh_centre, hl_centre = _gap_centre(hh.gaps), _gap_centre(hl.gaps)
    test = _mann_whitney(hh.gaps, hl.gaps)
    alpha_humans, alpha_humans_reason = _alpha_humans(grouped)
    alpha_with_llm, alpha_with_llm_reason = _alpha_humans_llm(grouped)
    x, y = _human_mean_and_llm(grouped)
    correlation = _spearman(x, y)
    intervals = _bootstrap_intervals(
        hh,
        hl,
        n_papers=grouped.n_papers,
        weights_cache={} if weights_cache is None else weights_cache,
    )
    # The reasons in the order of the statistics (the order the API lists them).
    unavailable = {
        **_unavailable(
            "" if len(hh.gaps) else _NO_HUMAN_PAIRS,
            "mean_abs_diff_human_human",
            "median_abs_diff_human_human",
        ),
        **_unavailable(
            "" if len(hl.gaps) else _NO_LLM_SCORE,
            "mean_abs_diff_human_llm",
            "median_abs_diff_human_llm",
        ),
        **_unavailable(test.reason, "u_statistic", "p_value", "rank_biserial"),
        **_unavailable(alpha_humans_reason, "krippendorff_alpha_humans"),
        **_unavailable(alpha_with_llm_reason, "krippendorff_alpha_humans_llm"),
        **_unavailable(correlation.reason, "spearman_rho", "spearman_p_value"),
        **intervals.unavailable,
    }
    row = DimensionAgreement(
        dimension=dimension,
        n_papers=grouped.n_papers,
        n_reviews=len(grouped.values),
        n_papers_with_llm=int(grouped.has_llm.sum()),
        n_human_human=len(hh.gaps),
        n_human_llm=len(hl.gaps),
        mean_abs_diff_human_human=hh_centre.mean,
        median_abs_diff_human_human=hh_centre.median,
        mean_abs_diff_human_llm=hl_centre.mean,
        median_abs_diff_human_llm=hl_centre.median,
        u_statistic=test.u_statistic,
        p_value=test.p_value,
        rank_biserial=test.rank_biserial,
        krippendorff_alpha_humans=alpha_humans,
        krippendorff_alpha_humans_llm=alpha_with_llm,
        spearman_rho=correlation.rho,
        spearman_p_value=correlation.p_value,
        n_papers_spearman=len(x),
        ci_mean_abs_diff_human_human=intervals.human_human,
        ci_mean_abs_diff_human_llm=intervals.human_llm,
        ci_mean_abs_diff_difference=intervals.difference,
        p_value_holm=None,
        unavailable=unavailable,
    )
    return row, _plot(hh.gaps, hl.gaps, x, y)


def _holm_set(row: DimensionAgreement, adjusted: Iterator[float]) -> DimensionAgreement:
    if row.p_value is None:
        return replace(
            row, unavailable={**row.unavailable, "p_value_holm": "no p-value for this dimension"}
        )
    return replace(row, p_value_holm=next(adjusted))


def agreement_compute(
    human: Iterable[HumanScore | tuple[int, int, str, float]],
    llm: Mapping[int, Mapping[str, float]],
    *,
    dimensions: Sequence[str],
) -> tuple[list[DimensionAgreement], dict[str, DimensionPlot]]:
    """Every dimension's statistics (in `dimensions` order) and plot data,
    with Holm-corrected p-values across the dimensions that have a p-value."""
    by_dimension: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for paper, _reviewer, dimension, score in human:
        by_dimension[dimension].append((paper, score))
    weights_cache: dict[int, np.ndarray] = {}
    rows: list[DimensionAgreement] = []
    plots: dict[str, DimensionPlot] = {}
    for dimension in dimensions:
        llm_dimension = {
            paper: float(scores[dimension])
            for paper, scores in llm.items()
            if scores.get(dimension) is not None
        }
        row, plot = dimension_agreement(
            by_dimension.get(dimension, []),
            llm_dimension,
            dimension=dimension,
            weights_cache=weights_cache,
        )
        rows.append(row)
        plots[dimension] = plot
    adjusted = iter(holm_adjust([row.p_value for row in rows if row.p_value is not None]))
    return [_holm_set(row, adjusted) for row in rows], plots
