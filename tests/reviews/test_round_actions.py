"""A round's page and its actions: each action has its own URL that only an
organiser may post to, does what its button says and says so on the round's
page; a refused action shows the service's reason."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from reviews.models import Assignment, ReviewRound
from reviews.services import assignment_add, review_round_create
from tests.submissions.factories import SubmissionFactory

pytestmark = pytest.mark.django_db

ROUND_ACTIONS = ["round-assign", "round-remind", "round-close", "round-release"]
ASSIGNMENT_ACTIONS = ["round-assignment-remove", "round-assignment-due"]


@pytest.fixture
def review_round(db) -> ReviewRound:
    return review_round_create(
        name="Spring round",
        stage="end2end",
        due_at=timezone.now() + timedelta(days=7),
        submissions=[SubmissionFactory(), SubmissionFactory()],
        reviewers_per_paper=1,
    )


@pytest.fixture
def reviewer(make_reviewer):
    return make_reviewer("rev")


@pytest.fixture
def assignment(review_round, reviewer) -> Assignment:
    return assignment_add(
        review_round=review_round,
        reviewer=reviewer,
        submission=review_round.submissions.order_by("id").first(),
    )


def _url(name: str, review_round: ReviewRound, *args: int) -> str:
    return reverse(f"reviews:{name}", args=[review_round.pk, *args])


def _post(client, name, review_round, *args, data=None) -> str:
    """Post an action as the organiser; it always lands back on the round's page."""
    response = client.post(_url(name, review_round, *args), data or {}, follow=True)
    assert response.redirect_chain == [(reverse("reviews:round", args=[review_round.pk]), 302)]
    return response.content.decode()


def test_the_round_page_posts_each_action_to_its_own_url(
    client, organiser, review_round, assignment
):
    client.force_login(organiser)
    html = client.get(reverse("reviews:round", args=[review_round.pk])).content.decode()
    for name in [*ROUND_ACTIONS, "round-assignment-add"]:
        assert f'"{_url(name, review_round)}"' in html
    for name in ASSIGNMENT_ACTIONS:
        assert f'"{_url(name, review_round, assignment.pk)}"' in html
    # The page itself only shows; its old catch-all post is gone.
    assert client.post(reverse("reviews:round", args=[review_round.pk])).status_code == 405


def test_assign_automatically(client, organiser, review_round, reviewer):
    client.force_login(organiser)
    html = _post(client, "round-assign", review_round)
    # One reviewer with room for both papers, one reviewer per paper.
    assert "2 assignment(s) made." in html
    assert set(review_round.assignments.values_list("reviewer", flat=True)) == {reviewer.pk}


def test_add_an_assignment_and_a_bad_choice(client, organiser, review_round, reviewer):
    client.force_login(organiser)
    paper = review_round.submissions.order_by("id").last()
    html = _post(
        client,
        "round-assignment-add",
        review_round,
        data={"reviewer": reviewer.pk, "submission": paper.pk},
    )
    assert "Assignment added." in html
    assert review_round.assignments.filter(reviewer=reviewer, submission=paper).exists()
    # A paper of another round is not a choice of this one.
    other = SubmissionFactory()
    html = _post(
        client,
        "round-assignment-add",
        review_round,
        data={"reviewer": reviewer.pk, "submission": other.pk},
    )
    assert "Choose a reviewer and a paper of this round." in html
    # The same pair again: the service refuses and the page says why.
    html = _post(
        client,
        "round-assignment-add",
        review_round,
        data={"reviewer": reviewer.pk, "submission": paper.pk},
    )
    assert "is already assigned to this paper" in html
    assert review_round.assignments.count() == 1


def test_remove_an_assignment(client, organiser, review_round, assignment):
    client.force_login(organiser)
    html = _post(client, "round-assignment-remove", review_round, assignment.pk)
    assert f"Assignment {assignment.code} removed." in html
    assert not Assignment.objects.filter(pk=assignment.pk).exists()


def test_change_a_due_date(client, organiser, review_round, assignment):
    client.force_login(organiser)
    html = _post(
        client,
        "round-assignment-due",
        review_round,
        assignment.pk,
        data={"due_at": "2031-02-03T04:05"},
    )
    assert f"{assignment.code} is now due 2031-02-03 04:05." in html
    assignment.refresh_from_db()
    assert assignment.due_at == datetime(2031, 2, 3, 4, 5, tzinfo=UTC)
    html = _post(
        client, "round-assignment-due", review_round, assignment.pk, data={"due_at": "soon"}
    )
    assert "The due date must look like 2025-06-30T18:00." in html
    assignment.refresh_from_db()
    assert assignment.due_at == datetime(2031, 2, 3, 4, 5, tzinfo=UTC)


def test_an_assignment_of_another_round_is_not_found(client, organiser, review_round, assignment):
    other = review_round_create(
        name="Other round",
        stage="end2end",
        due_at=timezone.now() + timedelta(days=7),
        submissions=[SubmissionFactory()],
    )
    client.force_login(organiser)
    for name in ASSIGNMENT_ACTIONS:
        response = client.post(_url(name, other, assignment.pk), {"due_at": "2031-02-03T04:05"})
        assert response.status_code == 404
    assert Assignment.objects.filter(pk=assignment.pk, due_at=assignment.due_at).exists()


def test_remind(client, organiser, review_round, assignment):
    client.force_login(organiser)
    html = _post(client, "round-remind", review_round)
    assert "1 reminder(s) sent." in html
    (message,) = mail.outbox
    assert message.to == ["rev@example.org"] and assignment.code in message.body
    assignment.refresh_from_db()
    assert assignment.reminded_at is not None


def test_close_then_a_refused_action_says_why(client, organiser, review_round, assignment):
    client.force_login(organiser)
    html = _post(client, "round-close", review_round, data={"confirm": "yes"})
    assert "Round closed: reviews can no longer change." in html
    review_round.refresh_from_db()
    assert review_round.is_closed and not review_round.is_released
    html = _post(client, "round-assign", review_round)
    assert "this round is closed" in html


def test_release(client, organiser, review_round, assignment):
    client.force_login(organiser)
    html = _post(client, "round-release", review_round, data={"confirm": "yes"})
    assert "Round released: its submitted reviews are now public" in html
    review_round.refresh_from_db()
    assert review_round.is_released and review_round.is_closed


def _every_action_url(review_round, assignment) -> list[str]:
    return [
        *(_url(name, review_round) for name in [*ROUND_ACTIONS, "round-assignment-add"]),
        *(_url(name, review_round, assignment.pk) for name in ASSIGNMENT_ACTIONS),
    ]


def test_only_organisers_may_act_on_a_round(client, review_round, assignment, reviewer):
    urls = _every_action_url(review_round, assignment)
    login = reverse("login")  # the one sign-in page
    for url in urls:
        response = client.post(url)
        assert response.status_code == 302 and response["Location"].startswith(login)
    client.force_login(reviewer)
    for url in urls:
        assert client.post(url, {"due_at": "2031-02-03T04:05"}).status_code == 403
    review_round.refresh_from_db()
    assert not review_round.is_closed and review_round.assignments.count() == 1
    assert Assignment.objects.get(pk=assignment.pk).due_at == assignment.due_at
    assert mail.outbox == []


def test_an_action_is_a_post(client, organiser, review_round, assignment):
    client.force_login(organiser)
    for url in _every_action_url(review_round, assignment):
        assert client.get(url).status_code == 405
    review_round.refresh_from_db()
    assert not review_round.is_closed


@pytest.mark.parametrize("action", ["round-close", "round-release"])
def test_close_and_release_ask_first_showing_the_open_assignments(
    client, organiser, review_round, assignment, action
):
    """A round closed at 3 of 12 reviews stays closed: the first POST only asks."""
    client.force_login(organiser)
    response = client.post(_url(action, review_round))
    assert response.status_code == 200
    html = response.content.decode()
    assert "1 of 1 assignment still open" in html
    assert 'name="confirm" value="yes"' in html
    review_round.refresh_from_db()
    assert not review_round.is_closed and not review_round.is_released


def test_release_is_a_secondary_action_after_assigning(client, organiser, review_round):
    client.force_login(organiser)
    html = client.get(reverse("reviews:round", args=[review_round.pk])).content.decode()
    assert html.index('data-testid="assign-round"') < html.index('data-testid="release-round"')
    release = html[html.rindex("<button", 0, html.index('data-testid="release-round"')) :]
    assert 'class="button secondary"' in release[:200]
