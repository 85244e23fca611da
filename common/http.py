"""Request types for views."""

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a view behind `login_required` (or a role check built
    on it): its user is signed in, never anonymous. For annotations only;
    Django passes a plain `HttpRequest`."""

    user: User


def signed_in_user(user: User | AnonymousUser) -> User:
    """The user of a request that a permission check (`IsAuthenticated`) let
    through; an anonymous one here is a view wired without that check."""
    if not isinstance(user, User):
        raise PermissionDenied("Sign in first.")
    return user
