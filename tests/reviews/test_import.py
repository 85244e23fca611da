"""The `human scores` part of import_mlrbench: human_eval/human_review.csv
becomes submitted reviews by inactive placeholder reviewers; a duplicated
reviewer/paper pair keeps its first row (the others listed, and named on the
agreement page) unless --strict-human-reviews refuses the whole file;
unknown agents and tasks are listed. And the CSV export gives the same
columns back, reviewers numbered."""

import csv
import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils import timezone

from benchmark.mlrbench_import import ImportOptions, import_parts
from reviews.mlrbench_import import human_scores_part
from reviews.models import HumanReview, ImportedReviewSkip, ReviewStatus
from reviews.services import assignments_generate, review_round_create
from submissions.models import Stage

from .factories import AgentFactory, SubmissionFactory, TaskFactory, TeamFactory

pytestmark = pytest.mark.django_db

AGENTS = ["claude", "codex", "gemini", "gemini-cli", "o4-mini"]
HEADER = "reviewer_id,model_name,workshop_name,Novelty,Clarity,Soundness,Significance,Overall\n"


@pytest.fixture
def end2end_runs():
    """What the runs part (order 20) would have made: one end2end submission per agent."""
    task = TaskFactory(
        slug="iclr2025_bi_align", title="Workshop on Bidirectional Human-AI Alignment"
    )
    team = TeamFactory(name="MLR-Agent", slug="mlr-agent")
    return {
        name: SubmissionFactory(agent=AgentFactory(name=name, team=team), task=task)
        for name in AGENTS
    }


def _clone(tmp_path: Path, rows: str) -> Path:
    (tmp_path / "human_eval").mkdir(parents=True)
    (tmp_path / "human_eval" / "human_review.csv").write_text(HEADER + rows, encoding="utf-8")
    return tmp_path


def _scores(review: HumanReview) -> dict[str, int]:
    return dict(review.scores.values_list("dimension", "score"))


def test_the_part_is_registered_after_judging():
    parts = {part.name: part.order for part in import_parts()}
    assert parts["human scores"] == 40
    assert parts["tasks"] < 40


def test_sample_human_reviews_become_submitted_reviews(mlrbench_data, end2end_runs, client):
    # The sample file has no reviewer scoring a paper twice.
    with (mlrbench_data / "human_eval" / "human_review.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    keys = [(r["reviewer_id"], r["model_name"], r["workshop_name"]) for r in rows]
    assert len(keys) == len(set(keys)) == 5

    report = human_scores_part(mlrbench_data, ImportOptions())

    assert report.problems == []
    assert report.counts == {"reviews created": 5}
    reviews = HumanReview.objects.select_related("reviewer", "submission__agent")
    assert reviews.count() == 5
    assert all(r.status == ReviewStatus.SUBMITTED and r.imported for r in reviews)
    for row in rows:
        review = reviews.get(
            reviewer__username=f"mlrbench-reviewer-{row['reviewer_id']}",
            submission=end2end_runs[row["model_name"]],
        )
        assert _scores(review) == {
            d: int(row[d]) for d in ("Novelty", "Clarity", "Soundness", "Significance", "Overall")
        }
    placeholder = reviews.get(
        reviewer__username="mlrbench-reviewer-6", submission=end2end_runs["gemini"]
    ).reviewer
    assert not placeholder.is_active and not placeholder.has_usable_password()
    assert not client.login(request=HttpRequest(), username="mlrbench-reviewer-6", password="")
    assert placeholder.reviewer_profile.is_placeholder

    # Idempotent: the second import changes nothing and says so.
    again = human_scores_part(mlrbench_data, ImportOptions())
    assert again.counts == {"reviews unchanged": 5} and again.changed == 0
    assert HumanReview.objects.count() == 5

    # Placeholders are never given papers to review.
    review_round = review_round_create(
        name="r", stage=Stage.END2END, due_at=placeholder.date_joined, reviewers_per_paper=1
    )
    assert assignments_generate(review_round=review_round).created == []


DUPLICATED = (
    "3,claude,iclr2025_bi_align,5,5,2,4,3\n"
    "3,gemini,iclr2025_bi_align,6,7,2,6,4\n"
    "3,claude,iclr2025_bi_align,9,9,9,9,9\n"
    "6,o4-mini,iclr2025_bi_align,8,3,1,1,2\n"
)


def test_strict_human_reviews_refuses_the_whole_file(tmp_path, end2end_runs):
    report = human_scores_part(
        _clone(tmp_path, DUPLICATED), ImportOptions(strict_human_reviews=True)
    )
    assert HumanReview.objects.count() == 0
    listed = [p for p in report.problems if "appears more than once" in p]
    assert len(listed) == 2
    assert "line 2:" in listed[0] and "line 4:" in listed[1]
    assert "(lines 2, 4)" in listed[0]
    assert any("--strict-human-reviews" in p for p in report.problems)
    assert not ImportedReviewSkip.objects.exists()


def test_by_default_the_first_row_is_kept_and_the_skipped_listed(tmp_path, end2end_runs, client):
    report = human_scores_part(_clone(tmp_path, DUPLICATED), ImportOptions())
    assert report.counts["reviews created"] == 3
    assert report.counts["duplicate rows skipped"] == 1
    assert report.problems == []
    assert report.notes == [
        "human_eval/human_review.csv line 4: skipped, duplicate of line 2 "
        "(reviewer 3, agent claude, task iclr2025_bi_align)"
    ]
    review = HumanReview.objects.get(
        reviewer__username="mlrbench-reviewer-3", submission=end2end_runs["claude"]
    )
    assert _scores(review)["Overall"] == 3  # the first row, not the second
    page = client.get("/agreement/").content.decode()
    assert (
        "human_eval/human_review.csv line 4: reviewer 3, agent claude, task iclr2025_bi_align "
        "(duplicate of line 2)" in page
    )
    # A second import records the same skip once, not twice.
    human_scores_part(tmp_path, ImportOptions())
    assert ImportedReviewSkip.objects.count() == 1


def test_the_command_keeps_the_first_row_and_strict_refuses(tmp_path, end2end_runs, mlrbench_data):
    clone = _clone(tmp_path, DUPLICATED)
    (clone / "tasks").mkdir()
    (clone / "tasks" / "iclr2025_bi_align.md").write_text(
        (mlrbench_data / "tasks" / "iclr2025_bi_align.md").read_text()
    )
    out, err = io.StringIO(), io.StringIO()
    call_command("import_mlrbench", str(clone), "--strict-human-reviews", stdout=out, stderr=err)
    assert HumanReview.objects.count() == 0
    assert "appears more than once" in err.getvalue()
    call_command("import_mlrbench", str(clone), stdout=out, stderr=err)
    assert HumanReview.objects.count() == 3
    assert "human scores: 1 duplicate rows skipped, 3 reviews created" in out.getvalue()
    assert (
        "  human scores: human_eval/human_review.csv line 4: skipped, duplicate of line 2"
        in out.getvalue()
    )
    # The old flag names the default, so scripts that pass it still run.
    out = io.StringIO()
    call_command("import_mlrbench", str(clone), "--skip-duplicates", stdout=out, stderr=err)
    assert "3 reviews unchanged" in out.getvalue()


def test_unknown_agents_tasks_and_bad_scores_are_listed_not_guessed(tmp_path, end2end_runs):
    rows = (
        "3,claude,iclr2025_bi_align,5,5,2,4,3\n"
        "3,Claude-3.7,iclr2025_bi_align,5,5,2,4,3\n"
        "4,codex,iclr2025_bi_alignment,5,5,2,4,3\n"
        "5,gemini,iclr2025_bi_align,5,11,2,4,3\n"
        "5,o4-mini,iclr2025_bi_align,5,seven,2,4,3\n"
    )
    report = human_scores_part(_clone(tmp_path, rows), ImportOptions())
    assert report.counts == {"reviews created": 1}
    problems = "\n".join(report.problems)
    assert "line 3: unknown agent 'Claude-3.7'" in problems
    assert "line 4: unknown task 'iclr2025_bi_alignment'" in problems
    assert "line 5: Clarity='11' is not a whole number 1-10" in problems
    assert "line 6: Clarity='seven'" in problems
    assert HumanReview.objects.get().submission == end2end_runs["claude"]


def test_export_gives_the_csv_format_back_with_reviewers_numbered(
    mlrbench_data, end2end_runs, client, organiser
):
    human_scores_part(mlrbench_data, ImportOptions())
    client.force_login(organiser)
    response = client.get("/reviews/export.csv?stage=end2end")
    assert response["Content-Type"].startswith("text/csv")
    exported = list(csv.reader(io.StringIO(response.content.decode())))
    original = list(csv.reader((mlrbench_data / "human_eval" / "human_review.csv").open()))
    assert exported[0] == original[0]
    # Same rows once reviewer ids are replaced by numbers; no account name anywhere.
    renumber = {"3": "1", "6": "2"}
    expected = sorted([renumber[r[0]], *r[1:]] for r in original[1:])
    assert sorted(exported[1:]) == expected
    assert "mlrbench-reviewer" not in response.content.decode()
    api = client.get("/api/reviews/export/?stage=end2end", HTTP_ACCEPT="text/csv")
    assert api.status_code == 200 and api.content == response.content


def test_the_export_escapes_a_formula_in_its_header(client, organiser):
    # A dimension is a column of the header: it goes through the one CSV writer too.
    review = HumanReview.objects.create(
        submission=SubmissionFactory(stage=Stage.END2END),
        reviewer=organiser,
        status=ReviewStatus.SUBMITTED,
        submitted_at=timezone.now(),
    )
    review.scores.create(dimension="=HYPERLINK(1)", score=5)
    client.force_login(organiser)

    response = client.get("/reviews/export.csv?stage=end2end")

    header, row = list(csv.reader(io.StringIO(response.content.decode())))
    assert header[-1] == "'=HYPERLINK(1)"
    assert row[-1] == "5"


def test_a_formula_for_an_agent_is_listed_not_imported(tmp_path):
    # Agent names cannot hold a formula (a database constraint), so a row naming
    # one is an unknown agent; the export's cells go through common.csv_cells.
    task = TaskFactory(slug="iclr2025_bi_align")
    SubmissionFactory(agent=AgentFactory(name="claude"), task=task)
    (tmp_path / "human_eval").mkdir()
    (tmp_path / "human_eval" / "human_review.csv").write_text(
        HEADER + '1,"=HYPERLINK(""http://x"")",iclr2025_bi_align,5,5,5,5,5\n'
    )
    report = human_scores_part(tmp_path, ImportOptions())
    assert report.counts.get("reviews created", 0) == 0
    assert any("HYPERLINK" in problem for problem in report.problems)
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentFactory(name='=HYPERLINK("http://x")')
