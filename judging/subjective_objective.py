"""How LLM judges' opinions of a method relate to its real result.

Two measures, each under its own name:

- `subjective_objective` (the site's own): per dimension of the site's method
  rubric and judging condition, Spearman's rho between the judges' mean score
  of each evaluated method and its test relative improvement to human, with a
  percentile bootstrap interval (common.stats: `spearman`, `spearman_interval`).
- `mlrc_judge_correlation` (MLRC-Bench's, as its plot.py computes it): Pearson's
  r of MLRC-Bench's five 1-5 ratings (Clarity, Validity, Rigorousness,
  Innovativeness, Generalizability; its LLM_as_a_Judge.py rubric, importable
  with `import_rubric --mlrc-bench`) against test improvement_perc,
  -relative_runtime and -relative_complexity, over the test trials, per condition.

A read of judgments and objective results, shared by the leaderboard's API and
its objective tab (the selectors of this app; kept in its own module because
it is one concept).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from common.stats import (
    MLRC_JUDGE_DIMENSIONS,
    MLRC_JUDGE_SCALE,
    MLRC_OBJECTIVE_MEASURES,
    pearson,
    spearman,
    spearman_interval,
)
from experiments.mlrc_analyses import mlrc_test_measures
from experiments.models import ExperimentStatus, ObjectiveResult
from submissions.models import Stage

from .models import DimensionScore, JudgingCondition, JudgmentStatus
from .rubrics import METHOD_DIMENSIONS

# Below three methods a rank correlation says nothing (common.stats.SPEARMAN_MIN_N).
MIN_METHODS = 3
DIMENSIONS = tuple(spec.key for spec in METHOD_DIMENSIONS)
CONDITIONS = (JudgingCondition.WITH_CODE, JudgingCondition.NO_CODE)


@dataclass(frozen=True)
class Correlation:
    dimension: str
    condition: str
    n: int
    spearman_rho: float | None
    ci: tuple[float, float] | None
    # (judges' mean score, relative improvement) per method, for the scatter plot.
    points: tuple[tuple[float, float], ...]


def _improvements() -> dict[int, float]:
    """Each evaluated method (submission) and its test relative improvement."""
    # A test run here, or a test score recorded from elsewhere (an external test phase);
    # the dev run and the test run are of the same submission.
    results = (
        ObjectiveResult.objects.filter(relative_improvement__isnull=False)
        .filter(
            Q(test_run__status=ExperimentStatus.SUCCEEDED)
            | Q(test_run__isnull=True, test_score__isnull=False)
        )
        .values_list("dev_run__submission_id", "relative_improvement")
    )
    return {submission_id: float(value) for submission_id, value in results if value is not None}


def _judge_means(submission_ids: list[int]) -> dict[tuple[str, str], dict[int, float]]:
    """{(dimension, condition): {submission: the judges' mean score}}."""
    rows = DimensionScore.objects.filter(
        judgment__submission_id__in=submission_ids,
        judgment__submission__stage=Stage.METHOD,
        judgment__status=JudgmentStatus.DONE,
        dimension__in=DIMENSIONS,
    ).values_list("dimension", "judgment__condition", "judgment__submission_id", "score")
    sums: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for dimension, condition, submission_id, score in rows:
        sums[(dimension, condition)][submission_id].append(float(score))
    return {
        key: {sid: sum(values) / len(values) for sid, values in by_submission.items()}
        for key, by_submission in sums.items()
    }


def subjective_objective() -> list[Correlation]:
    """The site's own measure: one correlation per dimension of the site's method
    rubric and condition, over every method that was evaluated on test and judged
    under that condition."""
    improvements = _improvements()
    means = _judge_means(list(improvements))
    correlations = []
    for dimension in DIMENSIONS:
        for condition in CONDITIONS:
            scores = means.get((dimension, condition), {})
            ids = sorted(scores)
            x = np.array([scores[i] for i in ids], dtype=float)
            y = np.array([improvements[i] for i in ids], dtype=float)
            correlations.append(
                Correlation(
                    dimension=dimension,
                    condition=str(condition),
                    n=len(ids),
                    spearman_rho=spearman(x, y, min_n=MIN_METHODS).rho,
                    ci=spearman_interval(x, y, min_n=MIN_METHODS),
                    points=tuple(zip(x.tolist(), y.tolist(), strict=True)),
                )
            )
    return correlations


def _mlrc_ratings(submission_ids: list[int]) -> dict[tuple[str, int], dict[str, float]]:
    """{(condition, submission): {dimension: the judges' mean 1-5 rating}}, from
    judgments under MLRC-Bench's rubric (its five dimensions on its 1-5 scale)."""
    low, high = MLRC_JUDGE_SCALE
    rows = DimensionScore.objects.filter(
        judgment__submission_id__in=submission_ids,
        judgment__status=JudgmentStatus.DONE,
        dimension__in=MLRC_JUDGE_DIMENSIONS,
        scale_min=low,
        scale_max=high,
    ).values_list("judgment__condition", "judgment__submission_id", "dimension", "score")
    sums: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for condition, submission_id, dimension, score in rows:
        sums[(condition, submission_id)][dimension].append(float(score))
    return {
        key: {dimension: sum(v) / len(v) for dimension, v in by_dimension.items()}
        for key, by_dimension in sums.items()
    }


def mlrc_judge_correlation() -> dict:
    """MLRC-Bench's plot.py, `gather_test_correlation_data` and
    `plot_correlation_heatmaps`: one record per test implementation (here a test
    trial) whose judgment under the condition exists, with `improvement_perc`,
    `-relative_runtime` and `-relative_complexity` ("higher the better") and each
    rating; `DataFrame.corr()` (Pearson, pairwise complete), rows the five
    ratings, columns the three measures. With code: `with_code`; without: `no_code`
    (MLRC-Bench's `without_code`)."""
    measures = mlrc_test_measures()
    ratings = _mlrc_ratings([m["submission"] for m in measures])
    conditions = []
    for condition in CONDITIONS:
        records = [
            (measure, ratings[(str(condition), measure["submission"])])
            for measure in measures
            if (str(condition), measure["submission"]) in ratings
        ]
        cells = []
        for dimension in MLRC_JUDGE_DIMENSIONS:
            for key, label in MLRC_OBJECTIVE_MEASURES:
                sign = 1 if key == "improvement_perc" else -1
                r, n = pearson(
                    (
                        rated.get(dimension),
                        sign * measure[key] if measure[key] is not None else None,
                    )
                    for measure, rated in records
                )
                cells.append(
                    {"dimension": dimension, "measure": key, "label": label, "pearson_r": r, "n": n}
                )
        conditions.append({"condition": str(condition), "n_trials": len(records), "cells": cells})
    return {
        "label": "MLRC-Bench's judge correlation (Pearson), by MLRC-Bench's plot.py",
        "source": "plot.py gather_test_correlation_data, plot_correlation_heatmaps",
        "dimensions": list(MLRC_JUDGE_DIMENSIONS),
        "scale": list(MLRC_JUDGE_SCALE),
        "measures": [
            {"key": key, "label": label, "negated": key != "improvement_perc"}
            for key, label in MLRC_OBJECTIVE_MEASURES
        ],
        "n_test_trials": len(measures),
        "conditions": conditions,
    }
