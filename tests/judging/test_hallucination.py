"""The hallucination pass: every active judge also runs the hallucination review
of experiment, paper and end-to-end submissions, through the same queue, retries,
validation and cost accounting as scoring; a PDF paper's stored text reaches the
prompt, and the PDF itself goes to judges whose model reads PDFs."""

import base64
import json

import pytest
from django.core.management import call_command

from judging.models import HallucinationType, Judgment, JudgmentKind, JudgmentStatus
from judging.prompts import judge_prompt_build
from judging.services.queue import judgments_queue
from judging.services.run import judgment_run
from submissions.models import ArtifactKind, DerivedArtifact, Stage
from submissions.pdf_text import PdfText, derived_text_write
from submissions.signals import submission_ready
from tests.support.fake_llm import answer
from tests.support.waiting import wait_for

from .conftest import end2end_submission
from .factories import JudgeFactory, SubmissionFactory, artifact_add
from .helpers import review_answer


def hallucination_answer(*findings: tuple[str, str], confidence: int = 4) -> str:
    return json.dumps(
        {
            "has_hallucination": bool(findings),
            "hallucinations": [
                {"type": kind, "description": f"about {kind}", "evidence": quote}
                for kind, quote in findings
            ],
            "overall_assessment": "checked against the code",
            "confidence": confidence,
        }
    )


def by_kind(body: dict):
    """A judge that answers each kind of prompt with its own schema."""
    system = body["messages"][0]["content"]
    if "Hallucination types" in system:
        return answer(hallucination_answer(("Faked Experimental Results", "accuracy 0.99")))
    return answer(review_answer("end2end", overall=6))


@pytest.mark.django_db
def test_each_active_judge_also_queues_a_hallucination_review(hallucination_rubrics, judge_for):
    judge_for("judge-a")
    judge_for("judge-b")
    end2end = end2end_submission()
    idea = SubmissionFactory(stage=Stage.IDEA)
    artifact_add(idea, "idea.md", ArtifactKind.IDEA, "# An idea")

    report = judgments_queue(submissions=[end2end, idea])

    kinds = sorted(Judgment.objects.filter(submission=end2end).values_list("judge__name", "kind"))
    assert kinds == [
        ("judge-a", "hallucination"),
        ("judge-a", "score"),
        ("judge-b", "hallucination"),
        ("judge-b", "score"),
    ]
    # An idea has no hallucination review.
    assert set(Judgment.objects.filter(submission=idea).values_list("kind", flat=True)) == {"score"}
    assert report.created == 6 and report.skipped == []
    # Queueing again is idempotent, per kind.
    again = judgments_queue(submissions=[end2end])
    assert again.created == 0 and again.unchanged == 4


@pytest.mark.django_db
def test_judge_kind_hallucination_runs_only_that_pass(hallucination_rubrics, judge_for, fake_llm):
    judge_for("judge-a")
    submission = end2end_submission(status="ready")
    fake_llm.default = by_kind

    call_command("judge", "--submission", str(submission.pk), "--kind", "hallucination")

    (judgment,) = Judgment.objects.filter(submission=submission)
    assert judgment.kind == JudgmentKind.HALLUCINATION


@pytest.mark.django_db
def test_a_hallucination_review_is_recorded_with_typed_findings_and_its_cost(
    hallucination_rubrics, judge_for, fake_llm, submission
):
    judge = judge_for("judge-a", input_usd_per_mtok=1, output_usd_per_mtok=2)
    judgment = Judgment.objects.create(
        submission=submission,
        judge=judge,
        rubric=hallucination_rubrics["end2end"],
        kind=JudgmentKind.HALLUCINATION,
    )
    fake_llm.script(
        answer(
            hallucination_answer(
                ("Hallucinated Methodology", "a bias estimator"),
                ("faked_experimental_results", "Table 2"),
            )
        )
    )

    judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE
    assert judgment.has_hallucination is True and judgment.confidence == 4
    assert judgment.overall_assessment == "checked against the code"
    assert [(f.type, f.evidence) for f in judgment.findings.all()] == [
        (HallucinationType.HALLUCINATED_METHODOLOGY, "a bias estimator"),
        (HallucinationType.FAKED_EXPERIMENTAL_RESULTS, "Table 2"),
    ]
    assert not judgment.scores.exists()
    assert judgment.cost_usd is not None and judgment.attempts == 1
    # The prompt: the site's hallucination rubric, the paper, the code and the log.
    (request,) = fake_llm.requests
    system, user = (m["content"] for m in request.messages)
    assert "Faked Experimental Results" in system and "Mathematical Errors" in system
    assert "We co-evolve values." in user and "print('accuracy', 0.91)" in user
    assert "epoch 1 accuracy 0.91" in user


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (
            {
                "has_hallucination": True,
                "hallucinations": [{"type": "Plagiarism"}],
                "confidence": 3,
            },
            "is not one of",
        ),
        (
            {
                "has_hallucination": False,
                "hallucinations": [{"type": "Mathematical Errors"}],
                "confidence": 3,
            },
            "is false but",
        ),
        ({"has_hallucination": True, "hallucinations": [], "confidence": 3}, "is empty"),
    ],
)
def test_an_answer_off_the_schema_is_asked_again_then_fails_with_the_reason(
    hallucination_rubrics, judge_for, fake_llm, submission, bad, problem
):
    judgment = Judgment.objects.create(
        submission=submission,
        judge=judge_for("judge-a"),
        rubric=hallucination_rubrics["end2end"],
        kind=JudgmentKind.HALLUCINATION,
    )
    fake_llm.script(*[answer(json.dumps(bad))] * 3)

    judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.FAILED
    assert problem in judgment.error and judgment.attempts == 3
    # The re-ask names the problem and the schema.
    reask = fake_llm.requests[1].messages[-1]["content"]
    assert problem in reask and "has_hallucination" in reask
    assert not judgment.findings.exists()


def pdf_submission():
    submission = SubmissionFactory(stage=Stage.END2END, task__description="# A task")
    pdf = artifact_add(submission, "iclr2025_bi_align.pdf", ArtifactKind.PAPER, b"%PDF-1.4 stub")
    derived_text_write(
        artifact=pdf, extracted=PdfText(text="CO-ADAPTIVE EXPLANATION INTERFACES", pages=4,
                                        truncated=False)
    )  # fmt: skip
    artifact_add(submission, "experiments/best.py", ArtifactKind.CODE, "print(1)\n")
    return submission, pdf


@pytest.mark.django_db
def test_a_pdf_papers_stored_text_is_in_the_prompt_and_the_pdf_goes_to_pdf_readers(
    rubrics, hallucination_rubrics
):
    submission, pdf = pdf_submission()
    assert DerivedArtifact.objects.filter(artifact=pdf).exists()

    text_only = judge_prompt_build(
        submission=submission, rubric=rubrics["end2end"], condition="with_code"
    )
    assert "CO-ADAPTIVE EXPLANATION INTERFACES" in text_only.messages[1]["content"]

    with_pdf = judge_prompt_build(
        submission=submission,
        rubric=hallucination_rubrics["end2end"],
        condition="with_code",
        reads_pdf=True,
    )
    text_part, file_part = with_pdf.messages[1]["content"]
    assert "CO-ADAPTIVE EXPLANATION INTERFACES" in text_part["text"]
    data = file_part["file"]["file_data"]
    assert base64.b64decode(data.split(",", 1)[1]) == b"%PDF-1.4 stub"
    assert with_pdf.sha256 != text_only.sha256


def test_judges_of_pdf_reading_providers_get_the_pdf_and_self_hosted_ones_do_not():
    from judging.llm import reads_pdf
    from judging.models import Judge

    assert reads_pdf(Judge(model="anthropic/claude-3-7-sonnet-20250219"))
    assert reads_pdf(Judge(model="gemini/gemini-2.5-pro-preview-03-25"))
    assert not reads_pdf(Judge(model="openai/test-judge", api_base="http://127.0.0.1:9/v1"))


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
def test_a_new_upload_is_hallucination_reviewed_by_the_loopback_judges_through_a_worker(
    celery_worker_process, worker_env, fake_llm, hallucination_rubrics, settings
):
    JudgeFactory(name="judge-a", model="openai/judge-a", api_base=fake_llm.url)
    JudgeFactory(name="judge-b", model="openai/judge-b", api_base=fake_llm.url)
    fake_llm.default = by_kind
    worker_env["JUDGE_HALLUCINATION_REVIEWS"] = "1"
    celery_worker_process("judge", pool="threads", concurrency=4, env=worker_env)
    submission = end2end_submission()

    submission_ready.send(sender=None, submission_id=submission.pk)

    def finished() -> bool:
        statuses = list(Judgment.objects.filter(submission=submission).values_list("status"))
        return len(statuses) == 4 and all(s == ("done",) for s in statuses)

    wait_for(finished, message="two score and two hallucination reviews done")
    reviews = Judgment.objects.filter(submission=submission, kind=JudgmentKind.HALLUCINATION)
    assert {r.judge.name for r in reviews} == {"judge-a", "judge-b"}
    for review in reviews:
        assert review.has_hallucination is True
        assert list(review.findings.values_list("type", flat=True)) == [
            HallucinationType.FAKED_EXPERIMENTAL_RESULTS
        ]


@pytest.mark.django_db
def test_the_fabrication_summary_says_what_the_hallucination_review_below_it_says(
    hallucination_rubrics, judge_for, fake_llm, client
):
    """Issue 39: the summary said "none found by 1 judge" (the scoring judgment's
    field) above a review that said "Hallucination found: yes"."""
    judge_for("local-qwen")
    submission = end2end_submission(status="ready")
    fake_llm.default = by_kind  # the score says no hallucination, the review finds one
    judgments_queue(submissions=[submission])
    for judgment in Judgment.objects.filter(submission=submission):
        judgment_run(judgment_id=judgment.pk)

    html = client.get(submission.get_absolute_url()).content.decode()
    verdict = html[html.index('data-testid="hallucination-verdict-local-qwen"') :][:300]
    assert "yes" in verdict
    summary = html[html.index('data-testid="summary-fabrication"') :][:300]
    assert "flagged by 1 of 1 judge (local-qwen)" in summary
    assert "none found" not in summary
