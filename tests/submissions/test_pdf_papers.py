"""PDF papers are first-class: an upload may carry `results/paper.pdf`; its text is
extracted once at intake into a stored derived artifact; the artifact page shows
the browser's viewer and that text; a PDF that cannot be read is refused at
intake with its name and why, leaving nothing behind."""

import re

import pytest

from submissions.models import Artifact, ArtifactKind, DerivedArtifact, DerivedKind, Submission
from submissions.pdf_text import pdf_text_of
from submissions.pdf_worker import margin_numbers_drop
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory
from tests.benchmark.runs import SAMPLE_TASK, zip_entries
from tests.errors import error_messages
from tests.support.uploads import upload

pytestmark = [pytest.mark.django_db, pytest.mark.backends]

SCIENTIST = "ai_scientist_v2_papers/o4-mini/iclr2025_bi_align"


@pytest.fixture
def owner():
    user = UserFactory()
    AgentFactory(name="pdf-agent", team=TeamFactory(members=[user]), o4_mini=True)
    TaskFactory(slug=SAMPLE_TASK)
    return user


def test_a_pdf_paper_is_read_once_at_intake_and_shown_with_its_text(
    client, owner, store, mlrbench_data, tmp_path
):
    pdf = (mlrbench_data / SCIENTIST / "iclr2025_bi_align.pdf").read_bytes()
    archive = zip_entries(
        tmp_path / "run.zip",
        {"results/paper.pdf": pdf, "code/run.py": b"print(1)\n", "results/log.txt": b"ok\n"},
    )

    client.force_login(owner)
    response = upload(client, archive, agent="pdf-agent")

    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    paper = Artifact.objects.get(submission=submission, path="results/paper.pdf")
    assert paper.kind == ArtifactKind.PAPER
    derived = DerivedArtifact.objects.get(artifact=paper, kind=DerivedKind.PDF_TEXT)
    assert derived.pages == 4 and not derived.truncated
    text = pdf_text_of(paper)
    assert text is not None
    assert "CO-ADAPTIVE EXPLANATION INTERFACES" in text
    # The ICLR template's margin line numbers (000, 001, ...) are dropped from the
    # text; the stored PDF keeps them.
    assert text.startswith("Under review as a workshop paper at ICLR 2025")
    assert not re.search(r"(?m)^0[0-9]{2}$", text)
    assert paper.size == len(pdf)
    # Stored outside the run's folder: never one of the agent's files.
    assert not store.exists(f"submissions/{submission.pk}/results/paper.pdf.txt")
    assert store.exists(f"derived/{submission.pk}/results/paper.pdf.txt")

    page = client.get(f"/submissions/{submission.pk}/files/results/paper.pdf")
    html = page.content.decode()
    assert 'data-testid="pdf-viewer"' in html and "CO-ADAPTIVE EXPLANATION" in html
    raw = client.get(f"/submissions/{submission.pk}/raw/results/paper.pdf")
    assert raw["Content-Type"] == "application/pdf"
    assert raw["X-Content-Type-Options"] == "nosniff"
    assert "default-src 'none'" in raw["Content-Security-Policy"]
    # The submission page shows the paper as the PDF and its text.
    detail = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'data-testid="pdf-text"' in detail


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"this is not a pdf at all", "not a PDF file"),
        (b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage", "cannot be read"),
    ],
)
def test_a_bad_pdf_is_refused_at_intake_with_a_clear_message(
    client, owner, store, tmp_path, data, reason
):
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.pdf": data})

    client.force_login(owner)
    response = upload(client, archive, agent="pdf-agent")

    assert response.status_code == 400
    (message,) = error_messages(response)["archive"]
    assert message.startswith("results/paper.pdf: ") and reason in message
    assert not Submission.objects.exists() and not DerivedArtifact.objects.exists()
    assert store.names() == []


def test_only_a_run_of_consecutive_numbers_is_taken_for_the_margin():
    margin = "\n".join(f"{n:03d}" for n in range(54, 70))
    text = f"{margin}\nResults\nTable 1\n1\n2\n3\nAccuracy 0.91"
    assert margin_numbers_drop(text) == "Results\nTable 1\n1\n2\n3\nAccuracy 0.91"


def test_an_uploads_pdfs_are_counted_and_read_within_one_summed_budget(
    client, owner, mlrbench_data, tmp_path, settings
):
    """Issue 32, finding 7: three PDFs, each under its own 30 s, held a worker
    66 s. An upload has at most INTAKE_MAX_PDFS of them, and all its reading
    shares INTAKE_WORK_SECONDS; past it the upload is refused, saying so."""
    pdf = (mlrbench_data / SCIENTIST / "iclr2025_bi_align.pdf").read_bytes()
    entries = {f"results/paper_{n}.pdf": pdf for n in range(3)}
    entries["code/run.py"] = b"print(1)\n"

    settings.INTAKE_MAX_PDFS = 2
    client.force_login(owner)
    too_many = upload(client, zip_entries(tmp_path / "many.zip", entries), agent="pdf-agent")
    assert too_many.status_code == 400
    assert "3 PDF papers; at most 2" in error_messages(too_many)["archive"][0]

    settings.INTAKE_MAX_PDFS = 5
    settings.INTAKE_WORK_SECONDS = 0.01  # no PDF is read that fast
    late = upload(client, zip_entries(tmp_path / "late.zip", entries), agent="pdf-agent")
    assert late.status_code == 400
    assert "took longer than 0.01 s to read together" in error_messages(late)["archive"][0]
    assert Submission.objects.count() == 0
