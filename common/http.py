"""Request types for views, and the one JSON error answer of the HTML views."""

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, JsonResponse

from common.errors import ApplicationError


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


def json_error(error: ApplicationError, *, status: int | None = None) -> JsonResponse:
    """An HTML view's JSON answer to an error, in the API's one shape
    (`common.errors`); `status` overrides the error's own where a view knows better."""
    return JsonResponse(error.body(), status=status or error.status_code)
