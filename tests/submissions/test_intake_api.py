"""Uploading runs over the REST API: what is stored, what is refused, and who may."""

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from benchmark.accounts import api_token_create, api_token_revoke
from submissions.models import Artifact, ArtifactKind, Submission
from tests.benchmark.factories import AgentFactory, TeamFactory, UserFactory
from tests.benchmark.runs import (
    PAPER,
    PNG,
    SAMPLE_TASK,
    sample_run,
    tar_entries,
    zip_entries,
    zip_folder,
)
from tests.errors import error_messages
from tests.support.uploads import upload

pytestmark = [pytest.mark.django_db, pytest.mark.backends]


def store_state(store) -> tuple:
    return store.names(), Submission.objects.count(), Artifact.objects.count()


def test_a_zip_of_a_published_run_becomes_a_submission_with_its_artifacts(
    client, store, media_root, agent, task, token, mlrbench_data, tmp_path
):
    archive = zip_folder(sample_run(mlrbench_data), tmp_path / "run.zip", prefix="bi_align/")

    response = upload(client, archive, token=token)

    assert response.status_code == 201, response.content
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert body["url"].endswith(f"/api/submissions/{submission.pk}/")
    assert (submission.source, submission.version, submission.status) == ("api", 1, "ready")
    kinds = dict(submission.artifacts.values_list("path", "kind"))
    # The wrapping folder is not part of the run's layout.
    assert kinds["results/paper.md"] == ArtifactKind.PAPER
    assert kinds["codex_log.log"] == ArtifactKind.LOG
    assert kinds["codex/experiment.py"] == ArtifactKind.CODE
    assert kinds["results/pce.png"] == ArtifactKind.FIGURE
    assert kinds["paper_token_usage.json"] == ArtifactKind.TOKEN_USAGE
    stored = store.read(f"submissions/{submission.pk}/results/paper.md")
    assert stored == (sample_run(mlrbench_data) / "results/paper.md").read_bytes()
    # o4-mini is in litellm's price table: the four LLM steps are priced.
    assert submission.llm_cost_usd is not None and submission.llm_cost_usd > 0
    assert store.names("staged") == []
    # Nor an empty folder on a disk (`staged/<uuid>/run/` was left by every upload).
    staged = media_root / "staged"
    assert not staged.exists() or list(staged.iterdir()) == []

    detail = client.get(body["url"]).json()
    paper = next(a for a in detail["artifacts"] if a["path"] == "results/paper.md")
    assert paper["kind"] == "paper" and paper["size"] == len(stored)
    download = client.get(paper["download_url"])
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == stored


def test_the_same_run_however_packed_answers_409_and_a_changed_one_is_version_2(
    client, media_root, agent, task, token, mlrbench_data, tmp_path
):
    """A submission is keyed on its files (sorted paths and hashes), not on the
    archive's bytes: zip, tar.gz and a wrapping folder are the same run."""
    import shutil

    from tests.benchmark.runs import tar_folder

    run = shutil.copytree(sample_run(mlrbench_data), tmp_path / "run")
    first = upload(client, zip_folder(run, tmp_path / "a.zip"), token=token).json()

    for packed in (
        zip_folder(run, tmp_path / "b.zip"),
        tar_folder(run, tmp_path / "run.tar.gz"),
        zip_folder(run, tmp_path / "wrapped.zip", prefix="my-run/"),
    ):
        again = upload(client, packed, token=token)
        assert again.status_code == 409, packed.name
        assert again.json()["id"] == first["id"]
    assert Submission.objects.count() == 1

    (run / "results" / "notes.txt").write_text("one more file\n", encoding="utf-8")
    second = upload(client, tar_folder(run, tmp_path / "changed.tar.gz"), token=token)
    assert second.status_code == 201, second.content
    assert second.json()["version"] == 2


def test_a_single_markdown_file_is_an_idea(client, media_root, agent, task, token, tmp_path):
    idea = tmp_path / "my idea.md"
    idea.write_text("# Idea\n\nTrain less, align more.\n")

    response = upload(client, idea, token=token, stage="idea")

    assert response.status_code == 201, response.content
    submission = Submission.objects.get(pk=response.json()["id"])
    assert list(submission.artifacts.values_list("path", "kind")) == [("idea.md", "idea")]


def test_a_single_markdown_file_is_not_enough_for_a_paper_stage(
    client, media_root, agent, task, token, tmp_path
):
    paper = tmp_path / "paper.md"
    paper.write_text("# Paper\n")
    response = upload(client, paper, token=token, stage="paper")
    assert response.status_code == 400
    assert "not a zip or tar.gz archive" in error_messages(response)["archive"][0]


def _bomb(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("results/paper.md", PAPER)
        archive.writestr("results/zeros.csv", b"0" * (30 * 1024 * 1024))
    return path


def _nested(path: Path) -> Path:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("x.txt", b"x")
    return zip_entries(path, {"results/paper.md": PAPER, "data/more.zip": inner.getvalue()})


def _symlink_tar(path: Path) -> Path:
    link = tarfile.TarInfo("results/passwd")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    return tar_entries(path, [("results/paper.md", PAPER), link])


def _symlink_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("results/paper.md", PAPER)
        info = zipfile.ZipInfo("results/link")
        info.create_system = 3
        info.external_attr = (0o120777) << 16
        archive.writestr(info, "/etc/passwd")
    return path


def _non_utf8_zip(path: Path) -> Path:
    zip_entries(path, {"results/paper.md": PAPER, "results/cafZ.md": b"x"})
    data = path.read_bytes().replace(b"cafZ.md", b"caf\xe9.md")
    path.write_bytes(data)
    return path


def _non_utf8_tar(path: Path) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.USTAR_FORMAT, encoding="latin-1") as archive:
        for name, data in (("results/paper.md", PAPER), ("results/café.md", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _too_many(path: Path) -> Path:
    entries = {"results/paper.md": PAPER} | {f"data/{n}.txt": b"x" for n in range(30)}
    return zip_entries(path, entries)


def _too_large(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("results/paper.md", PAPER)
        archive.writestr("data/noise.bin", os.urandom(600 * 1024))
    return path


def _empty(path: Path) -> Path:
    with zipfile.ZipFile(path, "w"):
        pass
    return path


def _not_an_archive(path: Path) -> Path:
    path.write_bytes(b"this is plain text, not a zip file\n" * 10)
    return path


BAD_ARCHIVES = {
    "zip slip": (
        lambda p: zip_entries(p, {"results/paper.md": PAPER, "../../escaped.txt": b"x"}),
        "points outside the archive",
    ),
    "absolute path": (
        lambda p: zip_entries(p, {"results/paper.md": PAPER, "/tmp/absolute.txt": b"x"}),
        "is an absolute path",
    ),
    "tar absolute path": (
        lambda p: tar_entries(p, [("results/paper.md", PAPER), ("/tmp/absolute.txt", b"x")]),
        "is an absolute path",
    ),
    "tar symlink": (_symlink_tar, "is a symbolic link"),
    "zip symlink": (_symlink_zip, "is a symbolic link"),
    "compression bomb": (_bomb, "compression bomb"),
    "too many entries": (_too_many, "the limit is 20"),
    "too large": (_too_large, "larger than 512 KiB"),
    "nested archive": (_nested, "data/more.zip is itself an archive"),
    "non-UTF-8 name (zip)": (_non_utf8_zip, "not valid UTF-8"),
    "non-UTF-8 name (tar)": (_non_utf8_tar, "not valid UTF-8"),
    "empty archive": (_empty, "the archive is empty"),
    "not an archive": (_not_an_archive, "not a zip or tar.gz archive"),
    "no paper for the paper stage": (
        lambda p: zip_entries(p, {"claude_code/main.py": b"print(1)", "results/log.txt": b"ok"}),
        "the paper stage needs a paper",
    ),
    "an image that is not one": (
        lambda p: zip_entries(
            p, {"results/paper.md": PAPER, "results/fig.png": b"<html><script>1</script>"}
        ),
        "results/fig.png is not a PNG image",
    ),
    "too deep": (
        lambda p: zip_entries(p, {"results/paper.md": PAPER, "a/" * 12 + "deep.txt": b"x"}),
        "the limit is 8",
    ),
}


@pytest.mark.parametrize("case", list(BAD_ARCHIVES))
def test_a_bad_archive_gets_400_saying_why_and_leaves_nothing_behind(
    case, client, store, agent, task, token, tmp_path, settings
):
    settings.INTAKE_MAX_ENTRIES = 20
    settings.INTAKE_MAX_ARCHIVE_BYTES = 512 * 1024
    settings.INTAKE_MAX_PATH_DEPTH = 8
    build, message = BAD_ARCHIVES[case]
    archive = build(tmp_path / "upload.zip")
    # Something already stored must stay as it was.
    good = zip_entries(tmp_path / "good.zip", {"results/paper.md": PAPER, "results/f.png": PNG})
    assert upload(client, good, token=token).status_code == 201
    before = store_state(store)

    response = upload(client, archive, token=token, stage="paper" if "paper" in case else "end2end")

    assert response.status_code == 400, response.content
    assert message in error_messages(response)["archive"][0]
    assert store_state(store) == before
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert not Path("/tmp/absolute.txt").exists()


def test_the_permission_matrix(client, media_root, agent, task, token, tmp_path):
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER})
    outsider = UserFactory()
    AgentFactory(name="their-agent", team=TeamFactory(members=[outsider]))
    outsider_token = api_token_create(user=outsider, name="theirs").key

    anonymous = upload(client, archive, token=None)
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"].startswith("Token")
    assert upload(client, archive, token="mlrb_not-a-real-key").status_code == 401

    other_team = upload(client, archive, token=outsider_token)
    assert other_team.status_code == 403
    assert "belongs to another team" in error_messages(other_team)["agent"][0]

    assert upload(client, archive, token=token).status_code == 201
    assert Submission.objects.count() == 1

    # Anyone may read.
    assert client.get("/api/submissions/").json()["count"] == 1


def test_a_revoked_token_no_longer_works(client, media_root, owner, agent, task, tmp_path):
    created = api_token_create(user=owner, name="old")
    api_token_revoke(user=owner, token_id=created.token.pk)
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER})
    assert upload(client, archive, token=created.key).status_code == 401


def test_bad_fields_get_400_naming_them(client, media_root, agent, task, token, tmp_path):
    archive = zip_entries(tmp_path / "run.zip", {"results/paper.md": PAPER})
    response = upload(client, archive, token=token, agent="nobody", stage="dessert")
    assert response.status_code == 400
    assert set(error_messages(response)) == {"agent", "stage"}

    unknown = upload(client, archive, token=token, task="iclr2025_nope")
    assert unknown.status_code == 400
    assert unknown.json() == {
        "errors": [
            {
                "field": "task",
                "code": "does_not_exist",
                "message": "no task named iclr2025_nope (the tasks are listed at /tasks/)",
            }
        ]
    }
    assert error_messages(response)["agent"] == ["no agent named nobody"]

    with archive.open("rb"):
        missing = client.post(
            "/api/submissions/",
            {"agent": "my-agent", "task": SAMPLE_TASK, "stage": "paper"},
            HTTP_AUTHORIZATION=f"Token {token}",
        )
    assert missing.status_code == 400 and "archive" in error_messages(missing)


def test_list_filters_and_agents(client, media_root, agent, task, token, tmp_path):
    upload(client, zip_entries(tmp_path / "a.zip", {"results/paper.md": PAPER}), token=token)
    upload(client, zip_entries(tmp_path / "b.zip", {"idea.md": b"# I"}), token=token, stage="idea")

    assert client.get("/api/submissions/", {"stage": "idea"}).json()["count"] == 1
    assert client.get("/api/submissions/", {"agent": "my-agent"}).json()["count"] == 2
    assert client.get("/api/submissions/", {"task": "iclr2025_other"}).json()["count"] == 0
    assert client.get("/api/submissions/", {"status": "ready"}).json()["count"] == 2
    agents = client.get("/api/agents/").json()["results"]
    assert [a["name"] for a in agents] == ["my-agent"]
    assert client.get("/api/agents/my-agent/").json()["model_family"] == "openai"
