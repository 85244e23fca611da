"""Organiser commands: judges, import_rubric, judge, reap_stuck."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from judging.models import Judge, Judgment, JudgmentStatus, Rubric, SubmissionJudgingState
from judging.selectors import submission_judging_state
from judging.services.rubrics import rubric_current
from submissions.models import Stage
from tests.support.fake_llm import answer, error

from .conftest import end2end_submission
from .factories import AgentFactory, SubmissionFactory, artifact_add
from .helpers import review_answer

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def test_judges_add_list_disable_enable():
    output = run(
        "judges",
        "add",
        "--name",
        "gemini-2.5-pro-preview",
        "--model",
        "gemini/gemini-2.5-pro-preview-03-25",
        "--api-key-env",
        "NO_SUCH_GEMINI_API_KEY",
        "--family",
        "google",
        "--rpm",
        "30",
        "--no-check",
    )
    assert "added judge gemini-2.5-pro-preview" in output
    assert "NO_SUCH_GEMINI_API_KEY is not set here" in output
    run(
        "judges",
        "add",
        "--name",
        "local-qwen",
        "--model",
        "openai/qwen3",
        "--api-base",
        "http://vllm:8000/v1",
        "--no-check",
    )
    judge = Judge.objects.get(name="gemini-2.5-pro-preview")
    assert (judge.model_family, judge.requests_per_minute, judge.is_active) == ("google", 30, True)
    assert judge.api_key_env == "NO_SUCH_GEMINI_API_KEY"

    listing = run("judges", "list")
    assert "gemini-2.5-pro-preview" in listing and "local-qwen" in listing

    run("judges", "disable", "local-qwen")
    assert not Judge.objects.get(name="local-qwen").is_active
    run("judges", "enable", "local-qwen")
    assert Judge.objects.get(name="local-qwen").is_active


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "a b", "--model", "m"], "name: Use letters"),
        (["--name", "x", "--model", "m", "--api-base", "ftp://host"], "api_base: Enter an http"),
        (["--name", "x", "--model", "m", "--api-key-env", "sk-123"], "api_key_env"),
        (["--name", "x", "--model", "m", "--rpm", "0"], "judge_rpm_positive|requests_per_minute"),
    ],
)
def test_judges_add_refuses_bad_input_with_a_clear_error(args, message):
    with pytest.raises(CommandError, match=message):
        run("judges", "add", *args)
    assert not Judge.objects.exists()


def test_judges_add_with_its_own_price_and_list_shows_it():
    run(
        "judges",
        "add",
        "--name",
        "local-qwen",
        "--model",
        "openai/qwen3",
        "--api-base",
        "http://vllm:8000/v1",
        "--input-price",
        "0.15",
        "--output-price",
        "0.6",
        "--no-check",
    )
    run("judges", "add", "--name", "gpt", "--model", "openai/gpt-4o", "--no-check")

    judge = Judge.objects.get(name="local-qwen")
    assert (judge.input_usd_per_mtok, judge.output_usd_per_mtok) == (
        Decimal("0.15"),
        Decimal("0.6"),
    )
    listing = run("judges", "list").splitlines()
    assert "$0.15/$0.6" in next(line for line in listing if line.startswith("local-qwen"))
    assert "litellm's table" in next(line for line in listing if line.startswith("gpt"))


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        (["--input-price", "1"], "both the input and the output price"),
        (["--input-price", "-1", "--output-price", "1"], "cannot be negative"),
        (["--input-price", "NaN", "--output-price", "1"], "input_usd_per_mtok"),
        (["--input-price", "cheap", "--output-price", "1"], "not a number of dollars"),
        (["--input-price", "0.0000001", "--output-price", "1"], "decimal places"),
    ],
)
def test_judges_add_refuses_a_bad_price_with_a_clear_error(prices, message):
    with pytest.raises(CommandError, match=message):
        run("judges", "add", "--name", "x", "--model", "m", *prices)
    assert not Judge.objects.exists()


def test_judges_add_refuses_a_duplicate_and_disable_an_unknown_name():
    run("judges", "add", "--name", "x", "--model", "m", "--no-check")
    with pytest.raises(CommandError, match="exists already"):
        run("judges", "add", "--name", "x", "--model", "other")
    with pytest.raises(CommandError, match="no judge named 'y'"):
        run("judges", "disable", "y")


def test_import_rubric_loads_the_official_prompt_as_a_new_version(mlrbench_data, rubrics):
    file = mlrbench_data / "rubrics/review_experiments__RESEARCH_EXPERIMENT_RUBRIC.md"

    output = run("import_rubric", str(file), "--stage", "experiment")

    assert "loaded experiment rubric v2 (active" in output
    rubric = rubric_current(stage="experiment")
    assert rubric.version == 2
    assert rubric.prompt == file.read_text().strip()
    assert rubric.dimension_keys == rubrics["experiment"].dimension_keys
    assert rubric.extra_fields == ["Hallucination"]
    assert "already loaded as experiment rubric v2" in run(
        "import_rubric", str(file), "--stage", "experiment"
    )
    assert Rubric.objects.filter(stage="experiment", kind="score").count() == 2


def test_import_rubric_refuses_a_missing_file_and_an_unknown_stage(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        run("import_rubric", str(tmp_path / "nope.md"), "--stage", "idea")
    with pytest.raises(CommandError, match="invalid choice"):
        run("import_rubric", str(tmp_path), "--stage", "objective")


# --wait polls the database while the judgments run; with eager Celery they run
# when the queueing transaction commits, so these tests commit for real.
@pytest.mark.django_db(transaction=True)
def test_judge_submission_wait_shows_progress_until_done(
    rubrics, judge_for, fake_llm, celery_eager
):
    judge_for("judge-a")
    judge_for("judge-b")
    fake_llm.default = answer(review_answer("end2end"))
    submission = end2end_submission()

    output = run("judge", "--submission", str(submission.pk), "--wait", "--timeout", "60")

    assert "queued 2 new and 0 again" in output
    assert "2/2" in output  # the progress bar's last state
    assert "2 done, 0 failed" in output
    assert submission_judging_state(submission_id=submission.pk) == SubmissionJudgingState.JUDGED


@pytest.mark.django_db(transaction=True)
def test_judge_wait_fails_loudly_when_a_judgment_fails(rubrics, judge_for, fake_llm, celery_eager):
    judge_for("judge-a")
    fake_llm.default = error(401, "bad key")
    submission = end2end_submission()

    with pytest.raises(CommandError, match="1 judgment\\(s\\) failed"):
        run("judge", "--submission", str(submission.pk), "--wait", "--timeout", "60")


def test_judge_stage_and_agent_selects_submissions(rubrics, judge_for):
    judge_for("judge-a")
    claude, codex = AgentFactory(name="claude"), AgentFactory(name="codex")
    mine = SubmissionFactory(agent=claude, stage=Stage.EXPERIMENT)
    SubmissionFactory(agent=codex, stage=Stage.EXPERIMENT)
    SubmissionFactory(agent=claude, stage=Stage.PAPER)

    output = run("judge", "--stage", "experiment", "--agent", "claude")

    assert "queued 1 new" in output
    assert list(Judgment.objects.values_list("submission", flat=True)) == [mine.pk]


def test_judge_pending_queues_what_is_missing_and_what_failed(rubrics, judge_for):
    judge_a = judge_for("judge-a")
    judge_for("judge-b")
    submission = end2end_submission()
    Judgment.objects.create(
        submission=submission,
        judge=judge_a,
        rubric=rubrics["end2end"],
        status=JudgmentStatus.FAILED,
        error="boom",
    )
    judged = end2end_submission(task_slug="iclr2025_judged")  # judged already: not pending
    for judge in Judge.objects.all():
        Judgment.objects.create(
            submission=judged, judge=judge, rubric=rubrics["end2end"], status=JudgmentStatus.DONE
        )

    output = run("judge", "--pending", "--yes")

    assert "queued 1 new and 1 again" in output
    assert set(Judgment.objects.exclude(submission=judged).values_list("status", flat=True)) == {
        "queued"
    }
    assert set(Judgment.objects.filter(submission=judged).values_list("status", flat=True)) == {
        "done"
    }


def test_judge_pending_selects_what_is_ready_or_judging_and_nothing_else(rubrics, judge_for):
    judge = judge_for("judge-a")
    never_judged = end2end_submission(task_slug="iclr2025_never")
    being_judged = end2end_submission(task_slug="iclr2025_being")
    Judgment.objects.create(submission=being_judged, judge=judge, rubric=rubrics["end2end"])
    judged = end2end_submission(task_slug="iclr2025_judged")
    Judgment.objects.create(
        submission=judged, judge=judge, rubric=rubrics["end2end"], status=JudgmentStatus.DONE
    )
    received = end2end_submission(task_slug="iclr2025_received", status="received")
    failed = end2end_submission(task_slug="iclr2025_failed", status="failed")
    assert [
        submission_judging_state(submission_id=s.pk)
        for s in (never_judged, being_judged, judged, received, failed)
    ] == ["ready", "judging", "judged", "received", "failed"]

    output = run("judge", "--pending", "--yes")

    # The ready one gets its judgment; the queued one's message is sent again.
    assert "queued 1 new and 1 again; 0 left as they were" in output
    assert sorted(Judgment.objects.values_list("submission_id", "status")) == sorted(
        [(never_judged.pk, "queued"), (being_judged.pk, "queued"), (judged.pk, "done")]
    )


def test_judge_pending_without_an_active_judge_fails_with_one_message(rubrics):
    pending = end2end_submission()
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError, match="no judge is active") as raised:
        call_command("judge", "--pending", "--yes", stdout=out, stderr=err)

    # Nothing planned, skipped or queued around the one message.
    assert out.getvalue() == err.getvalue() == ""
    assert "judges add" in str(raised.value)
    assert not Judgment.objects.filter(submission=pending).exists()


def test_judge_needs_something_to_judge(rubrics):
    with pytest.raises(CommandError, match="no submission 999"):
        run("judge", "--submission", "999")


def test_reap_stuck_requeues_only_what_its_worker_stopped_vouching_for(
    rubrics, judge_for, submission
):
    from datetime import timedelta

    from django.utils import timezone

    judge = judge_for("judge-a")
    stuck = Judgment.objects.create(
        submission=submission,
        judge=judge,
        rubric=rubrics["end2end"],
        status=JudgmentStatus.RUNNING,
        started_at=timezone.now() - timedelta(hours=1),
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    fresh = Judgment.objects.create(
        submission=end2end_submission(task_slug="iclr2025_other"),
        judge=judge,
        rubric=rubrics["end2end"],
        status=JudgmentStatus.RUNNING,
        # Started long ago, but its worker still says it is alive: never taken.
        started_at=timezone.now() - timedelta(hours=1),
        heartbeat_at=timezone.now(),
    )

    output = run("reap_stuck")

    assert f"requeued 1 judgment(s): {stuck.pk}" in output
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == JudgmentStatus.QUEUED
    assert "requeued" in stuck.error
    assert fresh.status == JudgmentStatus.RUNNING
    assert "no stuck judgment" in run("reap_stuck")


def test_the_artifact_helper_stores_files_in_the_artifact_store(submission):
    from django.core.files.storage import default_storage

    artifact = artifact_add(submission, "extra/notes.md", "other", "hello")
    assert artifact.file.name == f"submissions/{submission.pk}/extra/notes.md"
    assert default_storage.open(artifact.file.name).read() == b"hello"
