"""Planted fabrications (canaries): each kind planted in copies of the shared
sample's runs with its ground truth recorded, the judges scored on them through
the normal queue, and nothing of them on a public page."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.models import Artifact, ArtifactKind, Stage, Submission
from judging.canary_selectors import canary_scores, points_at
from judging.canary_services import CANARY_AGENT, PaperCorpus
from judging.models import (
    Canary,
    CanaryRole,
    HallucinationType,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
)
from judging.prompts import artifact_text
from judging.services import judgment_run

from .fake_llm import answer

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
    planted = [(LABELS[c.kind], c.markers[0]) for c in Canary.objects.filter(role=CanaryRole.TWIN)]
    return lambda body: _findings_answer(body["messages"][1]["content"], planted)


def _findings_answer(prompt: str, planted: list[tuple[str, str]]):
    findings = [
        {"type": label, "description": "planted", "evidence": marker}
        for label, marker in planted
        if marker in prompt
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
    imported, judge_for, fake_llm
):
    create("--stage", "end2end", "--count", "5", "--seed", "1")
    Judgment.objects.all().update(status=JudgmentStatus.DONE)  # the imported reviews stay
    exact = judge_for("exact", input_usd_per_mtok=1, output_usd_per_mtok=2)
    out = StringIO()
    fake_llm.default = planted_spot_judge()

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
