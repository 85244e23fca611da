"""Artifacts in S3-compatible object storage: the site talks S3 over HTTP to
moto's server on loopback (tests/support/s3_server.py). Upload, import, pages and
downloads go through the bucket, nothing lands under MEDIA_ROOT, a storage
outage mid-upload leaves nothing half-stored, and staged leftovers are swept."""

import datetime as dt
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from django.utils import timezone

from benchmark.accounts import api_token_create
from common.storage import object_save, staged_sweep
from submissions.models import Artifact, DerivedArtifact, Submission
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory
from tests.benchmark.runs import PAPER, PNG, SAMPLE_TASK, sample_run, zip_entries, zip_folder
from tests.errors import error_messages
from tests.support.s3_server import StorageCut
from tests.support.uploads import upload

pytestmark = [pytest.mark.django_db, pytest.mark.backends]


@pytest.fixture
def token():
    owner = UserFactory()
    AgentFactory(name="my-agent", team=TeamFactory(members=[owner]), o4_mini=True)
    TaskFactory(slug=SAMPLE_TASK)
    return api_token_create(user=owner, name="laptop").key


def local_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_an_upload_is_stored_in_the_bucket_and_its_pages_and_downloads_read_it_from_there(
    client, s3_storage, media_root, token, mlrbench_data, tmp_path
):
    archive = zip_folder(sample_run(mlrbench_data), tmp_path / "run.zip", prefix="bi_align/")

    response = upload(client, archive, token=token)

    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    keys = s3_storage.keys("")
    paths = sorted(submission.artifacts.values_list("path", flat=True))
    assert keys == [f"submissions/{submission.pk}/{path}" for path in paths]
    assert s3_storage.keys("staged") == []
    paper = (sample_run(mlrbench_data) / "results/paper.md").read_bytes()
    raw = client.get(f"/submissions/{submission.pk}/raw/results/paper.md?download")
    assert raw.status_code == 200 and raw.streaming
    assert b"".join(raw.streaming_content) == paper
    assert raw["Content-Disposition"] == 'attachment; filename="paper.md"'
    assert raw["X-Content-Type-Options"] == "nosniff"
    assert raw["Content-Type"] == "text/plain; charset=utf-8"
    figure = client.get(f"/submissions/{submission.pk}/raw/results/pce.png")
    assert figure["Content-Type"] == "image/png" and figure["X-Content-Type-Options"] == "nosniff"
    assert figure["Content-Disposition"] == 'inline; filename="pce.png"'
    page = client.get(f"/submissions/{submission.pk}/")
    assert page.status_code == 200
    # The page's log tail and costs were read from the bucket.
    assert submission.llm_cost_usd is not None and submission.llm_cost_usd > 0
    detail = client.get(f"/submissions/{submission.pk}/files/codex/experiment.py")
    assert detail.status_code == 200
    assert "import" in detail.content.decode()
    assert local_files(media_root) == []


def test_a_pdf_papers_text_is_stored_in_the_bucket_beside_the_run(
    client, s3_storage, media_root, token, mlrbench_data, tmp_path
):
    pdf = (
        mlrbench_data / "ai_scientist_v2_papers/o4-mini/iclr2025_bi_align" / "iclr2025_bi_align.pdf"
    ).read_bytes()
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.pdf": pdf})

    response = upload(client, archive, token=token, stage="paper")

    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    assert f"derived/{submission.pk}/results/paper.pdf.txt" in s3_storage.keys("")
    html = client.get(f"/submissions/{submission.pk}/files/results/paper.pdf").content.decode()
    assert "CO-ADAPTIVE EXPLANATION" in html
    assert local_files(media_root) == []


def test_an_import_of_a_clone_writes_its_runs_to_the_bucket(s3_storage, media_root, tmp_path):
    clone = tmp_path / "clone"
    (clone / "tasks").mkdir(parents=True)
    (clone / "tasks" / f"{SAMPLE_TASK}.md").write_text("# A workshop\n\nStudy it.\n")
    run = clone / "agent_results" / "end2end_codex" / SAMPLE_TASK
    (run / "results").mkdir(parents=True)
    (run / "results" / "paper.md").write_bytes(PAPER)
    (run / "results" / "figure.png").write_bytes(PNG)
    out = StringIO()

    call_command("import_mlrbench", str(clone), stdout=out, stderr=out)

    submission = Submission.objects.get(stage="end2end")
    assert s3_storage.keys("") == [
        f"submissions/{submission.pk}/results/figure.png",
        f"submissions/{submission.pk}/results/paper.md",
    ]
    assert default_storage.open(f"submissions/{submission.pk}/results/paper.md").read() == PAPER
    assert local_files(media_root) == []


def test_the_storage_server_stopping_mid_upload_fails_it_clearly_and_stores_nothing(
    client, s3_storage, settings, token, tmp_path
):
    big = os.urandom(300_000)
    files = {"results/paper.md": PAPER, **{f"results/f{i}.png": PNG + big for i in range(4)}}
    archive = zip_entries(tmp_path / "run.zip", files)
    with StorageCut(upstream_port=s3_storage.server.port) as cut:
        settings.AWS_S3_ENDPOINT_URL = cut.url
        settings.STORAGES = {**settings.STORAGES}  # the storage connects anew, through the cut
        # Past the first two pictures: the server goes away in the middle of the third.
        cut.arm(int(2.5 * len(big)))

        failed = upload(client, archive, token=token)

        assert cut.is_cut
        assert failed.status_code == 503, failed.content
        (message,) = error_messages(failed)[None]
        assert "artifact store is unavailable" in message and "nothing was stored" in message
        assert not Submission.objects.exists() and not Artifact.objects.exists()
        assert not DerivedArtifact.objects.exists()
        # Nothing a reader can reach: only staged objects (the sweep's) may be left.
        assert all(key.startswith("staged/") for key in s3_storage.keys(""))

        cut.restore()
        retried = upload(client, archive, token=token)

    assert retried.status_code == 201, retried.content
    submission = Submission.objects.get()
    assert sorted(k for k in s3_storage.keys("") if not k.startswith("staged/")) == sorted(
        f"submissions/{submission.pk}/{path}" for path in files
    )


def test_the_same_outage_in_a_browser_upload_says_so_on_the_form(
    client, s3_storage, settings, tmp_path
):
    owner = UserFactory()
    agent = AgentFactory(name="my-agent", team=TeamFactory(members=[owner]), o4_mini=True)
    TaskFactory(slug=SAMPLE_TASK)
    client.force_login(owner)
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER})
    with StorageCut(upstream_port=s3_storage.server.port) as cut:
        settings.AWS_S3_ENDPOINT_URL = cut.url
        settings.STORAGES = {**settings.STORAGES}
        cut.cut()
        with archive.open("rb") as handle:
            page = client.post(
                "/submissions/new/",
                {"agent": agent.pk, "task": SAMPLE_TASK, "stage": "end2end", "archive": handle},
            )

    assert page.status_code == 400
    assert "artifact store is unavailable" in page.content.decode()
    assert not Submission.objects.exists()


@pytest.mark.parametrize("backend", ["filesystem", "s3"])
def test_storage_sweep_removes_staged_objects_older_than_a_day(backend, request, store):
    if backend == "s3":
        request.getfixturevalue("s3_storage")
    object_save("staged/old-upload/run/results/paper.md", b"# old")
    object_save("staged/new-upload/run/results/paper.md", b"# new")
    object_save("submissions/1/results/paper.md", b"# kept")
    old = default_storage.get_modified_time("staged/old-upload/run/results/paper.md")

    # As seen 25 hours after they were written.
    assert staged_sweep(older_than=dt.timedelta(days=1), now=old + dt.timedelta(hours=25)) == 2
    assert store.names() == ["submissions/1/results/paper.md"]

    object_save("staged/fresh/run/x.md", b"x")
    out = StringIO()
    call_command("storage_sweep", stdout=out)
    assert "0 staged objects" in out.getvalue()
    assert store.names("staged") == ["staged/fresh/run/x.md"]
    call_command("storage_sweep", "--older-than", "0s", stdout=out)
    assert store.names() == ["submissions/1/results/paper.md"]
    with pytest.raises(CommandError, match="--older-than 'soon'"):
        call_command("storage_sweep", "--older-than", "soon")
    assert timezone.is_aware(old)
