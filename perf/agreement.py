"""How fast is the agreement dashboard current after a review, and cheap to read?

5,000 end-to-end papers, 3 expert reviews and 2 judges each, in a throwaway
PostgreSQL database. Side by side in the same run:

- site: one new review is submitted (which invalidates the cache), then the
  stage's agreement is recomputed from the database (`agreement_for_stage`);
- notebook: the same statistics the way the published MLR-Bench notebook
  works: read human_review.csv and llm_judge.csv with pandas, group by
  paper, pair the reviewers, then scipy (Mann-Whitney U, plus the alpha,
  Spearman, bootstrap and Holm this site adds, written the plain way);
- cached: the dashboard page and the API served from the cache.

Goal: the site's recompute is not slower than the notebook way, and the
cached dashboard takes under a tenth of the recompute.

Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench REDIS_URL=redis://127.0.0.1:6379/15 \
     .venv/bin/python perf/agreement.py [--papers 5000] [--repeat 5] [--smoke]

`--smoke` (30 papers, 2 repeats) checks that the script still runs, in seconds,
and exits non-zero on any error. The papers are judged and reviewed on the
dimensions of the site's own end-to-end rubric, which its migrations create.
"""

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")
os.environ.setdefault("DEBUG", "0")

import django  # noqa: E402

django.setup()

import krippendorff  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from django.utils import timezone  # noqa: E402
from scipy import stats  # noqa: E402

from common.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED  # noqa: E402 - the site's

REVIEWERS = 60


def site_rubric():
    """The end-to-end stage's active rubric: the site's own, from its migrations
    (creating version 1 again would clash with it)."""
    from judging.models import Rubric
    from submissions.models import Stage

    rubric = (
        Rubric.objects.filter(stage=Stage.END2END, kind="score")
        .order_by("-is_active", "-version")
        .first()
    )
    if rubric is None:
        raise SystemExit("no end-to-end rubric: did the migrations run?")
    return rubric


def populate(n_papers: int, dimensions: list[str]) -> list[int]:
    from benchmark.models import Agent, Task, Team
    from judging.models import DimensionScore, Judge, Judgment, JudgmentStatus
    from reviews.models import HumanReview, HumanReviewScore, ReviewStatus
    from submissions.models import Stage, Submission

    rng = np.random.default_rng(1)
    rubric = site_rubric()
    judges = [Judge.objects.create(name=f"judge-{i}", model=f"openai/j{i}") for i in range(2)]
    team = Team.objects.create(name="perf", slug="perf")
    n_tasks = min(100, n_papers)
    tasks = Task.objects.bulk_create(
        Task(
            slug=f"iclr2025_perf{i}",
            title=f"Perf {i}",
            conference="iclr",
            year=2025,
            description="# Perf",
        )
        for i in range(n_tasks)
    )
    agents = Agent.objects.bulk_create(
        Agent(team=team, name=f"agent-{i}", display_name=f"Agent {i}")
        for i in range(n_papers // n_tasks + 1)
    )
    submissions = Submission.objects.bulk_create(
        Submission(
            agent=agents[i // n_tasks],
            task=tasks[i % n_tasks],
            stage=Stage.END2END,
            source="import",
            archive_sha256=f"{i:064d}",
        )
        for i in range(n_papers)
    )
    user_model = get_user_model()
    reviewers = user_model.objects.bulk_create(
        user_model(username=f"perf-reviewer-{i}") for i in range(REVIEWERS)
    )
    now = timezone.now()
    reviews = []
    for submission in submissions:
        for reviewer_index in rng.choice(REVIEWERS, 3, replace=False):
            reviews.append(
                HumanReview(
                    submission=submission,
                    reviewer=reviewers[reviewer_index],
                    status=ReviewStatus.SUBMITTED,
                    submitted_at=now,
                    # Published reviews: the public agreement counts them.
                    imported=True,
                )
            )
    reviews = HumanReview.objects.bulk_create(reviews, batch_size=5000)
    scores = rng.integers(1, 11, size=(len(reviews), len(dimensions)))
    HumanReviewScore.objects.bulk_create(
        (
            HumanReviewScore(review=review, dimension=d, score=int(scores[i, j]))
            for i, review in enumerate(reviews)
            for j, d in enumerate(dimensions)
        ),
        batch_size=10000,
    )
    judgments = Judgment.objects.bulk_create(
        (
            Judgment(submission=s, judge=j, rubric=rubric, status=JudgmentStatus.DONE)
            for s in submissions
            for j in judges
        ),
        batch_size=5000,
    )
    judge_scores = rng.integers(1, 11, size=(len(judgments), len(dimensions)))
    DimensionScore.objects.bulk_create(
        (
            DimensionScore(judgment=judgment, dimension=d, score=int(judge_scores[i, j]))
            for i, judgment in enumerate(judgments)
            for j, d in enumerate(dimensions)
        ),
        batch_size=10000,
    )
    return [s.id for s in submissions]


def export_csvs(folder: Path) -> tuple[Path, Path]:
    """The data in the notebook's two input files (untimed)."""
    from reviews.models import HumanReviewScore, ReviewStatus

    rows = HumanReviewScore.objects.filter(review__status=ReviewStatus.SUBMITTED).values_list(
        "review__reviewer_id",
        "review__submission__agent__name",
        "review__submission__task__slug",
        "dimension",
        "score",
    )
    human = pd.DataFrame(
        list(rows), columns=["reviewer_id", "model_name", "workshop_name", "dimension", "score"]
    )
    human = human.pivot_table(
        index=["reviewer_id", "model_name", "workshop_name"], columns="dimension", values="score"
    ).reset_index()
    human_path = folder / "human_review.csv"
    human.to_csv(human_path, index=False)
    from judging.selectors import done_scores

    llm_rows = done_scores().values_list(
        "judgment__submission__task__slug",
        "judgment__submission__agent__name",
        "judgment__judge__name",
        "dimension",
        "score",
    )
    llm = pd.DataFrame(
        list(llm_rows), columns=["workshop_name", "model_name", "judge", "dimension", "score"]
    )
    llm["score"] = llm["score"].astype(float)
    llm = (
        llm.groupby(["workshop_name", "model_name", "dimension"])["score"]
        .mean()
        .unstack("dimension")
        .reset_index()
    )
    llm_path = folder / "llm_judge.csv"
    llm.to_csv(llm_path, index=False)
    return human_path, llm_path


def notebook_way(human_path: Path, llm_path: Path, dimensions: list[str]) -> dict:
    """The published notebook's approach: pandas group-by, then scipy."""
    human = pd.read_csv(human_path)
    llm = pd.read_csv(llm_path)
    key = ["model_name", "workshop_name"]
    out = {}
    p_values = {}
    for dimension in dimensions:
        hh = []
        for _paper, group in human.groupby(key):
            values = group[dimension].tolist()
            hh += [abs(a - b) for a, b in itertools.combinations(values, 2)]
        merged = human[[*key, dimension]].merge(
            llm[[*key, dimension]], on=key, suffixes=("_h", "_llm")
        )
        hl = (merged[f"{dimension}_h"] - merged[f"{dimension}_llm"]).abs().tolist()
        test = stats.mannwhitneyu(hh, hl, alternative="two-sided")
        matrix = human.pivot_table(index="reviewer_id", columns=key, values=dimension)
        alpha_h = krippendorff.alpha(
            reliability_data=matrix.to_numpy(), level_of_measurement="ordinal"
        )
        llm_row = llm.set_index(key)[dimension].reindex(matrix.columns).to_numpy()[None, :]
        alpha_hl = krippendorff.alpha(
            reliability_data=np.vstack([matrix.to_numpy(), llm_row]),
            level_of_measurement="ordinal",
        )
        means = human.groupby(key)[dimension].mean().rename("h").reset_index()
        paired = means.merge(llm[[*key, dimension]], on=key)
        rho = stats.spearmanr(paired["h"], paired[dimension])
        # Bootstrap over papers, one resample at a time.
        per_paper = merged.assign(gap=hl).groupby(key)["gap"].agg(["sum", "count"])
        hh_per = (
            human.groupby(key)[dimension]
            .apply(
                lambda v: pd.Series(
                    {
                        "sum": sum(abs(a - b) for a, b in itertools.combinations(v, 2)),
                        "count": len(v) * (len(v) - 1) / 2,
                    }
                )
            )
            .unstack()
        )
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        boot_hh, boot_hl = [], []
        hl_sum, hl_n = per_paper["sum"].to_numpy(), per_paper["count"].to_numpy()
        hh_sum, hh_n = hh_per["sum"].to_numpy(), hh_per["count"].to_numpy()
        for _ in range(BOOTSTRAP_RESAMPLES):
            draw = rng.integers(0, len(hh_sum), len(hh_sum))
            boot_hh.append(hh_sum[draw].sum() / hh_n[draw].sum())
            boot_hl.append(hl_sum[draw].sum() / hl_n[draw].sum())
        out[dimension] = {
            "n_human_human": len(hh),
            "n_human_llm": len(hl),
            "u_statistic": float(test.statistic),
            "alpha_humans": alpha_h,
            "alpha_humans_llm": alpha_hl,
            "spearman_rho": rho.statistic,
            "ci_hh": np.percentile(boot_hh, [2.5, 97.5]),
            "ci_hl": np.percentile(boot_hl, [2.5, 97.5]),
        }
        p_values[dimension] = test.pvalue
    ordered = sorted(p_values, key=lambda dimension: p_values[dimension])
    running = 0.0
    for rank, dimension in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * p_values[dimension]))
        out[dimension]["p_value_holm"] = running
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: check that the script runs, in seconds"
    )
    args = parser.parse_args()
    if args.smoke:
        args.papers, args.repeat = 30, 2

    from django.core.cache import cache

    from reviews.selectors import agreement_for_stage
    from reviews.services import review_import_record

    test_name = f"perf_agreement_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = test_name
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    cache.clear()
    try:
        dimensions = [d["key"] for d in site_rubric().dimensions]
        started = time.perf_counter()
        papers = populate(args.papers, dimensions)
        print(
            f"data: {args.papers} papers x 3 reviews x {len(dimensions)} dimensions, 2 judges "
            f"({time.perf_counter() - started:.1f} s to create)"
        )
        with tempfile.TemporaryDirectory() as folder:
            human_path, llm_path = export_csvs(Path(folder))
            notebook_times = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                reference = notebook_way(human_path, llm_path, dimensions)
                notebook_times.append(time.perf_counter() - started)

        agreement_for_stage(stage="end2end")  # warm the connection and the imports
        user_model = get_user_model()
        site_times = []
        for i in range(args.repeat):
            # One new review, through the same service the pages and the import use.
            review_import_record(
                submission=_submission(papers[i]),
                reviewer=user_model.objects.create(username=f"perf-new-{i}"),
                scores={d: 5 for d in dimensions},
                ranges={d: (1, 10) for d in dimensions},
            )
            started = time.perf_counter()
            result = agreement_for_stage(stage="end2end")
            site_times.append(time.perf_counter() - started)

        overall = next(r for r in result.dimensions if r.dimension == "Overall")
        assert overall.n_human_llm == reference["Overall"]["n_human_llm"] + args.repeat

        client = Client()
        storages = {
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
        with override_settings(STORAGES=storages, ALLOWED_HOSTS=["testserver"]):
            assert client.get("/agreement/?stage=end2end").status_code == 200
            page_times, api_times = [], []
            for _ in range(20):
                started = time.perf_counter()
                response = client.get("/agreement/?stage=end2end")
                page_times.append(time.perf_counter() - started)
                assert response.status_code == 200
                started = time.perf_counter()
                client.get("/api/agreement/?stage=end2end")
                api_times.append(time.perf_counter() - started)

        notebook = statistics.median(notebook_times)
        site = statistics.median(site_times)
        page = statistics.median(page_times)
        api = statistics.median(api_times)
        print(f"notebook way (pandas group-by + scipy): {notebook * 1000:9.1f} ms (median)")
        print(f"site recompute after one new review:    {site * 1000:9.1f} ms (median)")
        print(f"cached dashboard page:                  {page * 1000:9.1f} ms (median)")
        print(f"cached API answer:                      {api * 1000:9.1f} ms (median)")
        print(f"recompute vs notebook: {notebook / site:.1f}x faster (goal: >= 1x)")
        print(f"cached page / recompute: {page / site:.3f} (goal: < 0.1)")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def _submission(submission_id: int):
    from submissions.models import Submission

    return Submission.objects.get(pk=submission_id)


if __name__ == "__main__":
    main()
