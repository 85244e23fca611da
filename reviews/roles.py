"""Who may do what in human review. Roles are the Django groups `reviewers`
and `organisers`; a superuser is always an organiser."""

from django.contrib.auth.models import AnonymousUser, User

from .models import ORGANISERS_GROUP, REVIEWERS_GROUP

# The user's group names, cached on the user object: a page asks several
# times per request, and the next request has a new user object.
_GROUPS_ATTRIBUTE = "_review_groups"


def _in_group(user: User | AnonymousUser, group: str) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    groups: set[str] | None = getattr(user, _GROUPS_ATTRIBUTE, None)
    if groups is None:
        groups = set(user.groups.values_list("name", flat=True))
        setattr(user, _GROUPS_ATTRIBUTE, groups)
    return group in groups


def is_reviewer(user: User | AnonymousUser) -> bool:
    return _in_group(user, REVIEWERS_GROUP)


def is_organiser(user: User | AnonymousUser) -> bool:
    if user.is_authenticated and user.is_active and user.is_superuser:
        return True
    return _in_group(user, ORGANISERS_GROUP)
