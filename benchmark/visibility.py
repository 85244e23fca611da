"""Which submissions a user may see on pages that name their agent.

Everything is public except what another app must keep from one user for a
while: a reviewer must not learn who wrote a paper they have not reviewed
yet. Apps say so through the hooks named in `SUBMISSION_VISIBILITY_HOOKS`
(dotted paths to `hook(user) -> set of submission ids to hide`), so that
`benchmark` and the pages built on it never import those apps.
"""

from functools import cache

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.utils.module_loading import import_string

from .models import Submission


@cache
def _hooks(paths: tuple[str, ...]) -> list:
    return [import_string(path) for path in paths]


def hidden_submission_ids(*, user: User | AnonymousUser) -> frozenset[int]:
    """Ids of the submissions `user` may not see with their agent's identity."""
    if not user.is_authenticated:
        return frozenset()
    hidden: set[int] = set()
    for hook in _hooks(tuple(settings.SUBMISSION_VISIBILITY_HOOKS)):
        hidden |= set(hook(user))
    return frozenset(hidden)


def submissions_visible_to(
    *, user: User | AnonymousUser, submissions: QuerySet[Submission]
) -> QuerySet[Submission]:
    hidden = hidden_submission_ids(user=user)
    return submissions.exclude(id__in=hidden) if hidden else submissions
