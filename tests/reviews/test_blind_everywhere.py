"""Blindness beyond the review pages: the public pages that name agents hide
a paper from the reviewer who has not reviewed it yet, and only from them."""

import pytest

from reviews.services import review_round_close, review_submit
from tests.errors import error_messages
from tests.reviews.scenario import AGENT_NAME, review_data, scenario_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario(media_root):
    return scenario_build()


def _pages(s) -> dict[str, str]:
    submission = s.submission
    return {
        "submission page": f"/submissions/{submission.pk}/",
        "artifact page": f"/submissions/{submission.pk}/files/results/paper.md",
        "artifact file": f"/submissions/{submission.pk}/raw/results/paper.md",
        "submission API": f"/api/submissions/{submission.pk}/",
        "submission scores": f"/submissions/{submission.pk}/scores/",
        "judgments page": f"/submissions/{submission.pk}/judgments/",
        "judgments status API": f"/api/submissions/{submission.pk}/judgments/",
    }


def _lists(s) -> dict[str, str]:
    return {
        "submission list": f"/submissions/?task={s.submission.task.slug}",
        "submission list API": f"/api/submissions/?task={s.submission.task.slug}",
        "task results": f"/tasks/{s.submission.task.slug}/results/",
        "agent page": f"/agents/{AGENT_NAME}/",
        "agent submissions": f"/agents/{AGENT_NAME}/submissions/",
        "judgments API": f"/api/judgments/?submission={s.submission.pk}",
    }


def _shows_the_paper(response, s) -> bool:
    body = response.content.decode()
    if response["Content-Type"].startswith("application/json"):
        data = response.json()
        return any(
            item.get("submission", item.get("id")) == s.submission.pk
            for item in data.get("results", [])
        )
    return f"/submissions/{s.submission.pk}/" in body


def test_an_unsubmitted_reviewer_cannot_reach_the_paper_by_its_public_pages(client, scenario):
    s = scenario
    client.force_login(s.reviewer_a)

    for name, url in _pages(s).items():
        assert client.get(url).status_code == 404, name
    for name, url in _lists(s).items():
        response = client.get(url)
        assert response.status_code == 200, name
        assert not _shows_the_paper(response, s), name
    export = client.get("/api/export/")
    assert export.status_code == 403
    assert "review" in error_messages(export)[None][0]


def test_the_same_pages_show_the_paper_to_everyone_else_and_after_the_review(client, scenario):
    """While the round is open the paper is left out for everyone but organisers
    (a reviewer signed out learns nothing either: issue 32); once it closes,
    everyone who has no review of it pending sees it."""
    s = scenario
    for user in (None, s.reviewer_b, s.reviewer_c):
        client.logout()
        if user is not None:
            client.force_login(user)
        for name, url in _pages(s).items():
            assert client.get(url).status_code == 404, (name, user)
        for name, url in _lists(s).items():
            assert not _shows_the_paper(client.get(url), s), (name, user)
    client.force_login(s.organiser)
    for name, url in _pages(s).items():
        assert client.get(url).status_code == 200, name

    review_submit(assignment=s.assignment_a, data=review_data())
    review_round_close(review_round=s.review_round)
    for user in (None, s.reviewer_b, s.reviewer_c):
        client.logout()
        if user is not None:
            client.force_login(user)
        for name, url in _pages(s).items():
            assert client.get(url).status_code == 200, (name, user)
        for name, url in _lists(s).items():
            assert _shows_the_paper(client.get(url), s), (name, user)

    client.force_login(s.reviewer_a)
    for name, url in _pages(s).items():
        assert client.get(url).status_code == 200, name
    assert client.get("/api/export/").status_code == 200


def test_a_rounds_papers_are_left_out_from_create_round_on_not_from_assign(client, media_root):
    """Between "Create round" and "Assign" a paper chosen for the round was still
    public: its future reviewers could read its agent there."""
    from datetime import timedelta

    from django.utils import timezone

    from reviews.services import review_round_create
    from submissions.models import Stage
    from tests.benchmark.factories import AgentFactory
    from tests.submissions.factories import SubmissionFactory

    chosen = SubmissionFactory(agent=AgentFactory(name="chosen-agent"), stage=Stage.END2END)
    other = SubmissionFactory(agent=AgentFactory(name="other-agent"), stage=Stage.END2END)
    review_round = review_round_create(
        name="Not yet assigned",
        stage=Stage.END2END,
        due_at=timezone.now() + timedelta(days=7),
        submissions=[chosen],
        reviewers_per_paper=2,
    )
    assert not review_round.assignments.exists()

    assert client.get(f"/submissions/{chosen.pk}/").status_code == 404
    assert client.get(f"/submissions/{other.pk}/").status_code == 200
    listed = {item["id"] for item in client.get("/api/submissions/").json()["results"]}
    assert chosen.pk not in listed and other.pk in listed

    review_round_close(review_round=review_round)
    assert client.get(f"/submissions/{chosen.pk}/").status_code == 200
