"""The provenance ledger stored at intake and import (submissions/ledger.py) and
computed again for stored submissions (`manage.py provenance_compute`)."""

from io import StringIO

import pytest
from django.core.management import call_command

from submissions.ledger import submission_ledger
from submissions.models import DerivedArtifact, DerivedKind, Submission

pytestmark = pytest.mark.django_db


def _end2end(agent: str) -> Submission:
    return Submission.objects.get(stage="end2end", agent__name=agent)


def test_import_stores_each_paper_s_ledger_with_the_paper(sample):
    run = _end2end("claude")
    row = DerivedArtifact.objects.get(artifact__submission=run, kind=DerivedKind.PROVENANCE)
    assert row.artifact.path == "results/paper.md"
    ledger = submission_ledger(submission=run, compute=False)
    assert ledger is not None
    assert ledger["status"] == "traced"
    assert ledger["traces"] == ["claude_output.json"]
    assert ledger["counts"]["measured"] > 0
    assert sum(ledger["counts"].values()) == len(ledger["entries"]) > 0
    # The import links no write-up to its experiment run: its paper has no trace
    # to read, and says so, never clean.
    writeup = Submission.objects.get(stage="paper", agent__name="o4-mini-2025-04-16")
    ledger = submission_ledger(submission=writeup, compute=False)
    assert ledger is not None
    assert (ledger["status"], ledger["verdict"]) == ("no trace", "unknown")
    assert ledger["note"] == "no trace: provenance unknown"


def test_end_to_end_runs_and_ai_scientist_v2(sample):
    o4 = Submission.objects.get(stage="end2end", agent__name="o4-mini")
    ledger = submission_ledger(submission=o4, compute=False)
    assert ledger is not None
    assert (ledger["status"], ledger["verdict"]) == ("traced", "fabricated")
    scientist = Submission.objects.get(stage="end2end", agent__name="ai-scientist-v2")
    ledger = submission_ledger(submission=scientist, compute=False)
    assert ledger is not None
    assert (ledger["status"], ledger["verdict"]) == ("no paper", "unknown")
    assert "PDF" in ledger["note"]
    experiment = Submission.objects.get(stage="experiment", agent__name="claude")
    assert submission_ledger(submission=experiment) is None  # no paper: no ledger


def test_the_command_computes_missing_ledgers_and_says_what_it_found(sample):
    paper = _end2end("codex")
    DerivedArtifact.objects.filter(kind=DerivedKind.PROVENANCE).delete()
    assert submission_ledger(submission=paper, compute=False) is None
    out = StringIO()
    call_command("provenance_compute", "--submission", str(paper.pk), stdout=out)
    assert f"submission {paper.pk}: traced, " in out.getvalue()
    assert "1 ledgers computed" in out.getvalue()
    assert (ledger := submission_ledger(submission=paper, compute=False))
    assert ledger["status"] == "traced"
    # Nothing missing any more: a second run computes nothing.
    out = StringIO()
    call_command("provenance_compute", "--submission", str(paper.pk), stdout=out)
    assert "0 ledgers computed" in out.getvalue()


def test_a_budget_already_spent_stores_not_computed_never_clean(sample, settings):
    paper = _end2end("gemini-cli")
    DerivedArtifact.objects.filter(kind=DerivedKind.PROVENANCE).delete()
    settings.INTAKE_WORK_SECONDS = 0
    call_command("provenance_compute", stdout=StringIO())
    ledger = submission_ledger(submission=paper, compute=False)
    assert ledger is not None
    assert (ledger["status"], ledger["verdict"]) == ("not computed", "unknown")
    settings.INTAKE_WORK_SECONDS = 60
    call_command("provenance_compute", stdout=StringIO())
    assert (ledger := submission_ledger(submission=paper, compute=False))
    assert ledger["status"] == "log only"


def test_the_api_answers_one_entry_per_number_with_its_class_and_evidence(sample, client):
    paper = _end2end("claude")
    answer = client.get(f"/api/submissions/{paper.pk}/provenance/")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["submission"], body["status"]) == (paper.pk, "traced")
    assert body["verdict"] in ("fabricated", "not fabricated")
    entry = body["entries"][0]
    assert set(entry) == {"text", "value", "where", "class", "common", "evidence"}
    assert entry["where"].startswith("results/paper.md:")
    assert {item["class"] for item in body["entries"]} <= {
        "measured",
        "derived",
        "hard-coded",
        "written",
        "untraced",
    }
    assert sum(body["counts"].values()) == len(body["entries"])


def test_the_api_says_unknown_without_a_paper_and_404s_in_the_one_error_shape(sample, client):
    experiment = Submission.objects.get(stage="experiment", agent__name="claude")
    body = client.get(f"/api/submissions/{experiment.pk}/provenance/").json()
    assert (body["status"], body["verdict"], body["entries"]) == ("no paper", "unknown", [])
    missing = client.get("/api/submissions/999999/provenance/")
    assert missing.status_code == 404
    assert set(missing.json()["errors"][0]) >= {"field", "code", "message"}


def test_the_paper_view_shows_the_counts_and_each_number_s_class(sample, client):
    paper = _end2end("claude")
    ledger = submission_ledger(submission=paper, compute=False)
    assert ledger is not None
    page = client.get(paper.get_absolute_url()).content.decode()
    assert 'data-testid="provenance"' in page
    assert f"{ledger['counts']['measured']} measured, " in page
    assert 'data-class="measured"' in page


def test_the_fabrication_page_has_the_third_detector_and_its_rule(sample, client):
    page = client.get("/fabrication/?stage=end2end").content.decode()
    assert 'data-testid="provenance-detector"' in page
    assert "at least one result number of two or more significant digits" in page
    assert "o4-mini" in page.lower()


def test_a_release_carries_the_ledgers_of_its_submissions(sample, client):
    from leaderboard.releases import release_create

    release_create(name="v1")
    data = client.get("/api/releases/v1/").json()
    provenance = data["provenance"]
    assert provenance["verdicts"]["header"][:3] == ["submission_id", "status", "verdict"]
    released = {row[0] for row in data["submissions"]["rows"]}
    verdicts = {row[0]: row for row in provenance["verdicts"]["rows"]}
    assert set(verdicts) <= released
    claude = _end2end("claude").pk
    if claude in released:
        assert verdicts[claude][1] == "traced"
        assert any(row[0] == claude for row in provenance["entries"]["rows"])


def test_a_write_up_built_on_its_experiment_run_reads_that_run_s_trace(sample):
    from submissions.ledger import submission_ledger_compute
    from submissions.models import SubmissionInput

    writeup = Submission.objects.get(stage="paper", agent__name="claude-3-7-sonnet-20250219")
    experiment = Submission.objects.get(stage="experiment", agent__name="claude")
    SubmissionInput.objects.create(submission=writeup, based_on=experiment, position=0)
    ledger = submission_ledger_compute(submission=writeup)
    assert ledger["status"] == "traced"
    assert ledger["traces"] == [f"based_on/{experiment.pk}/claude_output.json"]
    assert ledger["counts"]["measured"] > 0
    assert submission_ledger(submission=writeup, compute=False) == ledger
