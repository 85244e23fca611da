"""Planted fabrications (canaries): each kind planted in copies of the shared
sample's runs with its ground truth recorded, the judges scored on them through
the normal queue, and nothing of them on a public page."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.roles import organiser_grant
from judging.canary_selectors import canary_scores, points_at
from judging.models import (
    Canary,
    CanaryRole,
    HallucinationType,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
)
from judging.prompts import artifact_text
from judging.services.canaries import CANARY_AGENT, PaperCorpus
from judging.services.queue import judgments_queue
from judging.services.run import judgment_run
from submissions.models import Artifact, ArtifactKind, Stage, Submission
from tests.support.fake_llm import answer

from .helpers import review_answer

pytestmark = pytest.mark.django_db

KINDS = list(HallucinationType.values)
LABELS = dict(HallucinationType.choices)


@pytest.fixture
def imported(mlrbench_data, hallucination_rubrics):
    call_command("import_mlrbench", str(mlrbench_data), stdout=StringIO(), stderr=StringIO())


def create(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("judge_canaries", "create", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def text_of(submission: Submission, path: str) -> str:
    artifact = Artifact.objects.get(submission=submission, path=path)
    return artifact_text(artifact, limit=10_000_000) or ""


def test_each_kind_is_planted_in_the_samples_papers_with_its_ground_truth(imported):
    _out, err = create("--stage", "end2end", "--count", "20", "--seed", "7")
    create("--stage", "experiment", "--count", "20", "--seed", "7")

    twins = Canary.objects.filter(role=CanaryRole.TWIN).select_related("submission", "source")
    assert {c.kind for c in twins} == set(KINDS)
    corpus = PaperCorpus()
    for canary in twins:
        twin, source = canary.submission, canary.source
        assert twin.agent.name == CANARY_AGENT and twin.agent.is_system
        assert (twin.task_id, twin.stage) == (source.task_id, source.stage)
        altered, original = text_of(twin, canary.path), text_of(source, canary.path)
        # The ground truth: the planted characters are where the record says.
        assert altered[canary.start : canary.end] == canary.planted
        assert altered != original
        if canary.original:  # replaced: what the record says was there, was there
            assert original[canary.start : canary.start + len(canary.original)] == canary.original
            assert canary.original != canary.planted
        else:  # inserted
            assert canary.planted not in original
        # Every other file is the source's, unchanged.
        others = Artifact.objects.filter(submission=twin).exclude(path=canary.path)
        assert {(a.path, a.sha256) for a in others} == set(
            Artifact.objects.filter(submission=source)
            .exclude(path=canary.path)
            .values_list("path", "sha256")
        )
        if canary.kind == HallucinationType.NONEXISTENT_CITATIONS:
            surname, title = canary.markers
            assert surname not in corpus and title not in corpus
        if canary.kind == HallucinationType.FAKED_EXPERIMENTAL_RESULTS:
            logs = Artifact.objects.filter(
                submission=source, kind__in=[ArtifactKind.LOG, ArtifactKind.RESULTS]
            ).exclude(path=canary.path)
            assert all(canary.markers[0] not in (artifact_text(a, limit=10**7) or "") for a in logs)
    # One unchanged control per source.
    controls = Canary.objects.filter(role=CanaryRole.CONTROL)
    assert controls.count() == Canary.objects.values("source").distinct().count()
    for control in controls:
        assert {(a.path, a.sha256) for a in control.submission.artifacts.all()} == set(
            control.source.artifacts.values_list("path", "sha256")
        )
    # A run with nothing to alter for a kind is skipped for it, with the reason.
    assert "skipped: submission" in err and "no reported number in a results table" in err
    assert "has no text document (a PDF only?)" in err  # AI Scientist v2: its paper is a PDF


def test_the_same_seed_makes_nothing_new_and_bad_input_is_refused(imported):
    create("--stage", "end2end", "--count", "2", "--seed", "3", "--kinds", "mathematical_errors")
    before = (Canary.objects.count(), Submission.objects.count(), Artifact.objects.count())

    out, _err = create(
        "--stage", "end2end", "--count", "2", "--seed", "3", "--kinds", "mathematical_errors"
    )

    assert (Canary.objects.count(), Submission.objects.count(), Artifact.objects.count()) == before
    assert "0 canary(ies) made" in out
    with pytest.raises(CommandError, match="unknown kind"):
        create("--stage", "end2end", "--kinds", "typos")
    with pytest.raises(CommandError, match="at least 1"):
        create("--stage", "end2end", "--count", "0")
    assert Canary.objects.count() == before[0]


def planted_spot_judge():
    """A judge that flags exactly the planted fabrication, quoting it; nothing else.
    (The server answers from its own thread: the ground truth is read here.)"""
    planted = []
    for canary in Canary.objects.filter(role=CanaryRole.TWIN).select_related("submission"):
        text = text_of(canary.submission, canary.path)
        # The plant with its surroundings: in this twin's prompt and no other's.
        spot = text[max(0, canary.start - 40) : canary.end + 40]
        planted.append((LABELS[canary.kind], canary.markers[0], spot))
    return lambda body: _findings_answer(body["messages"][1]["content"], planted)


def _findings_answer(prompt: str, planted: list[tuple[str, str, str]]):
    findings = [
        {"type": label, "description": "planted", "evidence": marker}
        for label, marker, spot in planted
        if spot in prompt
    ]
    return answer(
        json.dumps(
            {
                "has_hallucination": bool(findings),
                "hallucinations": findings,
                "overall_assessment": "checked",
                "confidence": 4,
            }
        )
    )


def alarmist_judge(_body: dict):
    findings = [
        {"type": label, "description": "suspicious", "evidence": "section 4"}
        for label in LABELS.values()
    ]
    return answer(
        json.dumps(
            {
                "has_hallucination": True,
                "hallucinations": findings,
                "overall_assessment": "everything is made up",
                "confidence": 2,
            }
        )
    )


def run_queued() -> None:
    for pk in Judgment.objects.filter(status=JudgmentStatus.QUEUED).values_list("pk", flat=True):
        judgment_run(judgment_id=pk)


def test_the_exact_judge_scores_recall_1_and_the_alarmist_false_alarms_1(
    imported, judge_for, fake_llm, monkeypatch
):
    create("--stage", "end2end", "--count", "5", "--seed", "1")
    Judgment.objects.all().update(status=JudgmentStatus.DONE)  # the imported reviews stay
    exact = judge_for("exact", input_usd_per_mtok=1, output_usd_per_mtok=2)
    out = StringIO()
    fake_llm.default = planted_spot_judge()
    # Asked first: "no" queues nothing.
    monkeypatch.setattr("builtins.input", lambda _prompt: "n")
    declined = StringIO()
    call_command("judge_canaries", "run", "--judge", "exact", stdout=declined)
    assert "estimated cost" in declined.getvalue() and "nothing queued" in declined.getvalue()
    assert not Judgment.objects.filter(judge=exact).exists()

    call_command("judge_canaries", "run", "--judge", "exact", "--yes", stdout=out)

    n_canaries = Canary.objects.count()
    assert f"{n_canaries} call(s), estimated cost $" in out.getvalue()
    assert not fake_llm.requests  # the estimate calls no model
    queued = Judgment.objects.filter(judge=exact, status=JudgmentStatus.QUEUED)
    assert queued.count() == n_canaries and {j.kind for j in queued} == {JudgmentKind.HALLUCINATION}
    run_queued()
    scores = canary_scores(stage=Stage.END2END)["exact"]
    for kind in KINDS:
        score = scores.by_kind[kind]
        if score.recall_type.n:
            assert score.recall_type.value == 1.0 and score.located.value == 1.0
        assert score.false_alarm.value == 0.0
    assert scores.false_alarm_any.value == 0.0 and scores.n_controls == 5
    assert scores.n_twins == Canary.objects.filter(role=CanaryRole.TWIN).count()

    judge_for("alarmist")
    fake_llm.default = alarmist_judge
    call_command("judge_canaries", "run", "--judge", "alarmist", "--yes", stdout=StringIO())
    run_queued()
    alarmist = canary_scores(stage=Stage.END2END)["alarmist"]
    assert alarmist.false_alarm_any.value == 1.0
    assert all(alarmist.by_kind[k].false_alarm.value == 1.0 for k in KINDS)
    # It catches every type, but points at no planted place.
    assert all(alarmist.by_kind[k].located.hits == 0 for k in KINDS)
    low, _high = alarmist.false_alarm_any.interval
    assert 0 < low < 1
    # Nothing new to send: a second run says so and queues nothing.
    again = StringIO()
    call_command("judge_canaries", "run", "--judge", "exact", "--yes", stdout=again)
    assert "0 call(s)" in again.getvalue() and "nothing to queue" in again.getvalue()


def test_a_finding_points_at_the_place_when_it_quotes_the_plant():
    assert points_at(["Ravesquo", "Contrastive Reward Manifolds"], "see ravesquo et al. (2019)")
    assert points_at(["a = b - c"], "the equation a=b-c is wrong")
    assert not points_at(["0.973"], "Table 2 looks too good")


def _public_urls(canary_ids: list[int], task: str) -> list[str]:
    """Every public page and endpoint without a parameter in its path (from the URL
    conf, so a new one is walked too), and the pages that list or count submissions
    with the parameters that could reach a canary."""
    from django.urls import URLPattern, URLResolver, get_resolver

    private = ("admin/", "account", "accounts/", "reviews/", "api/reviews/", "agent-runs/new")
    urls = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and not any(c in route for c in "<(^$\\"):
                urls.append("/" + route)

    walk(get_resolver().url_patterns, "")
    urls = [u for u in urls if not u.lstrip("/").startswith(private)]
    for stage in (Stage.END2END, Stage.EXPERIMENT, Stage.PAPER):
        urls += [f"/leaderboard/?stage={stage}", f"/api/leaderboard/?stage={stage}"]
        urls += [f"/fabrication/?stage={stage}", f"/api/fabrication/?stage={stage}"]
        urls += [f"/judges/?stage={stage}", f"/api/judges/leaderboard/?stage={stage}"]
        urls += [f"/agreement/?stage={stage}", f"/api/agreement/?stage={stage}"]
    urls += [f"/tasks/{task}/results/", f"/tasks/{task}/", "/api/leaderboard/?format=csv"]
    urls += [f"/submissions/?task={task}", f"/api/submissions/?task={task}"]
    urls += ["/api/submissions/?page_size=500", "/api/judgments/?page_size=500"]
    urls += [f"/api/judgments/?submission={pk}" for pk in canary_ids]
    return urls


def _canary_only_urls(canary_ids: list[int], judgment_ids: list[int]) -> list[str]:
    urls = [f"/agents/{CANARY_AGENT}/", f"/agents/{CANARY_AGENT}/submissions/"]
    urls += [f"/api/agents/{CANARY_AGENT}/"]
    for pk in canary_ids:
        urls += [
            f"/submissions/{pk}/",
            f"/submissions/{pk}/files/results/paper.md",
            f"/submissions/{pk}/raw/results/paper.md",
            f"/submissions/{pk}/scores/",
            f"/submissions/{pk}/judgments/",
            f"/submissions/{pk}/judgments/panel/",
            f"/api/submissions/{pk}/",
            f"/api/submissions/{pk}/judgments/",
            f"/experiments/?submission={pk}",
        ]
    return urls + [f"/api/judgments/{pk}/" for pk in judgment_ids]


def _mentions_a_canary(body: str, canary_ids: list[int], markers: list[str]) -> str | None:
    for needle in [CANARY_AGENT, *markers]:
        if needle in body:
            return needle
    for pk in canary_ids:
        if f"/submissions/{pk}/" in body:
            return f"/submissions/{pk}/"
    return None


def _submission_ids_exported(archive) -> set[int]:
    ids = set()
    for name, key in (
        ("submissions.jsonl", "id"),
        ("judgments.jsonl", "submission_id"),
        ("scores.jsonl", "submission_id"),
        ("hallucination_findings.jsonl", "submission_id"),
    ):
        if name in archive.namelist():
            for line in archive.read(name).decode().splitlines():
                row = json.loads(line)
                ids.add(row.get(key))
    return ids


def test_canaries_are_absent_from_every_public_answer(
    imported, judge_for, fake_llm, client, django_user_model, django_capture_on_commit_callbacks
):
    import zipfile
    from io import BytesIO

    from leaderboard.releases import release_create

    create("--stage", "end2end", "--count", "3", "--seed", "5")
    exact = judge_for("exact")
    hallucination = planted_spot_judge()
    fake_llm.default = lambda body: (
        hallucination(body)
        if "Hallucination types" in body["messages"][0]["content"]
        else answer(review_answer("end2end", overall=9))
    )
    # The judgments' commits bump the boards' caches (which the import filled).
    with django_capture_on_commit_callbacks(execute=True):
        call_command("judge_canaries", "run", "--yes", stdout=StringIO())
        # Scored too, as any submission: were they counted, they would top every board.
        judgments_queue(
            submissions=Submission.objects.filter(canary__isnull=False),
            judges=[exact],
            kinds=["score"],
        )
        run_queued()
    canaries = list(Canary.objects.all())
    canary_ids = [c.submission_id for c in canaries]
    markers = [m for c in canaries for m in c.markers if len(m) >= 6]
    judgment_ids = list(
        Judgment.objects.filter(submission_id__in=canary_ids).values_list("pk", flat=True)
    )
    assert judgment_ids and markers
    release_create(name="r1")
    task = canaries[0].submission.task.slug

    for url in _public_urls(canary_ids, task) + ["/releases/r1/", "/api/releases/r1/"]:
        response = client.get(url)
        assert response.status_code < 500, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if url.startswith("/api/export/") or url.endswith("export.zip"):
            with zipfile.ZipFile(BytesIO(body)) as archive:
                assert not _submission_ids_exported(archive) & set(canary_ids), url
                body = b"".join(archive.read(name) for name in archive.namelist())
        found = _mentions_a_canary(body.decode("utf-8", "replace"), canary_ids, markers)
        assert found is None, (url, found)
    release = client.get("/api/releases/r1/").json()
    released = {row[0] for row in release["submissions"]["rows"]}
    assert released and not released & set(canary_ids)
    for url in _canary_only_urls(canary_ids, judgment_ids):
        assert client.get(url).status_code == 404, url
    # The judges' board still scores the judge on them.
    board = client.get("/api/judges/leaderboard/?stage=end2end").json()
    (row,) = [r for r in board["rows"] if r["name"] == "exact"]
    assert row["canaries"]["n_controls"] == 3 and row["canaries"]["false_alarm"]["value"] == 0
    page = client.get("/judges/?stage=end2end").content.decode()
    assert 'data-testid="judges-canaries"' in page and 'data-judge="exact"' in page
    # Beside each judge-based rate, how often that judge catches planted fabrications.
    recall = client.get("/api/fabrication/?stage=end2end").json()["canary_recall"]
    caught = [share for share in recall["judge:exact"].values() if share["n"]]
    assert caught and all(share["rate"] == 1.0 for share in caught)
    assert (
        'data-testid="canary-recall"' in client.get("/fabrication/?stage=end2end").content.decode()
    )
    # Staff see the canaries' pages.
    staff = django_user_model.objects.create_user("staff", password="x")
    organiser_grant(user=staff)
    client.force_login(staff)
    twin = next(c for c in canaries if c.role == CanaryRole.TWIN)
    page = client.get(f"/submissions/{twin.submission_id}/")
    # With its ground truth at the top.
    assert page.status_code == 200 and f"planted in {twin.path}" in page.content.decode()
    assert client.get(f"/agents/{CANARY_AGENT}/submissions/").status_code == 200
