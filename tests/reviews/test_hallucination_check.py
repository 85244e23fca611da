"""The experts' hallucination check in the site: an experiment or end-to-end
round's form asks the four questions (yes, no, not sure, with evidence), blind:
a reviewer sees their own answers only, never another reviewer's nor a judge's
findings, and the answers become public only with the review (its round
released)."""

from typing import Any

import pytest
from django.urls import reverse

from judging.models import HallucinationFinding, JudgmentKind
from reviews.models import HumanHallucinationCheck
from reviews.selectors import hallucination_answers
from reviews.services import review_round_close, review_round_release, review_submit
from tests.errors import error_messages

from .scenario import review_data, scenario_build

pytestmark = pytest.mark.django_db


def test_the_questions_are_required_answered_and_kept_with_the_review(client):
    world = scenario_build()
    client.force_login(world.assignment_a.reviewer)
    url = reverse("reviews:paper", args=[world.assignment_a.code])
    html = client.get(url).content.decode()
    assert 'data-testid="hallucination-check"' in html
    assert "Nonexistent Citations" in html and "Not sure" in html

    missing = review_data()
    del missing["hallucination_mathematical_errors"]
    refused = client.post(url, missing)
    assert refused.status_code == 400
    assert "Mathematical Errors: answer yes, no or not sure." in refused.content.decode()

    answered = review_data(
        hallucination_faked_experimental_results="yes",
        hallucination_faked_experimental_results_evidence="Table 2 is not in the log",
        hallucination_mathematical_errors="not_sure",
    )
    assert client.post(url, answered).status_code == 302
    checks = dict(
        HumanHallucinationCheck.objects.filter(
            review__reviewer=world.assignment_a.reviewer
        ).values_list("type", "answer")
    )
    assert checks == {
        "faked_experimental_results": "yes",
        "hallucinated_methodology": "no",
        "nonexistent_citations": "no",
        "mathematical_errors": "not_sure",
    }
    # The reviewer's own answers come back on the page.
    html = client.get(url).content.decode()
    assert "Table 2 is not in the log" in html


def test_a_reviewer_never_sees_another_reviewers_check_nor_a_judges_findings(client):
    world = scenario_build()
    # Reviewer b has submitted, and adds a telling piece of evidence (the
    # answers themselves stay as first submitted: issue 40).
    review_submit(
        assignment=world.assignment_b,
        data=review_data(
            hallucination_hallucinated_methodology_evidence="EVIDENCE-OF-REVIEWER-B",
        ),
    )
    judgment = world.submission.judgments.first()
    assert judgment is not None
    judgment.kind = JudgmentKind.HALLUCINATION
    judgment.has_hallucination = True
    judgment.save()
    HallucinationFinding.objects.create(
        judgment=judgment, type="nonexistent_citations", evidence="EVIDENCE-OF-A-JUDGE"
    )

    client.force_login(world.assignment_a.reviewer)
    html = client.get(reverse("reviews:paper", args=[world.assignment_a.code])).content.decode()

    assert "EVIDENCE-OF-REVIEWER-B" not in html and "EVIDENCE-OF-A-JUDGE" not in html
    # Nor on the public fabrication page while the paper waits for their review...
    page = client.get("/fabrication/?stage=end2end").content.decode()
    assert "EVIDENCE-OF-A-JUDGE" not in page and "EVIDENCE-OF-REVIEWER-B" not in page
    # ...where everyone else reads the judge's evidence once the round is closed
    # (not released: the reviewers' checks stay private).
    review_round_close(review_round=world.review_round)
    client.logout()
    public = client.get("/fabrication/?stage=end2end").content.decode()
    assert "EVIDENCE-OF-A-JUDGE" in public and "EVIDENCE-OF-REVIEWER-B" not in public


def test_the_answers_are_public_only_once_the_round_is_released(client):
    world = scenario_build()
    ids = [world.submission.pk]
    assert hallucination_answers(submission_ids=ids) == {}  # b and d submitted, unreleased

    review_round_release(review_round=world.review_round)

    answers = hallucination_answers(submission_ids=ids)[world.submission.pk]
    assert answers["faked_experimental_results"] == ["no", "no"]


def test_the_api_takes_the_answers_and_names_a_bad_one(client):
    world = scenario_build()
    client.force_login(world.assignment_a.reviewer)
    url = f"/api/reviews/assignments/{world.assignment_a.code}/review/"
    body: dict[str, Any] = {
        "scores": {"Clarity": 6, "Novelty": 7, "Soundness": 4, "Significance": 5, "Overall": 5},
        "confidence": 4,
        "strengths": "S",
        "weaknesses": "W",
        "hallucination": {
            "faked_experimental_results": {"answer": "maybe"},
            "hallucinated_methodology": {"answer": "no"},
            "nonexistent_citations": "no",
            "mathematical_errors": {"answer": "not_sure", "evidence": "eq. 3"},
        },
    }
    import json

    bad = client.post(url, json.dumps(body), content_type="application/json")
    assert bad.status_code == 400
    assert "hallucination.faked_experimental_results" in error_messages(bad)

    body["hallucination"]["faked_experimental_results"] = {"answer": "yes", "evidence": "T2"}
    ok = client.post(url, json.dumps(body), content_type="application/json")
    assert ok.status_code == 201
    assert HumanHallucinationCheck.objects.filter(
        review__reviewer=world.assignment_a.reviewer, type="mathematical_errors", evidence="eq. 3"
    ).exists()
