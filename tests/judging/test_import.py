"""`import_mlrbench` part `reviews`: every published MLR-Judge review becomes a
done, imported judgment of the submission it reviews."""

import csv
import json
import shutil
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.mlrbench_import import ImportOptions
from benchmark.models import Task
from benchmark.services import tasks_import
from common.bulk_writes import writes_deferred
from judging.mlrbench_import import reviews_part
from judging.models import (
    Judge,
    JudgingCondition,
    Judgment,
    JudgmentStatus,
    Rubric,
    SubmissionJudgingState,
)
from judging.selectors import stage_scores, submission_judging_state
from judging.services.rubrics import rubric_current
from submissions.models import Stage, SubmissionStatus

from .factories import AgentFactory, SubmissionFactory

pytestmark = pytest.mark.django_db

TASK = "iclr2025_bi_align"
IDEA_TASKS = ("iclr2023_bands", "icml2024_fminwild", "neurips2024_safegenai")
IDEA_MODELS = (
    "claude-3-7-sonnet-20250219",
    "deepseek-r1",
    "gemini-2.5-pro-preview-03-25",
    "ministral-8b",
    "o4-mini-2025-04-16",
    "qwen3-235b-a22b",
)
JUDGES = ("claude-3-7-sonnet-20250219", "gemini-2.5-pro-preview")


def submission_for(agent: str, task: str, stage: str, **kwargs):
    """What the runs part (order 20) creates for a published run."""
    return SubmissionFactory(
        agent=AgentFactory(name=agent),
        task=Task.objects.get(slug=task),
        stage=stage,
        status=SubmissionStatus.READY,
        **kwargs,
    )


def all_published_runs():
    for agent in ("claude", "codex", "gemini", "gemini-cli", "o4-mini", "ai-scientist-v2"):
        submission_for(agent, TASK, Stage.END2END)
    for agent in ("claude", "codex"):
        submission_for(agent, TASK, Stage.EXPERIMENT)
    for model in ("claude-3-7-sonnet-20250219", "gemini-2.5-pro-preview", "o4-mini-2025-04-16"):
        submission_for(model, TASK, Stage.PAPER)
    for task in IDEA_TASKS:
        for model in IDEA_MODELS:
            submission_for(model, task, Stage.IDEA)
            submission_for(model, task, Stage.PROPOSAL)


@pytest.fixture
def tasks(mlrbench_data):
    tasks_import(path=mlrbench_data)


def published(mlrbench_data: Path, judge: str, name: str) -> dict:
    path = mlrbench_data / f"agent_reviews/subset_reviews_{judge}/{TASK}/{name}"
    return json.loads(path.read_text())


def test_end2end_claude_on_bi_align_gets_both_judges_published_scores(mlrbench_data, tasks):
    claude = submission_for("claude", TASK, Stage.END2END)

    report = reviews_part(mlrbench_data, ImportOptions())

    judgments = Judgment.objects.filter(submission=claude, condition=JudgingCondition.WITH_CODE)
    assert {j.judge.name for j in judgments} == set(JUDGES)
    for judgment in judgments:
        review = published(mlrbench_data, judgment.judge.name, "review_claude.json")
        assert judgment.status == JudgmentStatus.DONE and judgment.imported
        assert {s.dimension: s.score for s in judgment.scores.all()} == {
            key: Decimal(review[key]["score"])
            for key in ("Clarity", "Novelty", "Soundness", "Significance", "Overall")
        }
        assert judgment.confidence == review["Confidence"]
        assert judgment.strengths == review["Overall"]["strengths"]
        assert (
            judgment.scores.get(dimension="Soundness").justification
            == (review["Soundness"]["justification"])
        )
    # The published LLM score of the paper is the mean of the two judges.
    with (mlrbench_data / "human_eval/llm_judge.csv").open() as handle:
        row = next(r for r in csv.DictReader(handle) if r["model_name"] == "claude")
    means = stage_scores(submission_ids=[claude.pk])[claude.pk]
    for dimension in ("Clarity", "Novelty", "Soundness", "Significance", "Overall"):
        assert means[dimension] == Decimal(row[dimension]), dimension
    assert submission_judging_state(submission_id=claude.pk) == SubmissionJudgingState.JUDGED
    # Reviews of runs that were not imported are listed, not guessed.
    assert report.counts["judgments created"] == 2
    assert any(
        "review_codex.json: no end2end submission of agent 'codex'" in p for p in report.problems
    )


def test_every_published_review_is_imported_once(mlrbench_data, tasks):
    all_published_runs()

    first = reviews_part(mlrbench_data, ImportOptions())

    assert first.problems == []
    # 94 in agent_reviews/, AI Scientist v2's two score and two hallucination reviews,
    # and the two hallucination reviews beside MLR-Agent's o4-mini run.
    assert first.counts["judgments created"] == 100
    assert first.counts["judges created"] == 2
    assert Judgment.objects.filter(status=JudgmentStatus.DONE, imported=True).count() == 100
    o4_mini = Judgment.objects.filter(
        submission__agent__name="o4-mini", submission__stage=Stage.END2END, kind="hallucination"
    )
    assert sorted(o4_mini.values_list("judge__name", "has_hallucination")) == [
        ("claude-3-7-sonnet-20250219", True),
        ("gemini-2.5-pro-preview", True),
    ]
    assert sum(j.findings.count() for j in o4_mini) == 4 + 6  # one per listed hallucination
    # One judge for the three names of Gemini; imported judges are never queued.
    assert sorted(Judge.objects.values_list("name", "is_active")) == [
        ("claude-3-7-sonnet-20250219", False),
        ("gemini-2.5-pro-preview", False),
    ]
    no_code = Judgment.objects.get(
        submission__agent__name="o4-mini",
        condition=JudgingCondition.NO_CODE,
        judge__name="claude-3-7-sonnet-20250219",
    )
    assert no_code.submission.stage == Stage.END2END
    assert no_code.scores.count() == 5
    # Kept apart from the default score.
    o4 = no_code.submission
    with_code = stage_scores(submission_ids=[o4.pk])[o4.pk]
    paper_only = stage_scores(submission_ids=[o4.pk], condition=JudgingCondition.NO_CODE)[o4.pk]
    assert with_code != paper_only
    experiment = Judgment.objects.get(
        submission__agent__name="claude",
        submission__stage=Stage.EXPERIMENT,
        judge__name="gemini-2.5-pro-preview",
    )
    assert experiment.has_hallucination is True
    assert "synthetic" in experiment.hallucination_details
    idea = Judgment.objects.filter(submission__stage=Stage.IDEA).first()
    assert idea.scores.filter(dimension="Overall").exists()  # from OverallAssessment
    # Imported judgments point at the official prompt, kept inactive.
    official = Rubric.objects.get(pk=idea.rubric_id)
    assert not official.is_active and "RESEARCH_IDEA_RUBRIC" in official.source
    assert rubric_current(stage=Stage.IDEA).version == 1

    second = reviews_part(mlrbench_data, ImportOptions())

    assert second.counts == {"unchanged": 100}
    assert Judgment.objects.count() == 100


def test_an_imported_review_costs_its_own_rows_and_no_lookup(mlrbench_data, tasks):
    """Issue 28: a full clone has thousands of reviews. A new one is written
    without a lookup of its own (the keys are read once) nor a receiver's query
    per row (the import invalidates boards and statistics once, at its end)."""
    all_published_runs()

    with writes_deferred(), CaptureQueriesContext(connection) as queries:
        report = reviews_part(mlrbench_data, ImportOptions())

    assert report.counts["judgments created"] == 100
    # Per review: the judgment and its scores, in a transaction (a savepoint and
    # its release); the rubrics, judges and panel once.
    assert len(queries) <= 4 * 100 + 80, len(queries)


def test_unknown_files_bad_reviews_and_missing_runs_are_problems(mlrbench_data, tmp_path):
    root = tmp_path / "clone"
    (root / "tasks").mkdir(parents=True)
    shutil.copy(mlrbench_data / f"tasks/{TASK}.md", root / "tasks")
    source = mlrbench_data / f"agent_reviews/subset_reviews_{JUDGES[0]}/{TASK}"
    target = root / f"agent_reviews/subset_reviews_{JUDGES[0]}/{TASK}"
    (target / "experiments").mkdir(parents=True)
    shutil.copy(source / "review_claude.json", target)
    shutil.copy(source / "review_gemini.json", target)
    broken = json.loads((source / "experiments/claude.json").read_text())
    del broken["Hallucination"]
    (target / "experiments/claude.json").write_text(json.dumps(broken))
    (root / "agent_reviews/notes.txt").write_text("not a review")
    tasks_import(path=root)
    older = submission_for("claude", TASK, Stage.END2END)
    newer = submission_for("claude", TASK, Stage.END2END, version=2)
    submission_for("claude", TASK, Stage.EXPERIMENT)

    out = StringIO()
    call_command("import_mlrbench", str(root), stdout=out, stderr=out)

    output = out.getvalue()
    assert "reviews: 1 judges created, 1 judgments created" in output
    assert "agent_reviews/notes.txt: not in a known review folder" in output
    assert 'experiments/claude.json: "Hallucination" is missing' in output
    assert "review_gemini.json: no end2end submission of agent 'gemini'" in output
    # The newest version of the run is the one the review belongs to.
    assert Judgment.objects.get().submission == newer
    assert not older.judgments.exists()


def test_ai_scientist_reviews_are_score_and_typed_hallucination_judgments(mlrbench_data, tasks):
    paper = submission_for("ai-scientist-v2", TASK, Stage.END2END)

    report = reviews_part(mlrbench_data, ImportOptions())

    assert report.counts["judgments created"] == 4
    folder = mlrbench_data / f"ai_scientist_v2_papers/o4-mini/{TASK}"
    scores = Judgment.objects.filter(submission=paper, kind="score")
    assert {j.judge.name for j in scores} == set(JUDGES)
    gemini = scores.get(judge__name="gemini-2.5-pro-preview")
    published_review = json.loads((folder / "review_gemini-2.5-pro-preview-05-06.json").read_text())
    assert gemini.scores.get(dimension="Overall").score == published_review["Overall"]["score"]
    reviews = Judgment.objects.filter(submission=paper, kind="hallucination")
    assert {j.judge.name for j in reviews} == set(JUDGES)
    for review in reviews:
        published_file = folder / f"review_hallucination_{review.judge.name}.json"
        data = json.loads(published_file.read_text())
        assert review.has_hallucination is True and review.confidence == data["confidence"]
        assert review.overall_assessment == data["overall_assessment"]
        assert review.rubric.kind == "hallucination" and not review.rubric.is_active
        assert "HALLUCINATION_RUBRIC" in review.rubric.source
        assert [(f.type, f.evidence) for f in review.findings.all()] == [
            (item["type"].lower().replace(" ", "_"), item["evidence"])
            for item in data["hallucinations"]
        ]
        assert not review.scores.exists()
    # The stage score is the score reviews' alone.
    assert stage_scores(submission_ids=[paper.pk])[paper.pk]["Overall"] == Decimal(
        sum(j.scores.get(dimension="Overall").score for j in scores) / 2
    )


def test_an_experiment_reviews_verdict_is_a_finding_without_a_type(mlrbench_data, tasks):
    claude = submission_for("claude", TASK, Stage.EXPERIMENT)

    reviews_part(mlrbench_data, ImportOptions())

    flagged = Judgment.objects.get(submission=claude, judge__name="gemini-2.5-pro-preview")
    (finding,) = flagged.findings.all()
    assert finding.type == "" and "synthetic" in finding.description
    clean = Judgment.objects.get(submission=claude, judge__name="claude-3-7-sonnet-20250219")
    assert clean.has_hallucination is False and not clean.findings.exists()
