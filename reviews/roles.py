"""Who may do what in human review. Roles are the Django groups `reviewers`
and `organisers`; a superuser is always an organiser."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from .models import ORGANISERS_GROUP, REVIEWERS_GROUP


def _in_group(user: AbstractBaseUser | AnonymousUser, group: str) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    # Cached on the user object: a page asks several times per request.
    cache = getattr(user, "_review_groups", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._review_groups = cache
    return group in cache


def is_reviewer(user: AbstractBaseUser | AnonymousUser) -> bool:
    return _in_group(user, REVIEWERS_GROUP)


def is_organiser(user: AbstractBaseUser | AnonymousUser) -> bool:
    if user.is_authenticated and user.is_active and user.is_superuser:
        return True
    return _in_group(user, ORGANISERS_GROUP)
