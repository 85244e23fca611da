"""A reviewer in a real Chromium: signs in, opens an assigned paper (its
figure loads through the blind URL), types, reloads and finds the draft,
scores with the keyboard, submits, and the agreement dashboard changes once
the round is released."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.services import (
    assignment_add,
    review_import_record,
    review_round_create,
    review_round_release,
    reviewer_register,
)
from submissions.models import ArtifactKind, Stage
from tests.benchmark.factories import PASSWORD, AgentFactory, UserFactory
from tests.judging.factories import END2END_DIMENSIONS, JudgeFactory, RubricFactory
from tests.reviews.factories import judgment_record
from tests.reviews.scenario import PNG
from tests.submissions.factories import SubmissionFactory, artifact_add

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    rubric = RubricFactory()
    judges = [JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")]
    experts = [UserFactory(username=f"expert-{i}") for i in range(2)]
    papers = [SubmissionFactory(agent=AgentFactory(name=f"hidden-agent-{i}")) for i in range(4)]
    for i, paper in enumerate(papers):
        for judge in judges:
            judgment_record(
                paper, judge, rubric, {d: 5 + (i + len(judge.name)) % 4 for d in END2END_DIMENSIONS}
            )
        for j, expert in enumerate(experts):
            review_import_record(
                submission=paper,
                reviewer=expert,
                scores={d: 3 + (i * 2 + j) % 5 for d in END2END_DIMENSIONS},
                ranges={d: (1, 10) for d in END2END_DIMENSIONS},
            )
    target = papers[0]
    artifact_add(
        target,
        "results/paper.md",
        ArtifactKind.PAPER,
        b"# Value drift under feedback\n\nOur method adapts.\n\n![Loss](./figures/loss.png)\n",
    )
    artifact_add(target, "results/figures/loss.png", ArtifactKind.FIGURE, PNG)
    reviewer = UserFactory(username="alice")
    reviewer_register(user=reviewer)
    review_round = review_round_create(
        name="Browser round",
        stage=Stage.END2END,
        due_at=timezone.now() + timedelta(days=5),
        submissions=[target],
        reviewers_per_paper=3,
    )
    assignment = assignment_add(review_round=review_round, reviewer=reviewer, submission=target)
    return assignment


def _n_human_llm(page) -> int:
    page.goto("/agreement/?stage=end2end")
    cell = page.locator('tr[data-dimension="Overall"] td[data-key="n_human_llm"]')
    return int(cell.inner_text())


def test_reviewer_drafts_reloads_submits_and_the_dashboard_changes(page, world):
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    before = _n_human_llm(page)
    assert before == 8

    page.goto("/reviews/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    assert page.get_by_test_id("progress").inner_text() == "0 of 1 submitted."
    page.get_by_role("link", name=world.code).click()

    assert page.locator("main > h1").inner_text() == f"Paper {world.code}"
    assert "Our method adapts." in page.get_by_test_id("submission-paper").inner_text()
    figure = page.locator('[data-testid="submission-paper"] img')
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=figure.element_handle()
    )
    assert "hidden-agent-0" not in page.content()

    page.get_by_label("Strengths").fill("Careful ablations of the drift model.")
    page.locator('input[name="score_Novelty"][value="8"]').check()
    status = page.get_by_test_id("draft-status")
    status.filter(has_text="Draft saved").wait_for()

    page.reload()
    assert page.get_by_label("Strengths").input_value() == "Careful ablations of the drift model."
    assert page.locator('input[name="score_Novelty"][value="8"]').is_checked()

    # Keyboard: the first score group is current; a digit scores it and moves on
    # ("advance after scoring" is on by default), so each digit scores its own
    # dimension; the keyboard focus follows the highlight.
    assert page.get_by_test_id("advance-after-scoring").is_checked()
    page.locator("main > h1").click()
    for key in "76546":  # five dimensions
        page.keyboard.press(key)
    assert page.locator('input[name="score_Clarity"][value="7"]').is_checked()
    assert page.locator('input[name="score_Novelty"][value="6"]').is_checked()
    assert page.locator('input[name="score_Overall"][value="6"]').is_checked()
    focused = "() => document.activeElement.closest('fieldset.current') !== null"
    assert page.evaluate(focused)
    assert page.evaluate("() => document.activeElement.name") == "confidence"
    page.keyboard.press("[")
    assert page.evaluate("() => document.activeElement.name") == "score_Overall"
    assert page.evaluate("() => document.activeElement.value") == "6"  # the chosen score
    page.keyboard.press("]")
    page.keyboard.press("4")
    assert page.locator('input[name="confidence"][value="4"]').is_checked()
    page.get_by_label("Weaknesses").fill("Only one synthetic environment.")
    # An end-to-end round asks the four hallucination questions, blind like the rest:
    # nobody else's answer and no judge's finding is on the page.
    check = page.get_by_test_id("hallucination-check")
    assert "Faked Experimental Results" in check.inner_text()
    assert page.get_by_test_id("hallucination-reviews").count() == 0
    for kind in (
        "faked_experimental_results",
        "hallucinated_methodology",
        "nonexistent_citations",
        "mathematical_errors",
    ):
        answer = "yes" if kind == "faked_experimental_results" else "no"
        page.locator(f'input[name="hallucination_{kind}"][value="{answer}"]').check()
    page.locator('textarea[name="hallucination_faked_experimental_results_evidence"]').fill(
        "Table 2 has numbers the log never prints."
    )
    page.keyboard.press("Control+Enter")
    page.get_by_text("Review submitted.").wait_for()
    assert page.get_by_test_id("assignment-status").inner_text() == "Submitted"
    # Now, and only now, the paper's agent is revealed...
    assert "hidden-agent-0" in page.get_by_test_id("reveal").inner_text()
    # ...so the scores stay as submitted: shown, not to be changed, keys included
    # (issue 40: a placeholder review's scores were replaced after the reveal).
    assert page.get_by_test_id("scores-frozen").is_visible()
    assert page.locator('input[name="score_Clarity"][value="9"]').is_disabled()
    page.locator("main > h1").click()
    page.keyboard.press("9")
    assert page.locator('input[name="score_Clarity"][value="7"]').is_checked()

    # The public dashboard counts released reviews only: the new review joins it
    # when the organiser releases the round, not before (issue 20, finding 3).
    assert _n_human_llm(page) == before
    review_round_release(review_round=world.review_round)
    assert _n_human_llm(page) == before + 1
    # No script error on the way (the keys once raised "focusChoice is not defined").
    assert errors == []
