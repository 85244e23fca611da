"""Judge panels on the imported sample (issue 27): the import's `mlr-judge` is
every stage's default, a judge added later changes no published score, a
panel judge's failure says why the submission is not counted, and
`judge --pending` judges only what is new."""

from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command

from benchmark.roles import organiser_grant
from judging.models import Judge, JudgePanel, Judgment, JudgmentStatus, StagePanel
from judging.services.rubrics import rubric_current
from judging.services.run import judgment_run
from leaderboard.selectors.counting import LEADERBOARD_STAGES
from submissions.models import Stage, Submission
from tests.support.fake_llm import answer, error

from .conftest import end2end_submission
from .helpers import review_answer

pytestmark = pytest.mark.django_db

PUBLISHED = {"claude-3-7-sonnet-20250219", "gemini-2.5-pro-preview"}


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def boards(client) -> dict[str, bytes]:
    """Every default board a visitor or a client reads, as bytes."""
    cache.clear()
    answers = {}
    for stage in LEADERBOARD_STAGES:
        for condition in ("with_code", "no_code"):
            params = {"stage": stage, "condition": condition}
            answers[f"json {stage} {condition}"] = client.get("/api/leaderboard/", params).content
            answers[f"csv {stage} {condition}"] = client.get(
                "/api/leaderboard/", {**params, "format": "csv"}
            ).content
        page = client.get("/leaderboard/", {"stage": stage}).content
        # The board, from its summary line on (the filter form above lists every judge).
        answers[f"page {stage}"] = page[page.index(b'data-testid="leaderboard-summary"') :]
    for stage in ("experiment", "paper", "end2end"):
        answers[f"fabrication {stage}"] = client.get("/api/fabrication/", {"stage": stage}).content
    # The public agreement page's default, "Mean of the judges" (issue 39, finding 3).
    agreement = client.get("/api/agreement/", {"stage": "end2end"}).json()
    answers["agreement end2end"] = repr(agreement["dimensions"]).encode()
    return answers


def local_judge_runs(fake_llm, *, fail_first: bool = False) -> list[Judgment]:
    """The local judge judges every end-to-end submission; returns its judgments."""
    run("judge", "--stage", "end2end", "--judge", "local-qwen")
    judgments = list(Judgment.objects.filter(judge__name="local-qwen").order_by("pk"))
    if fail_first:
        fake_llm.script(error(401, "Incorrect API key provided"))
    for judgment in judgments:
        judgment_run(judgment_id=judgment.pk)
    return judgments


def add_local_judge(fake_llm) -> str:
    # Scores far from the published ones and flags every paper: any leak would show.
    fake_llm.default = answer(review_answer("end2end", score=1, overall=1, hallucination=True))
    return run(
        "judges",
        "add",
        "--name",
        "local-qwen",
        "--model",
        "openai/qwen3:32b",
        "--api-base",
        fake_llm.url,
        "--input-price",
        "0",
        "--output-price",
        "0",
    )


def test_the_import_makes_the_published_judges_every_stages_default_panel(sample):
    panel = JudgePanel.objects.get(name="mlr-judge")
    assert {judge.name for judge in panel.judges.all()} == PUBLISHED
    assert set(StagePanel.objects.values_list("stage", flat=True)) >= set(LEADERBOARD_STAGES)
    assert "mlr-judge" in run("judges", "panel", "list")


def test_a_judge_outside_the_default_panel_leaves_every_default_board_byte_identical(
    sample, client, fake_llm
):
    before = boards(client)
    assert b'"panel":"mlr-judge"' in before["json end2end with_code"]

    added = add_local_judge(fake_llm)
    judgments = local_judge_runs(fake_llm, fail_first=True)

    assert "checked: " in added and "is in no panel" in added
    statuses = [j.status for j in Judgment.objects.filter(pk__in=[j.pk for j in judgments])]
    assert statuses.count(JudgmentStatus.FAILED) == 1 and JudgmentStatus.DONE in statuses
    after = boards(client)
    changed = [key for key in before if before[key] != after[key]]
    assert changed == []

    # Its own panel's board is another board: its scores, under its name.
    run("judges", "panel", "create", "local", "--judge", "local-qwen")
    own = client.get("/api/leaderboard/", {"stage": "end2end", "panel": "local"}).json()
    assert own["panel"] == "local" and own["rows"]
    assert {row["panel"] for row in own["rows"]} == {"local"}
    assert {row["scores"]["Overall"] for row in own["rows"]} == {1.0}
    assert client.get("/api/leaderboard/", {"panel": "no-such"}).status_code == 400


def test_a_failed_panel_judgment_shows_the_submission_as_not_counted_with_the_reason(
    sample, client, fake_llm, django_user_model, django_capture_on_commit_callbacks
):
    # Committed as a deployment commits them: the import filled the boards' caches.
    with django_capture_on_commit_callbacks(execute=True):
        add_local_judge(fake_llm)
        failed = local_judge_runs(fake_llm, fail_first=True)[0]
        run("judges", "panel", "create", "local", "--judge", "local-qwen")
        run("judges", "panel", "default", "local", "--stage", "end2end")

    board = client.get("/api/leaderboard/", {"stage": "end2end"}).json()
    assert board["panel"] == "local"
    (item,) = board["not_counted"]
    assert item["submission"] == failed.submission_id
    assert "local-qwen failed" in item["reason"] and "refused the API key" in item["reason"]
    assert "not counted by panel local" in client.get("/leaderboard/").content.decode()

    status = client.get(f"/api/submissions/{failed.submission_id}/judgments/")
    assert status.status_code == 200
    assert status.json()["not_counted"]["panel"] == "local"
    assert "refused the API key" in status.json()["not_counted"]["reason"]

    staff = django_user_model.objects.create_user("organiser", password="pw")
    organiser_grant(user=staff)
    client.force_login(staff)
    page = client.get(f"/submissions/{failed.submission_id}/judgments/").content.decode()
    assert 'data-testid="not-counted"' in page and "Judge again (local-qwen)" in page
    # Its score is the complete panel's (mlr-judge), and the page says the boards' is local.
    assert "judge panel\n      <strong>mlr-judge</strong>" in page
    assert "the leaderboard uses the panel <strong>local</strong>, which has not scored it" in page
    assert status.json()["panel"] == "mlr-judge"


def test_judge_pending_after_the_quick_start_queues_only_new_uploads(sample, fake_llm):
    add_local_judge(fake_llm)
    imported = set(Submission.objects.values_list("pk", flat=True))
    upload = end2end_submission(task_slug="iclr2025_new_upload")
    # A judgment a stopped run left queued (no broker) on an imported submission.
    # (the old `judge --pending` re-judged imported submissions: its leftovers are theirs).
    imported_end2end = Submission.objects.filter(pk__in=imported, stage=Stage.END2END).first()
    rubric = rubric_current(stage=Stage.END2END)
    assert imported_end2end and rubric
    leftover = Judgment.objects.create(
        submission=imported_end2end,
        judge=Judge.objects.get(name="local-qwen"),
        rubric=rubric,
    )

    with pytest.raises(CommandError, match="--yes"):
        run("judge", "--pending")  # no terminal to say yes: nothing queued
    assert not Judgment.objects.filter(submission=upload).exists()

    output = run("judge", "--pending", "--yes")

    assert "local-qwen: " in output and "$0.0000" in output
    queued = set(
        Judgment.objects.filter(imported=False)
        .exclude(pk=leftover.pk)
        .values_list("submission_id", flat=True)
    )
    assert queued == {upload.pk}
    assert not queued & imported
    assert "queued 1 new and 0 again" in output
    assert "sent 1 judgment(s) left queued again" in output  # the stopped run's leftover


def _new_upload_judged():
    """A new ready upload, judged as `judge --pending` queues it (each queued
    judgment run here, as a worker would)."""
    upload = end2end_submission(task_slug="iclr2025_new_upload", status="ready")
    run("judge", "--pending", "--yes")
    for judgment in Judgment.objects.filter(submission=upload, status=JudgmentStatus.QUEUED):
        judgment_run(judgment_id=judgment.pk)
    return upload


def _summary(client, submission) -> str:
    html = client.get(submission.get_absolute_url()).content.decode()
    return html


def test_a_judge_outside_the_published_panel_changes_no_published_submissions_page(
    sample, client, fake_llm
):
    """Issue 39, finding 3: the local judge turned the published pages back to
    "Judging", with a "local-qwen — Not queued" row."""
    from judging.selectors import submission_judging_state

    published = list(Submission.objects.filter(stage=Stage.END2END))
    assert published
    before = {s.pk: submission_judging_state(submission_id=s.pk) for s in published}
    assert set(before.values()) == {"judged"}

    add_local_judge(fake_llm)  # active, in no panel, has judged nothing yet

    after = {s.pk: submission_judging_state(submission_id=s.pk) for s in published}
    assert after == before
    for submission in published[:5]:
        html = _summary(client, submission)
        assert ">Judged<" in html[html.index('data-testid="submission-status"') :][:60]
        assert "local-qwen" not in html and "Not queued" not in html
        assert 'data-testid="panel-score-mlr-judge"' in html
        assert "the leaderboard&#x27;s panel" in html or "the leaderboard's panel" in html


def test_the_local_judge_recipe_ends_with_the_newcomers_upload_scored(sample, client, fake_llm):
    """Issue 39, finding 4: the page said "Stage score — / 10 (local-qwen 9.0)" and
    `mlrbench status` "stage score: None"; with `judges add --panel local` (the
    recipe of docs/judging.md, "Judging with a local model") the upload's page,
    API and client give the local panel's score."""
    import sys
    from contextlib import redirect_stdout
    from io import StringIO as Text
    from pathlib import Path

    fake_llm.default = answer(review_answer("end2end", score=7, overall=7))
    added = run(
        "judges", "add", "--name", "local-qwen", "--model", "openai/qwen3:32b",
        "--api-base", fake_llm.url, "--input-price", "0", "--output-price", "0",
        "--panel", "local",
    )  # fmt: skip
    assert "makes the panel local" in added
    assert {j.name for j in JudgePanel.objects.get(name="local").judges.all()} == {"local-qwen"}
    upload = _new_upload_judged()

    html = _summary(client, upload)
    summary = html[html.index('data-testid="summary-stage-score"') :][:400]
    assert "7.0 / 10 (local-qwen 7.0) · panel local; the leaderboard uses mlr-judge" in summary
    assert 'data-testid="panel-score-local"' in html
    status_shown = html[html.index('data-testid="submission-status"') :][:60]
    assert ">Judged<" in status_shown
    status = client.get(f"/api/submissions/{upload.pk}/judgments/").json()
    assert status["panel"] == "local" and status["stage_score"] == 7.0

    # What `mlrbench status` and `--wait` print from that answer.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "client"))
    try:
        from mlrbench_client.cli import _scores_print
    finally:
        sys.path.pop(0)
    printed = Text()
    with redirect_stdout(printed):
        _scores_print(status)
    assert "stage score: 7.0 (panel local)" in printed.getvalue()

    # Refused, and nothing added, when the panel exists already.
    with pytest.raises(CommandError, match="exists already"):
        run(
            "judges", "add", "--name", "other", "--model", "openai/x", "--api-base",
            fake_llm.url, "--no-check", "--panel", "local",
        )  # fmt: skip
    assert not Judge.objects.filter(name="other").exists()


def test_without_a_panel_the_upload_shows_its_judges_mean_and_says_so(sample, client, fake_llm):
    add_local_judge(fake_llm)  # score 1 everywhere, in no panel
    upload = _new_upload_judged()

    html = _summary(client, upload)
    summary = html[html.index('data-testid="summary-stage-score"') :][:400]
    assert "1.0 / 10 (local-qwen 1.0) · its judges&#x27; mean" in summary or (
        "1.0 / 10 (local-qwen 1.0) · its judges' mean" in summary
    )
    status = client.get(f"/api/submissions/{upload.pk}/judgments/").json()
    assert status["panel"] is None and status["stage_score"] == 1.0
