"""Releases: frozen in one piece, served byte for byte forever, withdrawn
but never changed; and what moved between two of them."""

import hashlib
import io
import json
import logging
import zipfile

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from judging.models import DimensionScore
from leaderboard.models import Release
from leaderboard.releases import (
    ReleaseExists,
    canonical_json,
    judgment_content_sha256,
    release_create,
    release_withdraw,
)
from submissions.models import Stage
from tests.benchmark.factories import TaskFactory

from .factories import AgentFactory, JudgeFactory, SubmissionFactory, judge_submission

pytestmark = pytest.mark.django_db

DIMS = {"Clarity": 5, "Novelty": 5, "Soundness": 5, "Significance": 5}


def judged(agent, judge, overall, task=None):
    submission = SubmissionFactory(agent=agent, task=task or TaskFactory(), stage=Stage.END2END)
    return judge_submission(submission, judge, {**DIMS, "Overall": overall})


@pytest.fixture
def board():
    judge = JudgeFactory(name="judge-a")
    alpha, beta = AgentFactory(name="alpha"), AgentFactory(name="beta")
    judged(alpha, judge, 7)
    judged(beta, judge, 4)
    return judge, alpha, beta


def test_a_release_answers_the_same_bytes_after_new_data(
    client, board, django_capture_on_commit_callbacks
):
    judge, alpha, beta = board
    call_command("release", "create", "v1", "--notes", "first", stdout=io.StringIO())
    before = client.get("/api/releases/v1/")
    zip_before = client.get("/api/releases/v1/export.zip").content

    # New results: the live board moves, the release does not.
    with django_capture_on_commit_callbacks(execute=True):
        judged(beta, judge, 10)
        judged(AgentFactory(name="gamma"), JudgeFactory(name="judge-b"), 9)
    live = client.get("/api/leaderboard/").json()
    assert {r["agent"] for r in live["rows"]} == {"alpha", "beta", "gamma"}

    after = client.get("/api/releases/v1/")
    assert after.content == before.content
    assert client.get("/api/releases/v1/export.zip").content == zip_before
    release = Release.objects.get(name="v1")
    assert hashlib.sha256(after.content).hexdigest() == release.content_sha256
    assert after["X-Content-SHA256"] == release.content_sha256
    data = json.loads(after.content)
    assert [r["agent"] for r in data["leaderboards"]["end2end"]["rows"]] == ["alpha", "beta"]
    assert data["notes"] == "first" and [j["name"] for j in data["judges"]] == ["judge-a"]
    assert set(data) >= {"tasks", "rubrics", "submissions", "judgments", "human_reviews"}
    assert data["format"] == 3
    with zipfile.ZipFile(io.BytesIO(zip_before)) as archive:
        assert archive.read("release.json") == before.content
        assert "leaderboard-end2end.csv" in archive.namelist()

    page = client.get("/releases/v1/").content.decode()
    assert release.content_sha256 in page and "@misc{mlrbench_v1" in page

    release_create(name="v2")
    diff = client.get("/releases/v1/diff/v2/").content.decode()
    assert 'data-agent="gamma"' in diff and "new on this board" in diff
    assert "judgments 1 → 2" in diff and "new judge: judge-b" in diff


def test_a_release_is_never_changed_only_withdrawn(client, board):
    release = release_create(name="v1")
    with pytest.raises(ReleaseExists):
        release_create(name="v1")
    with pytest.raises(CommandError):
        call_command("release", "create", "v1", stdout=io.StringIO())

    release.notes = "rewritten"
    with pytest.raises(ValidationError):
        release.save()
    release.refresh_from_db()
    release.content = b"{}"
    with pytest.raises(ValidationError):
        release.save()

    before = client.get("/api/releases/v1/").content
    withdrawn = release_withdraw(name="v1", reason="a judge was misconfigured")
    assert withdrawn.withdrawn_at is not None
    assert client.get("/api/releases/v1/").content == before
    assert "a judge was misconfigured" in client.get("/releases/v1/").content.decode()
    assert client.get("/api/releases/nope/").json()["errors"][0]["code"] == "unknown_release"


def test_a_release_keeps_each_judgments_scores_and_the_hash_of_its_texts(client):
    judge = JudgeFactory(name="judge-a")
    judgment = judged(AgentFactory(name="alpha"), judge, 7)
    DimensionScore.objects.filter(judgment=judgment).update(justification="A long rationale.")
    release = release_create(name="v1")
    data = json.loads(client.get("/api/releases/v1/").content)

    header, rows = data["judgments"]["header"], data["judgments"]["rows"]
    row = dict(zip(header, rows[0], strict=True))
    assert row["scores"] == {**DIMS, "Overall": 7.0}
    assert (row["judge"], row["kind"], row["rubric_version"]) == ("judge-a", "score", 1)
    submission = dict(
        zip(data["submissions"]["header"], data["submissions"]["rows"][0], strict=True)
    )
    assert submission == {
        "id": judgment.submission_id,
        "agent": "alpha",
        "task": judgment.submission.task.slug,
        "stage": "end2end",
        "version": 1,
    }
    # The texts are not stored, their hash is: anyone holding them can check it.
    assert b"A long rationale." not in bytes(release.content)
    texts = {
        "strengths": ["clear"],
        "weaknesses": ["small"],
        "hallucination_details": "",
        "overall_assessment": "",
        "findings": [],
        "justifications": dict.fromkeys({**DIMS, "Overall": 7}, "A long rationale."),
    }
    assert row["content_sha256"] == judgment_content_sha256(texts)
    texts["justifications"]["Overall"] = "Edited afterwards."
    assert row["content_sha256"] != judgment_content_sha256(texts)


def test_a_format_1_release_is_still_served_shown_and_compared(client, board):
    """Releases made before format 2 stored the judgments' texts and one row per
    score; they stay as they are, byte for byte, and the pages read them."""
    old = {
        "format": 1,
        "release": "v0",
        "notes": "",
        "created_at": "2026-11-01T00:00:00+00:00",
        "site_version": "0.1",
        "price_table_version": "1",
        "leaderboards": {
            "end2end": {
                "stage": "end2end",
                "dimensions": [{"key": "Overall", "label": "Overall"}],
                "rows": [
                    {
                        "agent": "alpha",
                        "rank": 1,
                        "n_tasks": 1,
                        "scores": {"Overall": 7.0},
                        "cost_usd_per_task": None,
                        "cost_unpriced_steps": 0,
                    },
                ],
            }
        },
        "judges": [{"name": "judge-a", "model": "openai/judge-a", "model_family": "other"}],
        "tasks": {"header": ["slug"], "rows": [["t1"]]},
        "judgments": {
            "header": ["id", "submission__agent__name", "submission__stage", "strengths"],
            "rows": [[1, "alpha", "end2end", ["clear"]]],
        },
        "scores": {"header": ["judgment_id", "dimension", "score"], "rows": [[1, "Overall", 7]]},
        "human_reviews": {"header": [], "rows": []},
    }
    content = canonical_json(old)
    Release.objects.create(
        name="v0",
        created_at=timezone.now(),
        content=content,
        content_sha256=hashlib.sha256(content).hexdigest(),
        export_zip=b"",
        site_version="0.1",
    )
    release_create(name="v1")

    assert client.get("/api/releases/v0/").content == content
    assert 'data-agent="alpha"' in client.get("/releases/v0/").content.decode()
    diff = client.get("/releases/v0/diff/v1/").content.decode()
    assert 'data-agent="beta"' in diff and "new on this board" in diff


def test_a_release_freezes_each_judge_panels_boards(client, board):
    from judging.services.panels import panel_create, panel_default_set

    judge, alpha, beta = board
    other = JudgeFactory(name="judge-b")
    judged(alpha, other, 2)
    panel_create(name="published", judges=["judge-a"])
    panel_default_set(name="published")
    panel_create(name="other", judges=["judge-b"])
    release_create(name="v1")

    default = client.get("/api/releases/v1/").json()["leaderboards"]["end2end"]
    assert default["panel"] == "published"
    assert [r["agent"] for r in default["rows"]] == ["alpha", "beta"]
    frozen = client.get("/api/releases/v1/", {"panel": "other"})
    assert frozen.status_code == 200
    board_b = frozen.json()["leaderboards"]["end2end"]
    assert frozen.json()["judges"] == ["judge-b"] and board_b["panel"] == "other"
    assert [(r["agent"], r["scores"]["Overall"]) for r in board_b["rows"]] == [("alpha", 2.0)]
    missing = client.get("/api/releases/v1/", {"panel": "nope"})
    assert missing.status_code == 404 and missing.json()["errors"][0]["field"] == "panel"


def _release_files(client, name: str) -> tuple[dict, dict[str, bytes]]:
    data = client.get(f"/api/releases/{name}/").json()
    contents = {}
    for listed in data["files"]:
        response = client.get(listed["url"])
        assert response.status_code == 200, listed
        assert response["X-Content-SHA256"] == listed["sha256"]
        assert hashlib.sha256(response.content).hexdigest() == listed["sha256"]
        contents[listed["name"]] = response.content
    return data, contents


def test_a_release_writes_parquet_a_dataset_card_and_valid_croissant_its_hash_covers(
    client, board, tmp_path
):
    import mlcroissant as mlc
    import pandas as pd
    import yaml

    from leaderboard.release_files import croissant_validate

    call_command("release", "create", "v1", "--notes", "first", stdout=io.StringIO())
    data, contents = _release_files(client, "v1")
    release = Release.objects.get(name="v1")

    assert data["format"] == 3
    # The release's hash is the hash of the JSON that lists every file with its own.
    assert hashlib.sha256(client.get("/api/releases/v1/").content).hexdigest() == (
        release.content_sha256
    )
    tables = {n.removesuffix(".parquet") for n in contents if n.endswith(".parquet")}
    assert {"leaderboard_end2end", "tasks", "submissions", "judgments", "judgment_scores"} <= (
        tables
    )
    board_rows = data["leaderboards"]["end2end"]["rows"]
    frame = pd.read_parquet(io.BytesIO(contents["leaderboard_end2end.parquet"]))
    assert list(frame["agent"]) == [r["agent"] for r in board_rows]
    assert list(frame["Overall"]) == [r["scores"]["Overall"] for r in board_rows]
    scores = pd.read_parquet(io.BytesIO(contents["judgment_scores.parquet"]))
    assert len(scores) == sum(len(row[-2]) for row in data["judgments"]["rows"])

    # The dataset card: the YAML header a dataset hub reads, one config per table.
    card = contents["README.md"].decode()
    header = yaml.safe_load(card.split("---\n", 2)[1])
    assert header["license"] == "mit"
    assert {c["config_name"]: c["data_files"][0]["path"] for c in header["configs"]} == {
        t: f"{t}.parquet" for t in tables
    }
    assert "@misc{mlrbench_v1" in header["citation"] and "## Citation" in card

    # Croissant: validated by mlcroissant, and its records are the tables' rows.
    for file_name, content in contents.items():
        (tmp_path / file_name).write_bytes(content)
    assert croissant_validate(tmp_path) == []
    dataset = mlc.Dataset(jsonld=tmp_path / "croissant.json")
    agents = [r["leaderboard_end2end/agent"] for r in dataset.records("leaderboard_end2end")]
    assert [a.decode() for a in agents] == [r["agent"] for r in board_rows]
    croissant = json.loads(contents["croissant.json"])
    listed = {f["name"]: f["sha256"] for f in data["files"]}
    assert {d["name"]: d["sha256"] for d in croissant["distribution"]} == {
        n: h for n, h in listed.items() if n.endswith(".parquet")
    }
    assert client.get("/api/releases/v1/files/nothing.parquet").status_code == 404
    page = client.get("/releases/v1/").content.decode()
    assert page.count('data-testid="release-file"') == len(data["files"])


@pytest.mark.django_db(transaction=True)
def test_pandas_reads_a_release_table_from_its_url(live_server, board):
    import pandas as pd

    call_command("release", "create", "v1", stdout=io.StringIO())
    url = f"{live_server.url}/api/releases/v1/files/leaderboard_end2end.parquet"

    frame = pd.read_parquet(url)

    assert sorted(frame["agent"]) == ["alpha", "beta"]


def test_release_create_says_what_it_made_and_nothing_of_mlcroissants_work(board, caplog):
    out = io.StringIO()
    with caplog.at_level(logging.INFO):
        call_command("release", "create", "v1", stdout=out)

    # mlcroissant logs two lines per file it reads back ("Setting up generation for
    # dataset", "File ... is downloaded to ..."): 22 on the terminal of a release.
    chatter = [r.getMessage() for r in caplog.records if "mlcroissant" in r.pathname]
    assert chatter == []
    assert out.getvalue().startswith("release v1: sha256 ")
