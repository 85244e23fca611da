"""Issue 40, "every byte of untrusted work bounded": what one upload may make
the site store and hold (derived HTML, traces), and the shapes of input that
answered 500 or were stored as traps (deep JSON, names)."""

import pytest
from django.db.models import Sum

from benchmark.accounts import api_token_create
from submissions.models import DerivedArtifact, DerivedKind, Submission
from submissions.uploads import upload_slot
from tests.benchmark.factories import UserFactory
from tests.benchmark.runs import PAPER, zip_entries
from tests.errors import error_messages
from tests.submissions.factories import archive_intake
from tests.support.uploads import upload

pytestmark = pytest.mark.django_db


def _source_html(submission: Submission) -> dict[str, int]:
    return dict(
        DerivedArtifact.objects.filter(
            artifact__submission=submission, kind=DerivedKind.SOURCE_HTML
        ).values_list("artifact__path", "size")
    )


def test_newline_only_text_files_store_no_line_number_tables(
    client, media_root, agent, task, tmp_path, settings
):
    """The probe: 20 newline-only 256 KiB `.txt` files (30 KB zipped) stored
    188.6 MB of highlighted HTML and took 115 s. Each is shown as escaped text,
    stored as nothing."""
    settings.INTAKE_MAX_COMPRESSION_RATIO = 100_000  # newlines zip 1,000 to 1
    entries = {f"logs/empty_{n}.txt": b"\n" * (256 * 1024) for n in range(20)}
    entries["results/paper.md"] = PAPER
    entries["code/main.py"] = b"def train():\n    return 42\n"
    submission = archive_intake(agent, task, zip_entries(tmp_path / "run.zip", entries))

    assert set(_source_html(submission)) == {"code/main.py"}
    page = client.get(f"/submissions/{submission.pk}/files/logs/empty_3.txt").content.decode()
    assert '<pre class="plain">' in page and "linenos" not in page


def test_an_uploads_derived_html_is_capped_per_file_and_in_all(
    media_root, agent, task, tmp_path, settings
):
    """Many small files, each under the per-file limits, still stop at the
    upload's cap (the probe's 6,001 files held a web worker at 1.1 GB)."""
    settings.INTAKE_MAX_DERIVED_BYTES = 60_000
    settings.SOURCE_HIGHLIGHT_MAX_HTML_BYTES = 30_000
    line = b"value = compute(alpha, beta)  # a line of code\n"
    entries = {f"code/m{n}.py": line * 40 for n in range(12)}
    entries["code/large.py"] = line * 1_000  # its HTML alone is past the file's cap
    entries["results/paper.md"] = PAPER
    submission = archive_intake(agent, task, zip_entries(tmp_path / "run.zip", entries))

    stored = _source_html(submission)
    assert "code/large.py" not in stored
    assert 0 < len(stored) < 12
    total = DerivedArtifact.objects.filter(artifact__submission=submission).aggregate(
        total=Sum("size")
    )["total"]
    assert total <= settings.INTAKE_MAX_DERIVED_BYTES


def test_documents_past_the_uploads_derived_bytes_keep_a_note_not_their_html(
    client, media_root, agent, task, tmp_path, settings
):
    """Rendered markdown counts against the upload's cap too: 30 documents each
    under the per-document limit would otherwise store 30 rendered pages."""
    settings.INTAKE_MAX_DERIVED_BYTES = 40_000
    section = b"## Results\n\n| metric | value |\n|---|---|\n| accuracy | 0.91 |\n\n" * 60
    entries = {f"ideas/idea_{n:02}.md": section for n in range(30)}
    entries["results/paper.md"] = PAPER
    submission = archive_intake(agent, task, zip_entries(tmp_path / "run.zip", entries))

    rows = DerivedArtifact.objects.filter(
        artifact__submission=submission, kind=DerivedKind.HTML
    ).values_list("artifact__path", "size", "note")
    noted = [path for path, _size, note in rows if "past the size" in note]
    rendered = sum(size for path, size, _note in rows if path not in noted)
    assert rendered <= settings.INTAKE_MAX_DERIVED_BYTES
    assert all(size < 300 for path, size, _note in rows if path in noted)  # a note each
    assert noted and len(noted) < 31  # the first ones rendered, the rest a note
    note = DerivedArtifact.objects.get(
        artifact__submission=submission, artifact__path=noted[-1], kind=DerivedKind.HTML
    )
    assert "download this one to read it" in note.content


@pytest.fixture
def token(owner) -> str:
    return api_token_create(user=owner, name="laptop").key


def test_a_name_with_a_bidirectional_control_is_refused(
    client, media_root, agent, task, token, tmp_path
):
    """U+202E shows `results/gpj.exe` as `results/exe.jpg` on every page."""
    archive = zip_entries(
        tmp_path / "run.zip", {"results/paper.md": PAPER, "results/\u202egpj.exe": b"MZ"}
    )

    response = upload(client, archive, token=token, agent="my-agent")

    assert response.status_code == 400
    (message,) = error_messages(response)["archive"]
    assert "bidirectional control character (U+202E)" in message
    assert Submission.objects.count() == 0


def test_names_are_stored_nfc_and_nfd_twins_are_one_name(
    client, media_root, agent, task, token, tmp_path
):
    composed, decomposed = "notes/caf\u00e9.txt", "notes/cafe\u0301.txt"
    alone = zip_entries(tmp_path / "one.zip", {"results/paper.md": PAPER, decomposed: b"x"})
    response = upload(client, alone, token=token, agent="my-agent")
    assert response.status_code == 201, response.content
    paths = set(Submission.objects.get().artifacts.values_list("path", flat=True))
    assert composed in paths and decomposed not in paths

    twins = zip_entries(
        tmp_path / "twins.zip", {"results/paper.md": PAPER, composed: b"1", decomposed: b"2"}
    )
    response = upload(client, twins, token=token, agent="my-agent")
    assert response.status_code == 400
    assert f"{composed} appears twice" in error_messages(response)["archive"][0]
    assert Submission.objects.count() == 1


def test_an_experiment_without_results_is_refused_saying_the_judges_need_them(
    client, media_root, agent, task, token, tmp_path
):
    """It was accepted, then failed by every judge ("no results artifact to review")."""
    code_and_log = {"code/train.py": b"print(0.91)\n", "results/log.txt": b"accuracy 0.91\n"}
    refused = upload(
        client,
        zip_entries(tmp_path / "run.zip", code_and_log),
        token=token,
        agent="my-agent",
        stage="experiment",
    )
    assert refused.status_code == 400
    (message,) = error_messages(refused)["archive"]
    assert "needs code and its results, which the judges review" in message
    assert Submission.objects.count() == 0

    with_results = {
        **code_and_log,
        "results.md": b"| model | accuracy |\n|---|---|\n| ours | 0.91 |\n",
    }
    accepted = upload(
        client,
        zip_entries(tmp_path / "run2.zip", with_results),
        token=token,
        agent="my-agent",
        stage="experiment",
    )
    assert accepted.status_code == 201, accepted.content


def test_an_accounts_concurrent_uploads_are_limited_with_429_and_retry_after(
    client, media_root, owner, agent, task, token, tmp_path, settings
):
    """One account's parallel uploads held every web worker; the one past
    INTAKE_MAX_CONCURRENT_UPLOADS is answered 429, and the slots come back."""
    settings.INTAKE_MAX_CONCURRENT_UPLOADS = 2
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER})
    other = UserFactory()
    with upload_slot(user_id=owner.pk), upload_slot(user_id=owner.pk):
        busy = upload(client, archive, token=token, agent="my-agent")
        with upload_slot(user_id=other.pk):  # another account is not held back
            pass
        client.force_login(owner)
        with archive.open("rb") as handle:
            form = client.post(
                "/submissions/new/",
                {"agent": agent.pk, "task": task.slug, "stage": "end2end", "archive": handle},
                HTTP_ACCEPT="application/json",
            )
        client.logout()

    for response in (busy, form):
        assert response.status_code == 429
        assert int(response["Retry-After"]) > 0
        (error,) = response.json()["errors"]
        assert error["code"] == "uploads_busy" and "at most 2 at once" in error["message"]
    assert Submission.objects.count() == 0

    stored = upload(client, archive, token=token, agent="my-agent")
    assert stored.status_code == 201, stored.content


def _balloon_trace(entries: int) -> bytes:
    """A valid Claude Code trace that is nothing but empty messages: a few bytes
    each on disk, a Python dict each once parsed."""
    return b"[" + b"{}," * entries + b"{}]"


def test_a_trace_that_balloons_is_parsed_in_the_child_not_the_web_worker(
    media_root, agent, task, tmp_path, settings
):
    """The probe: a 31.5 MB `claude_output.json` of `{}` grew a web worker from
    145 to 896 MB. What the upload's process allocates stays near the file's size;
    the parse's hundred-odd MB are the child's."""
    import tracemalloc

    settings.INTAKE_MAX_COMPRESSION_RATIO = 100_000
    trace = _balloon_trace(1_500_000)  # 4.5 MB; about 110 MB as Python objects
    archive = zip_entries(
        tmp_path / "run.zip", {"results/paper.md": PAPER, "claude_output.json": trace}
    )
    tracemalloc.start()
    try:
        submission = archive_intake(agent, task, archive)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 8 * len(trace), f"{peak / 2**20:.0f} MiB in the upload's process"
    stored = DerivedArtifact.objects.get(
        artifact__submission=submission, kind=DerivedKind.TRACE_STEPS
    )
    assert stored.artifact.path == "claude_output.json"


def test_a_trace_past_its_memory_limit_is_not_read_and_the_upload_is_kept(
    media_root, agent, task, tmp_path, settings
):
    from common.child_pool import pool_close

    settings.INTAKE_MAX_COMPRESSION_RATIO = 100_000
    settings.TRACE_PARSE_MEMORY_BYTES = 16 * 1024 * 1024
    pool_close()  # a fresh child
    archive = zip_entries(
        tmp_path / "run.zip",
        {"results/paper.md": PAPER, "claude_output.json": _balloon_trace(1_000_000)},
    )
    submission = archive_intake(agent, task, archive)

    stored = DerivedArtifact.objects.get(
        artifact__submission=submission, kind=DerivedKind.TRACE_STEPS
    )
    assert stored.note == "not read: reading the trace needed more than 16 MiB"
    assert submission.artifacts.filter(path="claude_output.json").exists()


def test_many_nul_text_files_are_stored_and_their_html_is_capped(
    client, media_root, agent, task, tmp_path, settings
):
    """The probe's 6,001 NUL-text files: NUL in the highlighted HTML made
    PostgreSQL refuse the whole upload; it is shown as U+FFFD, within the cap."""
    settings.INTAKE_MAX_COMPRESSION_RATIO = 100_000
    settings.INTAKE_MAX_DERIVED_BYTES = 40_000
    entries = {f"data/nul_{n}.txt": bytes(2048) for n in range(40)}
    entries["results/paper.md"] = PAPER
    submission = archive_intake(agent, task, zip_entries(tmp_path / "run.zip", entries))

    stored = _source_html(submission)
    assert 0 < len(stored) < 40
    assert sum(stored.values()) <= settings.INTAKE_MAX_DERIVED_BYTES
    first = min(stored)
    page = client.get(f"/submissions/{submission.pk}/files/{first}")
    assert page.status_code == 200 and "\ufffd" in page.content.decode()
