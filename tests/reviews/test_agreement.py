"""The agreement statistics equal a direct, naive scipy computation on
generated data (ties included), say why when there is too little data, are
cached, and change the moment a review or a judgment does."""

import dataclasses
import itertools
import json
import random
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from django.utils import timezone
from scipy import stats

from common import stats as common_stats
from common.results import results_changed
from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus, Rubric
from reviews import agreement as agreement_module
from reviews.models import HumanReview, HumanReviewScore, ReviewStatus
from reviews.selectors import AgreementReviews, agreement_for_stage
from reviews.serializers import DimensionAgreementSerializer
from reviews.services import review_import_record
from submissions.models import Stage
from tests.errors import error_messages

from .factories import (
    END2END_DIMENSIONS,
    JudgeFactory,
    RubricFactory,
    SubmissionFactory,
    UserFactory,
    judgment_record,
    rubric_dimensions,
)

# These tests count every submitted review (an organiser's view).
SUBMITTED = AgreementReviews.SUBMITTED

pytestmark = pytest.mark.django_db


def submitted_review(submission, reviewer, scores: dict[str, int]) -> HumanReview:
    review = HumanReview.objects.create(
        submission=submission,
        reviewer=reviewer,
        status=ReviewStatus.SUBMITTED,
        submitted_at=timezone.now(),
    )
    HumanReviewScore.objects.bulk_create(
        HumanReviewScore(review=review, dimension=d, score=s) for d, s in scores.items()
    )
    return review


@pytest.fixture
def generated():
    """25 papers, 1-4 reviewers each out of 8, two judges on 20 of them
    (means land on halves), small integer scores so that ties abound."""
    rng = random.Random(7)  # noqa: S311 - reproducible test data
    rubric = RubricFactory()
    judges = [JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")]
    reviewers = [UserFactory() for _ in range(8)]
    human = []  # (paper, reviewer, dimension, score)
    llm = defaultdict(dict)  # judge name -> {paper: {dimension: score}}
    for i in range(25):
        submission = SubmissionFactory()
        for reviewer in rng.sample(reviewers, rng.randint(1, 4)):
            scores = {d: rng.randint(3, 7) for d in END2END_DIMENSIONS}
            submitted_review(submission, reviewer, scores)
            human += [(submission.id, reviewer.id, d, s) for d, s in scores.items()]
        if i < 20:
            for judge in judges:
                scores = {d: rng.randint(4, 8) for d in END2END_DIMENSIONS}
                judgment_record(submission, judge, rubric, scores)
                llm[judge.name][submission.id] = scores
    # A draft never counts.
    draft = HumanReview.objects.create(submission=submission, reviewer=UserFactory())
    HumanReviewScore.objects.create(review=draft, dimension="Overall", score=10)
    return human, llm


def naive(human, llm_by_paper, dimension):
    """The statistics computed the obvious way, one loop at a time."""
    rows = [(p, r, s) for p, r, d, s in human if d == dimension]
    by_paper = defaultdict(list)
    for p, r, s in rows:
        by_paper[p].append((r, s))
    hh = [
        abs(a[1] - b[1])
        for group in by_paper.values()
        for a, b in itertools.combinations(group, 2)
        if a[0] != b[0]
    ]
    hl = [abs(s - llm_by_paper[p]) for p, _r, s in rows if p in llm_by_paper]
    result = {"hh": hh, "hl": hl}
    result["mw"] = stats.mannwhitneyu(hh, hl, alternative="two-sided")
    papers = sorted(by_paper)
    reviewers = sorted({r for _p, r, _s in rows})
    matrix = np.full((len(reviewers), len(papers)), np.nan)
    for p, r, s in rows:
        matrix[reviewers.index(r), papers.index(p)] = s
    result["alpha_h"] = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    llm_row = [[llm_by_paper.get(p, np.nan) for p in papers]]
    result["alpha_hl"] = krippendorff.alpha(
        reliability_data=np.vstack([matrix, llm_row]), level_of_measurement="ordinal"
    )
    with_llm = [p for p in papers if p in llm_by_paper]
    means = [np.mean([s for _r, s in by_paper[p]]) for p in with_llm]
    result["spearman"] = stats.spearmanr(means, [llm_by_paper[p] for p in with_llm])
    # Bootstrap: resample papers (sorted by id) with the site's seed policy, one at a time.
    rng = common_stats.bootstrap_rng(len(papers))
    draws = rng.integers(0, len(papers), size=(common_stats.BOOTSTRAP_RESAMPLES, len(papers)))
    boot_hh, boot_hl = [], []
    for draw in draws:
        gaps_hh, gaps_hl = [], []
        for index in draw:
            group = by_paper[papers[index]]
            gaps_hh += [abs(a[1] - b[1]) for a, b in itertools.combinations(group, 2)]
            if papers[index] in llm_by_paper:
                gaps_hl += [abs(s - llm_by_paper[papers[index]]) for _r, s in group]
        boot_hh.append(np.mean(gaps_hh) if gaps_hh else np.nan)
        boot_hl.append(np.mean(gaps_hl) if gaps_hl else np.nan)
    boot_hh, boot_hl = np.array(boot_hh), np.array(boot_hl)
    result["ci_hh"] = np.percentile(boot_hh[np.isfinite(boot_hh)], [2.5, 97.5])
    result["ci_hl"] = np.percentile(boot_hl, [2.5, 97.5])
    diff = boot_hl - boot_hh
    result["ci_diff"] = np.percentile(diff[np.isfinite(diff)], [2.5, 97.5])
    return result


def naive_holm(p_values):
    """Holm by its definition: step down through the sorted p-values."""
    m = len(p_values)
    order = np.argsort(p_values)
    adjusted = np.empty(m)
    previous = 0.0
    for rank, index in enumerate(order):
        previous = max(previous, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = previous
    return adjusted


@pytest.mark.parametrize("judge", [None, "judge-a"])
def test_agreement_equals_a_direct_scipy_computation(generated, judge):
    human, llm = generated
    if judge:
        llm_scores = llm[judge]
    else:
        llm_scores = {
            p: {d: (llm["judge-a"][p][d] + llm["judge-b"][p][d]) / 2 for d in END2END_DIMENSIONS}
            for p in llm["judge-a"]
        }
    result = agreement_for_stage(stage=Stage.END2END, judge=judge, reviews=SUBMITTED)
    assert result.judge == judge
    rows = {row.dimension: row for row in result.dimensions}
    assert list(rows) == END2END_DIMENSIONS
    for dimension in END2END_DIMENSIONS:
        expected = naive(human, {p: s[dimension] for p, s in llm_scores.items()}, dimension)
        row = rows[dimension]
        assert row.n_human_human == len(expected["hh"])
        assert row.n_human_llm == len(expected["hl"])
        assert row.u_statistic == pytest.approx(expected["mw"].statistic)
        assert row.p_value == pytest.approx(expected["mw"].pvalue)
        assert row.mean_abs_diff_human_human == pytest.approx(np.mean(expected["hh"]))
        assert row.median_abs_diff_human_human == pytest.approx(np.median(expected["hh"]))
        assert row.mean_abs_diff_human_llm == pytest.approx(np.mean(expected["hl"]))
        assert row.median_abs_diff_human_llm == pytest.approx(np.median(expected["hl"]))
        n1, n2 = len(expected["hh"]), len(expected["hl"])
        assert row.rank_biserial == pytest.approx(2 * expected["mw"].statistic / (n1 * n2) - 1)
        assert row.krippendorff_alpha_humans == pytest.approx(expected["alpha_h"])
        assert row.krippendorff_alpha_humans_llm == pytest.approx(expected["alpha_hl"])
        assert row.spearman_rho == pytest.approx(expected["spearman"].statistic)
        assert row.spearman_p_value == pytest.approx(expected["spearman"].pvalue)
        assert row.ci_mean_abs_diff_human_human == pytest.approx(list(expected["ci_hh"]))
        assert row.ci_mean_abs_diff_human_llm == pytest.approx(list(expected["ci_hl"]))
        assert row.ci_mean_abs_diff_difference == pytest.approx(list(expected["ci_diff"]))
        assert row.unavailable == {}
    holm = naive_holm([rows[d].p_value for d in END2END_DIMENSIONS])
    assert [rows[d].p_value_holm for d in END2END_DIMENSIONS] == pytest.approx(list(holm))
    # Ties are real in this data: gaps repeat within and across the two groups.
    expected = naive(human, {p: s["Overall"] for p, s in llm_scores.items()}, "Overall")
    assert len(set(expected["hh"])) < len(expected["hh"])
    assert set(expected["hh"]) & set(expected["hl"])


def test_a_dimension_with_one_reviewer_per_paper_says_why_instead_of_nan(db):
    rubric = RubricFactory(stage=Stage.PAPER, dimensions=rubric_dimensions(["Clarity"]))
    judge = JudgeFactory(name="judge-a")
    reviewer = UserFactory()
    expected_hl = []
    for human_score, llm_score in [(3, 5), (6, 6), (8, 4), (5, 7)]:
        submission = SubmissionFactory(stage=Stage.PAPER)
        submitted_review(submission, reviewer, {"Clarity": human_score})
        judgment_record(submission, judge, rubric, {"Clarity": llm_score})
        expected_hl.append(abs(human_score - llm_score))
    (row,) = agreement_for_stage(stage=Stage.PAPER, reviews=SUBMITTED).dimensions
    assert row.n_human_human == 0
    assert row.n_human_llm == 4
    assert row.mean_abs_diff_human_llm == pytest.approx(np.mean(expected_hl))
    for key in (
        "u_statistic",
        "p_value",
        "p_value_holm",
        "mean_abs_diff_human_human",
        "krippendorff_alpha_humans",
        "ci_mean_abs_diff_human_human",
    ):
        assert getattr(row, key) is None
        assert row.unavailable[key]
    assert "human-human 0" in row.unavailable["p_value"]
    assert row.spearman_rho == pytest.approx(stats.spearmanr([3, 6, 8, 5], [5, 6, 4, 7]).statistic)
    # Humans plus the LLM do have pairs: alpha is defined there.
    assert row.krippendorff_alpha_humans_llm == pytest.approx(
        krippendorff.alpha(
            reliability_data=[[3, 6, 8, 5], [5, 6, 4, 7]], level_of_measurement="ordinal"
        )
    )


def test_an_empty_stage_lists_the_rubric_dimensions_with_reasons(client, db):
    RubricFactory(stage=Stage.IDEA, dimensions=rubric_dimensions(["Novelty", "Overall"]))
    result = agreement_for_stage(stage=Stage.IDEA, reviews=SUBMITTED)
    assert [row.dimension for row in result.dimensions] == ["Novelty", "Overall"]
    for row in result.dimensions:
        numbers = {
            k: v
            for k, v in dataclasses.asdict(row).items()
            if k not in ("dimension", "unavailable")
        }
        assert all(v in (None, 0) for v in numbers.values())
        assert row.unavailable["p_value"].startswith("the test needs at least")
    # No rubric and no data at all: nothing to list, still a valid answer.
    Rubric.objects.filter(stage=Stage.PROPOSAL).delete()
    body = client.get("/api/agreement/?stage=proposal").json()
    assert body == {"stage": "proposal", "judge": None, "reviews": "released", "dimensions": []}
    page = client.get("/agreement/?stage=idea")
    assert page.status_code == 200
    assert "nan" not in page.content.decode().lower().replace("nancy", "")


def test_api_shape_and_bad_parameters(client, generated):
    body = client.get("/api/agreement/?stage=end2end").json()
    assert set(body) == {"stage", "judge", "reviews", "dimensions"}
    assert body["stage"] == "end2end" and body["judge"] is None
    for key in (
        "dimension",
        "n_human_human",
        "n_human_llm",
        "u_statistic",
        "p_value",
        "mean_abs_diff_human_human",
        "mean_abs_diff_human_llm",
        "krippendorff_alpha_humans",
        "spearman_rho",
    ):
        assert key in body["dimensions"][0]
    assert client.get("/api/agreement/?stage=end2end&judge=judge-b").json()["judge"] == "judge-b"
    unknown = client.get("/api/agreement/?stage=end2end&judge=nobody")
    assert unknown.status_code == 400 and "unknown judge" in error_messages(unknown)["judge"][0]
    assert client.get("/api/agreement/?stage=sculpture").status_code == 400
    page = client.get("/agreement/?stage=end2end&judge=judge-a")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="agreement-table"' in html
    # Two charts per dimension, each drawn or saying there is not enough data.
    drawn = html.count("<svg") + html.count('data-testid="chart-not-enough-data"')
    assert drawn == 2 * len(END2END_DIMENSIONS)
    assert '<option value="judge-a" selected>' in html


def test_cached_and_current_after_a_review_or_a_judgment_changes(
    generated, django_assert_num_queries, django_capture_on_commit_callbacks, make_reviewer
):
    before = agreement_for_stage(stage=Stage.END2END, reviews=SUBMITTED)
    # From the cache: two small queries (the judgments' fingerprint and the stage's
    # default panel, whose judges' mean is the default), no recomputation.
    with django_assert_num_queries(2):
        assert agreement_for_stage(stage=Stage.END2END, reviews=SUBMITTED) == before

    # A new submitted review (through the service the import and the pages use).
    submission = HumanReview.objects.filter(submission__judgments__isnull=False).first().submission
    with django_capture_on_commit_callbacks(execute=True):
        review_import_record(
            submission=submission,
            reviewer=UserFactory(),
            scores={d: 9 for d in END2END_DIMENSIONS},
            ranges={d: (1, 10) for d in END2END_DIMENSIONS},
        )
    after_review = agreement_for_stage(stage=Stage.END2END, reviews=SUBMITTED)
    before_overall = before.dimensions[-1]
    after_overall = after_review.dimensions[-1]
    assert after_overall.n_human_llm == before_overall.n_human_llm + 1
    assert after_overall.n_human_human > before_overall.n_human_human

    # A judge's score changes outside a service (a shell): the writer says so, as
    # `common.results` asks (no model signal does it for it).
    score = DimensionScore.objects.filter(dimension="Overall").first()
    score.score = 1
    with django_capture_on_commit_callbacks(execute=True):
        score.save()
        results_changed([Stage.END2END], agreement=True)
    after_judgment = agreement_for_stage(stage=Stage.END2END, reviews=SUBMITTED)
    assert (
        after_judgment.dimensions[-1].mean_abs_diff_human_llm
        != after_overall.mean_abs_diff_human_llm
    )


def test_a_judgment_finished_without_signals_still_refreshes_the_numbers(generated):
    """Judge workers claim rows with queryset updates and insert scores in
    bulk: no post_save at all, yet the dashboard must not stay stale."""
    before = agreement_for_stage(stage=Stage.END2END, reviews=SUBMITTED)
    overall = before.dimensions[-1]
    # A paper with human reviews but no judgment yet gets one, the way a worker would.
    submission = HumanReview.objects.filter(submission__judgments__isnull=True).first().submission
    judgment = Judgment.objects.create(
        submission=submission,
        judge=Judge.objects.get(name="judge-a"),
        rubric=Judgment.objects.first().rubric,
        status=JudgmentStatus.RUNNING,
    )
    agreement_for_stage(stage=Stage.END2END, reviews=SUBMITTED)  # cached again in between
    DimensionScore.objects.bulk_create(
        DimensionScore(judgment=judgment, dimension=d, score=5) for d in END2END_DIMENSIONS
    )
    Judgment.objects.filter(pk=judgment.pk, status=JudgmentStatus.RUNNING).update(
        status=JudgmentStatus.DONE, finished_at=timezone.now()
    )
    after = agreement_for_stage(stage=Stage.END2END, reviews=SUBMITTED).dimensions[-1]
    n_reviews = HumanReview.objects.filter(submission=submission, status="submitted").count()
    assert after.n_human_llm == overall.n_human_llm + n_reviews


# What `dimension_agreement` answered when it returned a dict (before it
# returned a dataclass), dumped as JSON: the same figures, in the same order.
# (The difference's interval moved from [-1.75, 0.5] when every bootstrap of the
# site took one seed policy and one resample count, common.stats: 2,000
# resamples seeded by the site's seed and the number of papers, not 1,000.)
_SOUNDNESS_AS_DICT = (
    '{"dimension": "Soundness", "n_papers": 5, "n_reviews": 10, "n_papers_with_llm": 4, '
    '"n_human_human": 6, "n_human_llm": 8, "mean_abs_diff_human_human": 1.8333333333333333, '
    '"median_abs_diff_human_human": 1.5, "mean_abs_diff_human_llm": 1.25, '
    '"median_abs_diff_human_llm": 0.75, "u_statistic": 30.0, "p_value": 0.472769200321578, '
    '"rank_biserial": 0.25, "krippendorff_alpha_humans": 0.06513409961685823, '
    '"krippendorff_alpha_humans_llm": 0.24295926045361715, "spearman_rho": 0.6000000000000001, '
    '"spearman_p_value": 0.4, "n_papers_spearman": 4, '
    '"ci_mean_abs_diff_human_human": [0.6666666666666666, 4.0], '
    '"ci_mean_abs_diff_human_llm": [0.35714285714285715, 2.5], '
    '"ci_mean_abs_diff_difference": [-1.75, 0.25], "p_value_holm": null, "unavailable": {}}'
)
_CLARITY_REASONS = {
    "mean_abs_diff_human_human": "no paper has two submitted human reviews",
    "median_abs_diff_human_human": "no paper has two submitted human reviews",
    "mean_abs_diff_human_llm": "no reviewed paper has an LLM score",
    "median_abs_diff_human_llm": "no reviewed paper has an LLM score",
    "u_statistic": "the test needs at least 3 gaps in each group (human-human 0, human-LLM 0)",
    "p_value": "the test needs at least 3 gaps in each group (human-human 0, human-LLM 0)",
    "rank_biserial": "the test needs at least 3 gaps in each group (human-human 0, human-LLM 0)",
    "krippendorff_alpha_humans": "no paper has two scores to compare",
    "krippendorff_alpha_humans_llm": "no reviewed paper has an LLM score",
    "spearman_rho": "needs at least 3 papers with both scores (has 0)",
    "spearman_p_value": "needs at least 3 papers with both scores (has 0)",
    "ci_mean_abs_diff_human_human": "needs gaps on at least 3 papers (has 0)",
    "ci_mean_abs_diff_human_llm": "needs gaps on at least 3 papers (has 0)",
    "ci_mean_abs_diff_difference": "needs both intervals",
}


def test_dimension_agreement_is_a_frozen_dataclass_with_the_same_figures():
    scores = [(1, 3), (1, 5), (1, 4), (2, 6), (2, 6), (3, 2), (3, 7), (4, 5), (5, 8), (5, 6)]
    row, plot = agreement_module.dimension_agreement(
        scores, {1: 4.5, 2: 6.0, 3: 3.0, 4: 7.5}, dimension="Soundness"
    )
    assert isinstance(row, agreement_module.DimensionAgreement)
    assert json.dumps(dataclasses.asdict(row)) == _SOUNDNESS_AS_DICT
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.p_value = 0.5  # type: ignore[misc]
    assert plot.histogram.edges == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert plot.histogram.human_llm == [0.5, 0.25, 0.125, 0.0, 0.125, 0.0]
    assert plot.scatter == [(4.0, 4.5, 1), (4.5, 3.0, 1), (5.0, 7.5, 1), (6.0, 6.0, 1)]

    # Too little data: every figure None, each reason under its field's name, in order.
    (sparse,), _plots = agreement_module.agreement_compute(
        [(1, 10, "Clarity", 3), (2, 10, "Clarity", 5)], {}, dimensions=["Clarity"]
    )
    assert (sparse.n_papers, sparse.n_reviews, sparse.n_human_human) == (2, 2, 0)
    assert list(sparse.unavailable.items()) == [
        *_CLARITY_REASONS.items(),
        ("p_value_holm", "no p-value for this dimension"),
    ]


def test_the_api_serializer_lists_every_field_of_the_dataclass_in_order():
    assert list(DimensionAgreementSerializer().fields) == [
        field.name for field in dataclasses.fields(agreement_module.DimensionAgreement)
    ]
