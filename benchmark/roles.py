"""Who may do what on the site: the four roles, defined once, with one view
decorator and one DRF permission each. Every app asks here (benchmark is the
app every other may import), never `user.is_staff` or a group name of its own.

- organiser: runs the site: rounds, judges, releases, agent runs, the admin
  for the site's models. The `organisers` group (its members are also staff,
  so that the admin lets them in) or a superuser.
- reviewer: scores papers in human review: the `reviewers` group.
- staff: may open `/admin/`; with no group it sees nothing there. Not a role
  anyone is given alone: `accounts user-create --staff` makes an organiser.
- superuser: everything, and always an organiser.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, Group, Permission, User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

ORGANISERS_GROUP = "organisers"
REVIEWERS_GROUP = "reviewers"

# Organisers manage the models of all the site's apps in the admin
# (settings.PROJECT_APPS), and the accounts: docs/submissions.md "accounts are
# made by organisers, e.g. in /admin/".
# Not the groups' permissions, and (benchmark/admin.py) not `is_superuser`:
# an organiser cannot make anyone more than an organiser.
_ORGANISER_AUTH_PERMISSIONS = ("add_user", "change_user", "view_user", "view_group")

# The user's group names, cached on the user object: a page asks several
# times per request, and the next request has a new user object.
_GROUPS_ATTRIBUTE = "_role_groups"


def _groups(user: User) -> set[str]:
    groups: set[str] | None = getattr(user, _GROUPS_ATTRIBUTE, None)
    if groups is None:
        groups = set(user.groups.values_list("name", flat=True))
        setattr(user, _GROUPS_ATTRIBUTE, groups)
    return groups


def _active(user: User | AnonymousUser) -> bool:
    return bool(user.is_authenticated and user.is_active)


def is_superuser(user: User | AnonymousUser) -> bool:
    return _active(user) and bool(user.is_superuser)


def is_staff(user: User | AnonymousUser) -> bool:
    return _active(user) and bool(user.is_staff)


def is_organiser(user: User | AnonymousUser) -> bool:
    if is_superuser(user):
        return True
    return _active(user) and ORGANISERS_GROUP in _groups(user)  # type: ignore[arg-type]


def is_reviewer(user: User | AnonymousUser) -> bool:
    return _active(user) and REVIEWERS_GROUP in _groups(user)  # type: ignore[arg-type]


def is_reviewer_only(user: User | AnonymousUser) -> bool:
    """A reviewer who is not also an organiser: their pages are their queue."""
    return is_reviewer(user) and not is_organiser(user)


def reviewers() -> QuerySet[User]:
    """Every active user who may be given papers to review."""
    return User.objects.filter(is_active=True, groups__name=REVIEWERS_GROUP).distinct()


@dataclass(frozen=True)
class Role:
    name: str
    check: Callable[[User | AnonymousUser], bool]
    # Said to a signed-in user the role does not include (403).
    refusal: str


ROLES: dict[str, Role] = {
    role.name: role
    for role in (
        Role("organiser", is_organiser, "This page is for the site's organisers."),
        Role(
            "reviewer",
            # Organisers see what reviewers see (to run the rounds).
            lambda user: is_reviewer(user) or is_organiser(user),
            "This page is for reviewers and organisers.",
        ),
        Role("staff", is_staff, "This page is for staff."),
        Role("superuser", is_superuser, "This page is for superusers."),
    )
}


def has_role(user: User | AnonymousUser, role: str) -> bool:
    return ROLES[role].check(user)


def role_required(role: str, *, refusal: str = "") -> Callable[[Any], Any]:
    """A view decorator: anonymous visitors are sent to the sign-in page, a
    signed-in user without the role gets 403 with the role's refusal."""
    wanted = ROLES[role]

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        @login_required
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not wanted.check(request.user):
                raise PermissionDenied(refusal or wanted.refusal)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


organiser_required = role_required("organiser")
reviewer_required = role_required("reviewer")
staff_required = role_required("staff")
superuser_required = role_required("superuser")


def _permission(role: str, *, read_only_for_all: bool = False) -> type[BasePermission]:
    wanted = ROLES[role]

    class RolePermission(BasePermission):
        message = wanted.refusal

        def has_permission(self, request: Request, view: Any) -> bool:
            if read_only_for_all and request.method in SAFE_METHODS:
                return True
            return wanted.check(request.user)

    RolePermission.__name__ = RolePermission.__qualname__ = (
        f"Is{role.capitalize()}{'OrReadOnly' if read_only_for_all else ''}"
    )
    return RolePermission


IsOrganiser = _permission("organiser")
IsOrganiserOrReadOnly = _permission("organiser", read_only_for_all=True)
IsReviewer = _permission("reviewer")
IsStaff = _permission("staff")
IsSuperuser = _permission("superuser")


# ------------------------------------------------------------------ granting


def organisers_group_sync() -> Group:
    """The `organisers` group with the permissions of every model of the site's
    apps (and making accounts); run after `migrate` and on each grant, so a
    model added later is covered too."""
    group, _ = Group.objects.get_or_create(name=ORGANISERS_GROUP)
    permissions = Permission.objects.filter(content_type__app_label__in=settings.PROJECT_APPS) | (
        Permission.objects.filter(
            content_type__app_label="auth", codename__in=_ORGANISER_AUTH_PERMISSIONS
        )
    )
    group.permissions.add(*permissions)
    return group


def _forget_groups(user: User) -> None:
    if hasattr(user, _GROUPS_ATTRIBUTE):
        delattr(user, _GROUPS_ATTRIBUTE)


def organiser_grant(*, user: User) -> None:
    with transaction.atomic():
        user.groups.add(organisers_group_sync())
        if not user.is_staff:
            user.is_staff = True  # the admin lets in only staff
            user.save(update_fields=["is_staff"])
    _forget_groups(user)


def organiser_revoke(*, user: User) -> None:
    with transaction.atomic():
        user.groups.remove(*Group.objects.filter(name=ORGANISERS_GROUP))
        if user.is_staff and not user.is_superuser:
            user.is_staff = False
            user.save(update_fields=["is_staff"])
    _forget_groups(user)


def reviewer_group_join(*, user: User) -> None:
    """Into the `reviewers` group; the reviews app adds the profile
    (`reviews.services.reviewer_register`, the "reviewer" grant)."""
    user.groups.add(Group.objects.get_or_create(name=REVIEWERS_GROUP)[0])
    _forget_groups(user)


def reviewer_revoke(*, user: User) -> None:
    """Out of the `reviewers` group; their profile and reviews stay (the
    reviews are the site's record), and they get no new assignments."""
    user.groups.remove(*Group.objects.filter(name=REVIEWERS_GROUP))
    _forget_groups(user)


def superuser_grant(*, user: User) -> None:
    user.is_superuser = user.is_staff = True
    user.save(update_fields=["is_superuser", "is_staff"])


def superuser_revoke(*, user: User) -> None:
    user.is_superuser = False
    user.is_staff = ORGANISERS_GROUP in set(user.groups.values_list("name", flat=True))
    user.save(update_fields=["is_superuser", "is_staff"])


def user_roles(user: User) -> list[str]:
    """The roles `user` holds, by name (what `accounts role-add` prints)."""
    _forget_groups(user)
    held = {
        "organiser": is_organiser(user),
        "reviewer": is_reviewer(user),  # in the group, not by being an organiser
        "staff": is_staff(user),
        "superuser": is_superuser(user),
    }
    return [name for name, on in held.items() if on]
