"""Automatic and manual assignment on generated data: N reviewers per paper,
never above a reviewer's maximum load, never a paper of the reviewer's own
team, never twice; matching topics first; reminders by email."""

import random
from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from benchmark.models import Topic
from reviews.models import Assignment
from reviews.services import (
    AssignmentRefused,
    assignment_add,
    assignment_remove,
    assignments_generate,
    reminders_send,
    review_round_create,
    review_submit,
)
from submissions.models import Stage
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory
from tests.submissions.factories import SubmissionFactory

from .scenario import review_data

pytestmark = pytest.mark.django_db


def _round(submissions, n=2, stage=Stage.END2END):
    return review_round_create(
        name="round",
        stage=stage,
        due_at=timezone.now() + timedelta(days=7),
        submissions=submissions,
        reviewers_per_paper=n,
    )


def test_generated_data_respects_n_load_and_team_conflicts(make_reviewer):
    rng = random.Random(3)  # noqa: S311 - reproducible test data
    reviewers = [make_reviewer(max_load=rng.choice([3, 4, 5])) for _ in range(14)]
    teams = [TeamFactory(members=rng.sample(reviewers, 3)) for _ in range(4)]
    papers = [SubmissionFactory(agent=AgentFactory(team=rng.choice(teams))) for _ in range(18)]
    # Another round's open assignment counts towards the load.
    other = _round([SubmissionFactory()], n=1)
    assignment_add(review_round=other, reviewer=reviewers[0], submission=other.submissions.get())

    review_round = _round(papers, n=3)
    plan = assignments_generate(review_round=review_round)

    assert plan.short == {}
    assignments = list(Assignment.objects.filter(review_round=review_round))
    assert len(assignments) == len(plan.created) == 18 * 3
    per_paper = Counter(a.submission_id for a in assignments)
    assert set(per_paper.values()) == {3}
    loads = Counter(a.reviewer_id for a in Assignment.objects.filter(closed_at__isnull=True))
    profiles = {r.id: r.reviewer_profile.max_load for r in reviewers}
    assert all(loads[r] <= profiles[r] for r in profiles)
    for a in assignments:
        team_members = set(a.submission.agent.team.members.values_list("id", flat=True))
        assert a.reviewer_id not in team_members
    assert len({(a.reviewer_id, a.submission_id) for a in assignments}) == len(assignments)
    assert len({a.code for a in assignments}) == len(assignments)
    # Run again: every paper already has its N, nothing is added twice.
    assert assignments_generate(review_round=review_round).created == []


def test_load_is_balanced_without_constraints(make_reviewer):
    reviewers = [make_reviewer(max_load=10) for _ in range(7)]
    review_round = _round([SubmissionFactory() for _ in range(10)], n=2)
    assignments_generate(review_round=review_round)
    loads = Counter(a.reviewer_id for a in Assignment.objects.all())
    assert sum(loads.values()) == 20
    assert set(loads) == {r.id for r in reviewers}
    assert max(loads.values()) - min(loads.values()) <= 1


def test_matching_topics_come_first(make_reviewer):
    experts = [make_reviewer(expertise=[Topic.ML_THEORY], max_load=10) for _ in range(2)]
    others = [make_reviewer(expertise=[Topic.COMPUTER_VISION], max_load=10) for _ in range(4)]
    theory = [SubmissionFactory(task=TaskFactory(topic=Topic.ML_THEORY)) for _ in range(4)]
    vision = [SubmissionFactory(task=TaskFactory(topic=Topic.COMPUTER_VISION)) for _ in range(4)]
    assignments_generate(review_round=_round(theory + vision, n=2))
    for paper in theory:
        assert set(paper.review_assignments.values_list("reviewer_id", flat=True)) == {
            e.id for e in experts
        }
    vision_reviewers = set(
        Assignment.objects.filter(submission__in=vision).values_list("reviewer_id", flat=True)
    )
    assert vision_reviewers <= {o.id for o in others}


def test_too_few_reviewers_leaves_papers_short_and_says_so(make_reviewer, organiser, client):
    owner = make_reviewer(max_load=5)
    make_reviewer(max_load=1)
    make_reviewer(max_load=1)
    team = TeamFactory(members=[owner])
    papers = [SubmissionFactory(agent=AgentFactory(team=team)) for _ in range(3)]
    review_round = _round(papers, n=1)
    client.force_login(organiser)
    response = client.post(reverse("reviews:round-assign", args=[review_round.pk]), follow=True)
    html = response.content.decode()
    assert "2 assignment(s) made." in html
    assert "1 paper(s) still lack reviewers" in html
    assert not Assignment.objects.filter(reviewer=owner).exists()
    assert "Papers lacking reviewers" in html


def test_manual_add_and_remove_follow_the_same_rules(make_reviewer):
    member = make_reviewer()
    full = make_reviewer(max_load=0)
    free = make_reviewer()
    team = TeamFactory(members=[member])
    paper = SubmissionFactory(agent=AgentFactory(team=team))
    review_round = _round([paper], n=2)

    with pytest.raises(AssignmentRefused, match="conflict of interest"):
        assignment_add(review_round=review_round, reviewer=member, submission=paper)
    with pytest.raises(AssignmentRefused, match="maximum"):
        assignment_add(review_round=review_round, reviewer=full, submission=paper)
    with pytest.raises(AssignmentRefused, match="not of the round's stage"):
        assignment_add(
            review_round=review_round,
            reviewer=free,
            submission=SubmissionFactory(stage=Stage.IDEA),
        )
    assignment = assignment_add(review_round=review_round, reviewer=free, submission=paper)
    with pytest.raises(AssignmentRefused, match="already assigned"):
        assignment_add(review_round=review_round, reviewer=free, submission=paper)

    from tests.judging.factories import RubricFactory

    RubricFactory()
    review_submit(assignment=assignment, data=review_data())
    with pytest.raises(AssignmentRefused, match="submitted a review"):
        assignment_remove(assignment=assignment)
    other = assignment_add(review_round=review_round, reviewer=make_reviewer(), submission=paper)
    assignment_remove(assignment=other)
    assert not Assignment.objects.filter(pk=other.pk).exists()


def test_reminders_go_to_who_has_not_submitted_and_stay_blind(make_reviewer, rubric, mailoutbox):
    late, done = make_reviewer("late-reviewer"), make_reviewer("done-reviewer")
    agent = AgentFactory(name="secret-agent-x", display_name="Secret X")
    papers = [SubmissionFactory(agent=agent), SubmissionFactory()]
    review_round = _round(papers, n=2)
    assignments_generate(review_round=review_round)
    for assignment in Assignment.objects.filter(reviewer=done):
        review_submit(assignment=assignment, data=review_data())

    sent = reminders_send(review_round=review_round, queue_url="http://testserver/reviews/")

    assert sent == 1
    (message,) = mailoutbox
    assert message.to == [late.email]
    codes = list(Assignment.objects.filter(reviewer=late).values_list("code", flat=True))
    assert all(code in message.body for code in codes)
    assert "secret-agent-x" not in message.body and "Secret X" not in message.body
    assert "http://testserver/reviews/" in message.body
    assert all(a.reminded_at for a in Assignment.objects.filter(reviewer=late))
    assert not any(a.reminded_at for a in Assignment.objects.filter(reviewer=done))
