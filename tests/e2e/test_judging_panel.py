"""The submission's judgments panel follows the judges live: a queued judgment
turns into scores and a stage score on the open page, without a reload."""

import pytest
from playwright.sync_api import expect

from judging.models import Judgment
from judging.services.rubrics import ensure_default_rubrics, rubric_current
from judging.services.run import judgment_run
from tests.judging.conftest import end2end_submission
from tests.judging.factories import JudgeFactory
from tests.judging.helpers import review_answer
from tests.support.fake_llm import answer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_panel_shows_a_judgment_finishing_without_a_reload(
    page, fake_llm, settings, tmp_path, monkeypatch
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    monkeypatch.setenv("TEST_JUDGE_KEY", "sk-test")
    ensure_default_rubrics()
    submission = end2end_submission()
    judge = JudgeFactory(name="judge-a", api_base=fake_llm.url)
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubric_current(stage="end2end")
    )
    fake_llm.default = answer(review_answer("end2end", score=6, overall=7))

    # The submission's own page, under its strict Content-Security-Policy.
    page.goto(f"/submissions/{submission.pk}/")
    expect(page.get_by_test_id("status-judge-a-with_code")).to_have_text("Queued")
    page.evaluate("window.__stillTheSamePage = true")

    judgment_run(judgment_id=judgment.pk)

    # The poller backs off while nothing moves; give it time to notice.
    expect(page.get_by_test_id("status-judge-a-with_code")).to_have_text("Done", timeout=20_000)
    expect(page.get_by_test_id("stage-score")).to_have_text("7")
    expect(page.get_by_test_id("judging-progress-text")).to_have_text("1 of 1 judgment finished")
    assert page.evaluate("window.__stillTheSamePage") is True
