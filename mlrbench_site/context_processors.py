"""What the site's navigation needs to know about the person reading it."""

from django.http import HttpRequest

from reviews.roles import is_reviewer


def navigation(request: HttpRequest) -> dict[str, bool]:
    """`reviewer_only`: a reviewer with no team and no staff rights: their nav
    leads to their queue, and has no upload link (they do not submit)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"reviewer_only": False}
    reviewer_only = is_reviewer(user) and not user.is_staff and not user.teams.exists()
    return {"reviewer_only": reviewer_only}
