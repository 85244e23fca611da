"""Which submissions a user may see on pages that name their agent.

Everything is public except the system agents' submissions (the judges'
canaries: staff only) and what another app must keep from one user for a
while: a reviewer must not learn who wrote a paper they have not reviewed
yet. Apps say so through the hooks named in `SUBMISSION_VISIBILITY_HOOKS`
(dotted paths to `hook(user) -> set of submission ids to hide`), so that
`benchmark` and the pages built on it never import those apps.
"""

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from benchmark.models import Agent, Task
from benchmark.roles import is_organiser
from common.hooks import setting_callables

from .models import Submission


def sees_system_agents(user: User | AnonymousUser) -> bool:
    """Organisers see the system agents' submissions (the judges' canaries); no one else."""
    return is_organiser(user)


def staff_only_submission(*, user: User | AnonymousUser, submission_id: int) -> bool:
    """Whether `submission_id` is a system agent's that `user` may not see."""
    return (
        not sees_system_agents(user)
        and Submission.objects.system().filter(pk=submission_id).exists()
    )


def agents_visible_to(*, user: User | AnonymousUser, agents: QuerySet[Agent]) -> QuerySet[Agent]:
    return agents if sees_system_agents(user) else agents.filter(is_system=False)


def _blind_submission_ids(user: User | AnonymousUser) -> set[int]:
    if not user.is_authenticated:
        return set()
    hidden: set[int] = set()
    for hook in setting_callables("SUBMISSION_VISIBILITY_HOOKS"):
        hidden |= set(hook(user))
    return hidden


def hidden_task_ids(*, user: User | AnonymousUser) -> frozenset[int]:
    """Tasks `user` reviews blind: every view of such a task leaves it out for
    them entirely. Hiding the blind paper alone would let them learn its
    agent by elimination (the agent missing from the task's rows)."""
    blind = _blind_submission_ids(user)
    if not blind:
        return frozenset()
    return frozenset(
        Submission.objects.filter(id__in=blind).values_list("task_id", flat=True).distinct()
    )


def task_hidden_from(*, user: User | AnonymousUser, slug: str) -> bool:
    """Whether the task `slug` is one `user` reviews blind (see `hidden_task_ids`)."""
    tasks = hidden_task_ids(user=user)
    return bool(tasks) and Task.objects.filter(id__in=tasks, slug=slug).exists()


def hidden_submission_ids(*, user: User | AnonymousUser) -> frozenset[int]:
    """Ids of the submissions `user` may not see with their agent's identity:
    every submission of a task they review blind (`hidden_task_ids`)."""
    tasks = hidden_task_ids(user=user)
    if not tasks:
        return frozenset()
    return frozenset(Submission.objects.filter(task_id__in=tasks).values_list("id", flat=True))


def omitted_submission_ids(*, user: User | AnonymousUser) -> frozenset[int]:
    """Ids left out of every page for everyone the hooks named in
    `SUBMISSION_OMISSION_HOOKS` say (anonymous visitors included): every run of
    a task with a paper in an open blind review round, so that a reviewer signed
    out learns nothing either. Unlike `hidden_submission_ids`, nothing is refused for it (the
    export and releases stay open; they leave the rows out)."""
    omitted: set[int] = set()
    for hook in setting_callables("SUBMISSION_OMISSION_HOOKS"):
        omitted |= set(hook(user))
    return frozenset(omitted)


def unseen_submission_ids(*, user: User | AnonymousUser) -> frozenset[int]:
    """Hidden from this user or omitted for everyone: what no page shows them."""
    return hidden_submission_ids(user=user) | omitted_submission_ids(user=user)


def submissions_visible_to(
    *,
    user: User | AnonymousUser,
    submissions: QuerySet[Submission],
    unseen: frozenset[int] | None = None,
) -> QuerySet[Submission]:
    """`submissions` less what `user` may not see (`unseen`: `unseen_submission_ids`,
    when the caller has read it for this request already)."""
    if not sees_system_agents(user):
        submissions = submissions.filter(agent__is_system=False)
    hidden = unseen_submission_ids(user=user) if unseen is None else unseen
    return submissions.exclude(id__in=hidden) if hidden else submissions
