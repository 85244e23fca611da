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
  bootstrap intervals (papers resampled, fixed seed) of the two mean gaps and
  of their difference, and Holm-corrected p-values across dimensions.

Below the minimum amount of data a statistic is None and `unavailable` says
why; no NaN ever leaves this module. Everything here is pure computation on
plain Python data, so it can be checked against a direct scipy computation.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from math import isfinite
from typing import NamedTuple

import krippendorff
import numpy as np
from scipy import stats

from common.bootstrap import resample_counts

MIN_GAPS_FOR_TEST = 3
MIN_PAPERS_FOR_SPEARMAN = 3
MIN_PAPERS_FOR_BOOTSTRAP = 3
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20250
HISTOGRAM_BIN_WIDTH = 1.0


class HumanScore(NamedTuple):
    """One submitted score; plain tuples of the same shape are accepted too."""

    paper: int
    reviewer: int
    dimension: str
    score: float


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (family-wise error), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def _number(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if isfinite(value) else None


def _pairable_alpha(value_counts: np.ndarray, domain: np.ndarray) -> tuple[float | None, str]:
    """Ordinal alpha from a units x values count matrix, or None and the reason."""
    pairable = value_counts[value_counts.sum(axis=1) >= 2]
    if len(pairable) == 0:
        return None, "no paper has two scores to compare"
    if np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None, "every compared score is the same value, so alpha is undefined"
    alpha = krippendorff.alpha(
        value_counts=pairable, value_domain=domain, level_of_measurement="ordinal"
    )
    alpha = _number(alpha)
    if alpha is None:
        return None, "alpha is undefined on these scores"
    return alpha, ""


def _bootstrap_weights(n_papers: int, cache: dict[int, np.ndarray]) -> np.ndarray:
    """`BOOTSTRAP_RESAMPLES x n_papers` multiplicities of papers drawn with
    replacement; the same seed always draws the same resamples."""
    if n_papers not in cache:
        cache[n_papers] = resample_counts(
            n_papers, resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED
        ).astype(np.float64)
    return cache[n_papers]


def _interval(values: np.ndarray) -> list[float] | None:
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return [float(low), float(high)]


def _histogram(gaps: np.ndarray, edges: np.ndarray) -> list[float]:
    if len(gaps) == 0:
        return [0.0] * (len(edges) - 1)
    counts, _ = np.histogram(gaps, bins=edges)
    return [float(c) / len(gaps) for c in counts]


def dimension_agreement(
    scores: Sequence[tuple[int, float]],
    llm: Mapping[int, float],
    *,
    dimension: str,
    weights_cache: dict[int, np.ndarray] | None = None,
) -> tuple[dict, dict]:
    """Statistics of one dimension from `(paper, human score)` pairs (one per
    submitted review) and `{paper: llm score}`. Returns the statistics and the
    plot data (gap histograms and the human-mean/LLM scatter)."""
    weights_cache = {} if weights_cache is None else weights_cache
    unavailable: dict[str, str] = {}
    if scores:
        papers_of = np.fromiter((p for p, _ in scores), dtype=np.int64, count=len(scores))
        values = np.fromiter((s for _, s in scores), dtype=np.float64, count=len(scores))
    else:
        papers_of = np.empty(0, dtype=np.int64)
        values = np.empty(0, dtype=np.float64)
    order = np.argsort(papers_of, kind="stable")
    papers_of, values = papers_of[order], values[order]
    papers, paper_index, counts = np.unique(papers_of, return_inverse=True, return_counts=True)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    n_papers = len(papers)

    # Human-human gaps, grouped by how many reviewers a paper has, so each
    # group is one matrix and every pair of its columns one vector operation.
    hh_parts: list[np.ndarray] = []
    hh_sum = np.zeros(n_papers)
    hh_n = np.zeros(n_papers)
    for k in np.unique(counts):
        if k < 2:
            continue
        group = np.flatnonzero(counts == k)
        matrix = values[starts[group][:, None] + np.arange(k)]
        pairs = np.stack(
            [np.abs(matrix[:, i] - matrix[:, j]) for i, j in combinations(range(k), 2)], axis=1
        )
        hh_parts.append(pairs.ravel())
        hh_sum[group] = pairs.sum(axis=1)
        hh_n[group] = pairs.shape[1]
    hh = np.concatenate(hh_parts) if hh_parts else np.empty(0)

    llm_of_paper = np.array([llm.get(int(p), np.nan) for p in papers], dtype=np.float64)
    llm_of_score = llm_of_paper[paper_index] if n_papers else np.empty(0)
    has_llm = np.isfinite(llm_of_score)
    hl = np.abs(values[has_llm] - llm_of_score[has_llm])
    hl_sum = np.bincount(paper_index[has_llm], weights=hl, minlength=n_papers)
    hl_n = np.bincount(paper_index[has_llm], minlength=n_papers).astype(np.float64)

    result: dict = {
        "dimension": dimension,
        "n_papers": int(n_papers),
        "n_reviews": int(len(values)),
        "n_papers_with_llm": int(np.isfinite(llm_of_paper).sum()),
        "n_human_human": int(len(hh)),
        "n_human_llm": int(len(hl)),
    }
    for group_name, gaps in (("human_human", hh), ("human_llm", hl)):
        if len(gaps):
            result[f"mean_abs_diff_{group_name}"] = float(gaps.mean())
            result[f"median_abs_diff_{group_name}"] = float(np.median(gaps))
        else:
            result[f"mean_abs_diff_{group_name}"] = None
            result[f"median_abs_diff_{group_name}"] = None
            reason = (
                "no paper has two submitted human reviews"
                if group_name == "human_human"
                else "no reviewed paper has an LLM score"
            )
            unavailable[f"mean_abs_diff_{group_name}"] = reason
            unavailable[f"median_abs_diff_{group_name}"] = reason

    # The paper's test.
    result.update(u_statistic=None, p_value=None, rank_biserial=None)
    if len(hh) < MIN_GAPS_FOR_TEST or len(hl) < MIN_GAPS_FOR_TEST:
        reason = (
            f"the test needs at least {MIN_GAPS_FOR_TEST} gaps in each group "
            f"(human-human {len(hh)}, human-LLM {len(hl)})"
        )
        for key in ("u_statistic", "p_value", "rank_biserial"):
            unavailable[key] = reason
    else:
        test = stats.mannwhitneyu(hh, hl, alternative="two-sided")
        u, p = _number(test.statistic), _number(test.pvalue)
        if u is None or p is None:
            for key in ("u_statistic", "p_value", "rank_biserial"):
                unavailable[key] = "the test is undefined on these gaps"
        else:
            result.update(
                u_statistic=u, p_value=p, rank_biserial=2.0 * u / (len(hh) * len(hl)) - 1.0
            )

    # Krippendorff's alpha on per-paper value counts (alpha depends on each
    # paper's multiset of values only, not on who gave them).
    human_domain = np.unique(values)
    if n_papers:
        value_index = np.searchsorted(human_domain, values)
        human_counts = np.zeros((n_papers, len(human_domain)))
        np.add.at(human_counts, (paper_index, value_index), 1)
        alpha, reason = _pairable_alpha(human_counts, human_domain)
    else:
        alpha, reason = None, "no submitted human review"
    result["krippendorff_alpha_humans"] = alpha
    if reason:
        unavailable["krippendorff_alpha_humans"] = reason
    finite_llm = np.isfinite(llm_of_paper)
    if n_papers and finite_llm.any():
        domain = np.unique(np.concatenate([values, llm_of_paper[finite_llm]]))
        counts_all = np.zeros((n_papers, len(domain)))
        np.add.at(counts_all, (paper_index, np.searchsorted(domain, values)), 1)
        llm_rows = np.flatnonzero(finite_llm)
        np.add.at(counts_all, (llm_rows, np.searchsorted(domain, llm_of_paper[llm_rows])), 1)
        alpha, reason = _pairable_alpha(counts_all, domain)
    else:
        alpha, reason = None, "no reviewed paper has an LLM score"
    result["krippendorff_alpha_humans_llm"] = alpha
    if reason:
        unavailable["krippendorff_alpha_humans_llm"] = reason

    # Spearman between each paper's human mean and its LLM score.
    human_mean = (
        np.bincount(paper_index, weights=values, minlength=n_papers) / counts
        if n_papers
        else np.empty(0)
    )
    x, y = human_mean[finite_llm], llm_of_paper[finite_llm]
    result.update(spearman_rho=None, spearman_p_value=None, n_papers_spearman=int(len(x)))
    if len(x) < MIN_PAPERS_FOR_SPEARMAN:
        reason = f"needs at least {MIN_PAPERS_FOR_SPEARMAN} papers with both scores (has {len(x)})"
        unavailable["spearman_rho"] = unavailable["spearman_p_value"] = reason
    elif np.ptp(x) == 0 or np.ptp(y) == 0:
        reason = "the human means or the LLM scores are all the same, so rho is undefined"
        unavailable["spearman_rho"] = unavailable["spearman_p_value"] = reason
    else:
        rho = stats.spearmanr(x, y)
        result.update(spearman_rho=_number(rho.statistic), spearman_p_value=_number(rho.pvalue))

    # Bootstrap over papers: a resample's mean gap is its papers' gap sums
    # over their gap counts, each paper weighted by how often it was drawn.
    ci_keys = (
        "ci_mean_abs_diff_human_human",
        "ci_mean_abs_diff_human_llm",
        "ci_mean_abs_diff_difference",
    )
    for key in ci_keys:
        result[key] = None
    n_hh_papers = int((hh_n > 0).sum())
    n_hl_papers = int((hl_n > 0).sum())
    if n_papers:
        weights = _bootstrap_weights(n_papers, weights_cache)
        # One matrix product for all four per-paper vectors.
        sums = weights @ np.column_stack([hh_sum, hh_n, hl_sum, hl_n])
        with np.errstate(invalid="ignore", divide="ignore"):
            boot_hh = sums[:, 0] / sums[:, 1]
            boot_hl = sums[:, 2] / sums[:, 3]
    for key, n_contributing, boot in (
        (ci_keys[0], n_hh_papers, "hh"),
        (ci_keys[1], n_hl_papers, "hl"),
    ):
        if n_contributing < MIN_PAPERS_FOR_BOOTSTRAP:
            unavailable[key] = (
                f"needs gaps on at least {MIN_PAPERS_FOR_BOOTSTRAP} papers (has {n_contributing})"
            )
        else:
            result[key] = _interval(boot_hh if boot == "hh" else boot_hl)
    if result[ci_keys[0]] is not None and result[ci_keys[1]] is not None:
        result[ci_keys[2]] = _interval(boot_hl - boot_hh)
    else:
        unavailable[ci_keys[2]] = "needs both intervals"

    result["p_value_holm"] = None
    result["unavailable"] = unavailable

    top = max([float(hh.max()) if len(hh) else 0.0, float(hl.max()) if len(hl) else 0.0, 1.0])
    edges = np.arange(0.0, np.floor(top / HISTOGRAM_BIN_WIDTH) + 2) * HISTOGRAM_BIN_WIDTH
    points: dict[tuple[float, float], int] = defaultdict(int)
    for hx, ly in zip(np.round(x, 2), np.round(y, 2), strict=True):
        points[(float(hx), float(ly))] += 1
    plot = {
        "histogram": {
            "edges": [float(e) for e in edges],
            "human_human": _histogram(hh, edges),
            "human_llm": _histogram(hl, edges),
        },
        "scatter": [[hx, ly, n] for (hx, ly), n in sorted(points.items())],
    }
    return result, plot


def agreement_compute(
    human: Iterable[HumanScore | tuple[int, int, str, float]],
    llm: Mapping[int, Mapping[str, float]],
    *,
    dimensions: Sequence[str],
) -> tuple[list[dict], dict[str, dict]]:
    """Every dimension's statistics (in `dimensions` order) and plot data,
    with Holm-corrected p-values across the dimensions that have a p-value."""
    by_dimension: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for paper, _reviewer, dimension, score in human:
        by_dimension[dimension].append((paper, score))
    weights_cache: dict[int, np.ndarray] = {}
    rows: list[dict] = []
    plots: dict[str, dict] = {}
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
    tested = [row for row in rows if row["p_value"] is not None]
    for row, adjusted in zip(tested, holm_adjust([r["p_value"] for r in tested]), strict=True):
        row["p_value_holm"] = adjusted
    for row in rows:
        if row["p_value"] is None:
            row["unavailable"]["p_value_holm"] = "no p-value for this dimension"
    return rows, plots
