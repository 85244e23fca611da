"""What the site's navigation needs to know about the person reading it."""

from django.http import HttpRequest

from benchmark.roles import is_organiser, is_reviewer


def navigation(request: HttpRequest) -> dict[str, bool]:
    """`is_organiser`: the organisers' links and buttons (agent runs, "Judge
    now", re-runs); `reviewer_only`: a reviewer with no team who is not an
    organiser: their nav leads to their queue, and has no upload link (they do
    not submit)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"reviewer_only": False, "is_organiser": False}
    organiser = is_organiser(user)
    reviewer_only = is_reviewer(user) and not organiser and not user.teams.exists()
    return {"reviewer_only": reviewer_only, "is_organiser": organiser}
