"""Writing a review: drafts kept on the server, every field validated with a
clear message, edits of the texts after submitting kept as history until the
assignment closes (the scores stay as submitted); the database itself refuses
out-of-range scores and second reviews."""

import json
import re
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from judging.models import Rubric
from reviews.models import (
    Assignment,
    AssignmentStatus,
    HumanReview,
    HumanReviewScore,
    ReviewRound,
)
from reviews.services import (
    AssignmentClosed,
    assignment_add,
    review_draft_save,
    review_round_close,
    review_round_create,
    review_submit,
)
from submissions.models import Stage
from tests.errors import error_messages
from tests.submissions.factories import SubmissionFactory

from .scenario import review_data

HALLUCINATION_TYPES = (
    "faked_experimental_results",
    "hallucinated_methodology",
    "nonexistent_citations",
    "mathematical_errors",
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment(make_reviewer, rubric):
    submission = SubmissionFactory()
    review_round = review_round_create(
        name="r",
        stage=Stage.END2END,
        due_at=timezone.now() + timedelta(days=3),
        submissions=[submission],
    )
    return assignment_add(
        review_round=review_round, reviewer=make_reviewer("rev"), submission=submission
    )


def test_a_draft_survives_a_reload(client, assignment):
    client.force_login(assignment.reviewer)
    response = client.post(
        reverse("reviews:draft", args=[assignment.code]),
        {"score_Novelty": "8", "strengths": "A bold idea", "score_Nonsense": "1"},
    )
    assert response.status_code == 200 and response.json()["saved_at"]
    html = client.get(reverse("reviews:paper", args=[assignment.code])).content.decode()
    assert "A bold idea</textarea>" in html
    checked = re.findall(r'<input[^>]*name="score_Novelty"[^>]*value="(\d+)"[^>]*checked', html)
    assert checked == ["8"]
    review = HumanReview.objects.get()
    assert review.status == "draft" and "score_Nonsense" not in review.draft
    assert HumanReviewScore.objects.count() == 0
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.IN_PROGRESS


def test_submitting_validates_every_field_with_clear_errors(client, assignment):
    client.force_login(assignment.reviewer)
    response = client.post(
        reverse("reviews:paper", args=[assignment.code]),
        {"score_Novelty": "11", "score_Clarity": "abc", "strengths": "ok"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Novelty: give a whole-number score from 1 to 10." in html
    assert "Clarity: give a whole-number score from 1 to 10." in html
    assert "Overall: give a whole-number score from 1 to 10." in html
    assert "Say how confident you are (1 to 5)." in html
    assert "Name at least one weakness of the paper." in html
    assert HumanReviewScore.objects.count() == 0

    api = client.post(
        f"/api/reviews/assignments/{assignment.code}/review/",
        data=json.dumps({"scores": {"Overall": 0, "Taste": 3}, "confidence": 9}),
        content_type="application/json",
    )
    assert api.status_code == 400
    assert error_messages(api)["scores"] == ["unknown dimension(s): Taste"]
    api = client.post(
        f"/api/reviews/assignments/{assignment.code}/review/",
        data=json.dumps({"scores": {"Overall": 0}, "confidence": 9}),
        content_type="application/json",
    )
    errors = error_messages(api)
    assert errors["scores.Overall"] == ["Overall: give a whole-number score from 1 to 10."]
    assert errors["confidence"] == ["Confidence is a whole number from 1 to 5."]
    assert "scores.Novelty" in errors and "strengths" in errors


def test_submit_then_edit_until_closed_with_history(client, assignment):
    client.force_login(assignment.reviewer)
    scores = {"Clarity": 6, "Novelty": 7, "Soundness": 4, "Significance": 5, "Overall": 5}
    body = {"scores": scores, "confidence": 4, "strengths": "S", "weaknesses": "W"}
    # An end-to-end round asks the four hallucination questions too.
    body["hallucination"] = {kind: {"answer": "no"} for kind in HALLUCINATION_TYPES}
    url = f"/api/reviews/assignments/{assignment.code}/review/"
    first = client.post(url, data=json.dumps(body), content_type="application/json")
    assert first.status_code == 201
    assert first.json()["review"]["scores"] == scores
    assert first.json()["revealed"]["agent"] == assignment.submission.agent.name

    # The scores were frozen by the reveal the answer showed (issue 40)...
    refused = client.post(
        url,
        data=json.dumps({**body, "scores": {**scores, "Overall": 7}}),
        content_type="application/json",
    )
    assert refused.status_code == 409
    assert refused.json()["errors"][0]["code"] == "scores_frozen"
    # ...the texts are not.
    page = client.post(
        reverse("reviews:paper", args=[assignment.code]),
        review_data(scores, weaknesses="W, on reflection"),
        follow=True,
    )
    assert "Review updated." in page.content.decode()
    review = HumanReview.objects.get()
    assert review.scores.get(dimension="Overall").score == 5
    assert [r.weaknesses for r in review.revisions.all()] == ["W", "W, on reflection"]
    assert 'data-testid="history"' in page.content.decode()

    # A late autosave of what was just submitted is not an edit...
    review_draft_save(
        assignment=assignment, data=review_data(scores, weaknesses="W, on reflection")
    )
    review.refresh_from_db()
    assert review.draft == {}
    # ...but a real change is kept as pending edits.
    review_draft_save(assignment=assignment, data={"strengths": "S, and more"})
    html = client.get(reverse("reviews:paper", args=[assignment.code])).content.decode()
    assert 'data-testid="pending-edits"' in html

    review_round_close(review_round=assignment.review_round)
    assert (
        client.post(url, data=json.dumps(body), content_type="application/json").status_code == 409
    )
    assert (
        client.post(
            reverse("reviews:draft", args=[assignment.code]), {"strengths": "x"}
        ).status_code
        == 409
    )
    with pytest.raises(AssignmentClosed):
        review_submit(assignment=assignment, data=review_data())
    html = client.get(reverse("reviews:paper", args=[assignment.code])).content.decode()
    assert "This assignment is closed" in html and "<fieldset disabled" in html
    assert review.revisions.count() == 2


def test_no_rubric_for_the_stage_is_said_plainly(client, make_reviewer):
    Rubric.objects.filter(stage=Stage.IDEA).delete()
    submission = SubmissionFactory(stage=Stage.IDEA)
    review_round = review_round_create(
        name="r", stage=Stage.IDEA, due_at=timezone.now(), submissions=[submission]
    )
    assignment = assignment_add(
        review_round=review_round, reviewer=make_reviewer(), submission=submission
    )
    client.force_login(assignment.reviewer)
    html = client.get(reverse("reviews:paper", args=[assignment.code])).content.decode()
    assert "There is no rubric for this stage yet" in html
    response = client.post(
        f"/api/reviews/assignments/{assignment.code}/review/",
        data=json.dumps({"scores": {}, "confidence": 3, "strengths": "s", "weaknesses": "w"}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "no active rubric" in error_messages(response)[None][0]


def test_the_database_refuses_out_of_range_scores_and_second_reviews(assignment):
    review = review_submit(assignment=assignment, data=review_data())
    with pytest.raises(IntegrityError), transaction.atomic():
        HumanReviewScore.objects.filter(review=review, dimension="Overall").update(score=11)
    with pytest.raises(IntegrityError), transaction.atomic():
        HumanReview.objects.create(submission=review.submission, reviewer=review.reviewer)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(
            review_round=assignment.review_round,
            reviewer=assignment.reviewer,
            submission=assignment.submission,
            due_at=timezone.now(),
        )


def test_an_organiser_creates_a_round_in_the_browser_form(client, organiser, make_reviewer):
    papers = [SubmissionFactory() for _ in range(2)]
    SubmissionFactory(stage=Stage.IDEA)
    client.force_login(organiser)
    response = client.post(
        reverse("reviews:rounds"),
        {
            "name": "June",
            "stage": "end2end",
            "reviewers_per_paper": "2",
            "due_at": "2030-06-30T18:00",
            "submissions": [],
        },
        follow=True,
    )
    assert "Round “June” created." in response.content.decode()
    review_round = ReviewRound.objects.get()
    assert set(review_round.submissions.all()) == set(papers)
    bad = client.post(
        reverse("reviews:rounds"),
        {
            "name": "Mixed",
            "stage": "idea",
            "reviewers_per_paper": "2",
            "due_at": "2030-06-30T18:00",
            "submissions": [papers[0].pk],
        },
    )
    assert bad.status_code == 400
    assert "not of the idea stage" in bad.content.decode()
