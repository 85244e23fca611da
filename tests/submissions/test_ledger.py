"""The provenance ledger stored at intake and import (submissions/ledger.py) and
computed again for stored submissions (`manage.py provenance_compute`)."""

from io import StringIO

import pytest
from django.core.management import call_command

from submissions.ledger import submission_ledger, submission_ledger_compute
from submissions.models import DerivedArtifact, DerivedKind, Submission, SubmissionInput

pytestmark = pytest.mark.django_db


def _end2end(agent: str) -> Submission:
    return Submission.objects.get(stage="end2end", agent__name=agent)


def test_import_stores_each_paper_s_ledger_with_the_paper(sample, client):
    run = _end2end("claude")
    row = DerivedArtifact.objects.get(artifact__submission=run, kind=DerivedKind.PROVENANCE)
    assert row.artifact.path == "results/paper.md"
    ledger = submission_ledger(submission=run, compute=False)
    assert ledger["status"] == "traced"
    assert ledger["traces"] == ["claude_output.json"]
    assert ledger["counts"]["measured"] > 0
    assert sum(ledger["counts"].values()) == len(ledger["entries"]) > 0
    # Unlinked from its experiment run, a write-up's paper has no trace to read,
    # and says so, never clean.
    writeup = Submission.objects.get(stage="paper", agent__name="o4-mini-2025-04-16")
    SubmissionInput.objects.filter(submission=writeup).delete()
    ledger = submission_ledger_compute(submission=writeup)
    assert (ledger["status"], ledger["verdict"]) == ("no trace", "unknown")
    assert ledger["note"] == "no trace: provenance unknown"
    body = client.get(f"/api/submissions/{writeup.pk}/provenance/").json()
    assert (body["known"], body["provenance"], body["counts"]) == (
        False,
        "no trace: provenance unknown",
        None,
    )


def test_end_to_end_runs_and_ai_scientist_v2(sample):
    o4 = Submission.objects.get(stage="end2end", agent__name="o4-mini")
    ledger = submission_ledger(submission=o4, compute=False)
    assert (ledger["status"], ledger["verdict"]) == ("traced", "fabricated")
    scientist = Submission.objects.get(stage="end2end", agent__name="ai-scientist-v2")
    ledger = submission_ledger(submission=scientist, compute=False)
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
    assert submission_ledger(submission=paper, compute=False)["status"] == "traced"
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
    assert (ledger["status"], ledger["verdict"]) == ("not computed", "unknown")
    settings.INTAKE_WORK_SECONDS = 60
    call_command("provenance_compute", stdout=StringIO())
    assert submission_ledger(submission=paper, compute=False)["status"] == "log only"


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
    assert body["known"] is True
    assert body["provenance"] == ", ".join(f"{body['counts'][k]} {k}" for k in body["counts"])


def test_the_api_says_unknown_without_a_paper_and_404s_in_the_one_error_shape(sample, client):
    experiment = Submission.objects.get(stage="experiment", agent__name="claude")
    body = client.get(f"/api/submissions/{experiment.pk}/provenance/").json()
    assert (body["status"], body["verdict"], body["entries"]) == ("no paper", "unknown", [])
    assert (body["known"], body["counts"]) == (False, None)
    missing = client.get("/api/submissions/999999/provenance/")
    assert missing.status_code == 404
    assert set(missing.json()["errors"][0]) >= {"field", "code", "message"}


def test_the_paper_view_shows_the_counts_and_each_number_s_class(sample, client):
    paper = _end2end("claude")
    ledger = submission_ledger(submission=paper, compute=False)
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


def test_the_import_builds_each_write_up_on_its_folder_s_experiment_run_and_reads_its_trace(
    sample, mlrbench_data
):
    """`experiments_and_writeups/<agent>/<task>/results/paper_<model>.md` was
    written from that folder's experiment run: the import records it as the
    write-up's input, and the ledger stored at intake reads that run's trace."""
    experiment = Submission.objects.get(stage="experiment", agent__name="claude")
    writeups = Submission.objects.filter(stage="paper", based_on=experiment)
    # claude-3-7-sonnet's, gemini-2.5-pro's and o4-mini's write-ups of that folder
    assert (
        writeups.count()
        == len(
            list(
                mlrbench_data.glob(
                    "agent_results/experiments_and_writeups/claude/iclr2025_bi_align/results/paper_*.md"
                )
            )
        )
        == 3
    )
    writeup = Submission.objects.get(stage="paper", agent__name="claude-3-7-sonnet-20250219")
    assert list(writeup.based_on.all()) == [experiment]
    ledger = submission_ledger(submission=writeup, compute=False)
    assert ledger["status"] == "traced"
    assert ledger["traces"] == [f"based_on/{experiment.pk}/claude_output.json"]
    assert ledger["counts"]["measured"] > 0
    assert submission_ledger_compute(submission=writeup) == ledger


def test_a_write_up_stored_before_the_link_is_linked_by_the_next_import(sample, mlrbench_data):
    writeup = Submission.objects.get(stage="paper", agent__name="claude-3-7-sonnet-20250219")
    SubmissionInput.objects.filter(submission=writeup).delete()
    assert submission_ledger_compute(submission=writeup)["status"] == "no trace"
    call_command("import_mlrbench", str(mlrbench_data), stdout=StringIO(), stderr=StringIO())
    assert writeup.based_on.get().stage == "experiment"
    ledger = submission_ledger(submission=writeup, compute=False)
    assert ledger["status"] == "traced"


def test_a_paper_without_result_numbers_reads_no_file_and_the_files_past_the_cap_are_named(
    monkeypatch,
):
    """The upload's process reads the run's files for the ledger: none for a
    paper that reports no result number (6,001 data files cost 74 MiB before),
    and at most SEARCHED_MAX_BYTES in all, the logs first."""
    from submissions import ledger as ledger_module
    from submissions.ledger import RunFile, ledger_inputs

    def never(limit):
        raise AssertionError("read")

    prose = RunFile("results/paper.md", "paper", lambda limit: b"# P\n\nNo table.\n")
    data = [RunFile(f"data/d{n}.txt", "data", never) for n in range(3)]
    inputs = ledger_inputs([prose, *data], {})
    assert [item.text for item in inputs["files"]] == ["", "", ""]
    assert inputs["unsearched"] == 0

    monkeypatch.setattr(ledger_module, "SEARCHED_MAX_BYTES", 9)
    table = b"| A | B |\n|---|---|\n| x | 0.91 |\n"
    paper = RunFile("results/paper.md", "paper", lambda limit: table)
    log = RunFile("results/log.txt", "log", lambda limit: b"acc 0.91\n"[:limit])
    numbers = RunFile("data/d.txt", "data", never)
    inputs = ledger_inputs([paper, numbers, log], {})
    assert [(item.path, item.text) for item in inputs["files"]] == [
        ("results/log.txt", "acc 0.91\n"),
        ("data/d.txt", ""),
    ]
    assert inputs["unsearched"] == 1
