"""The judgments panel as a page of its own and as a fragment the poller swaps
in, and the organiser's re-run button."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from benchmark.roles import organiser_required
from common.errors import ApplicationError
from submissions.models import Submission
from submissions.visibility import submissions_visible_to

from .selectors import judgments_panel_context
from .services.queue import judgment_rerun, judgments_queue


def _submission(request: HttpRequest, submission_id: int) -> Submission:
    submissions = submissions_visible_to(
        user=request.user, submissions=Submission.objects.select_related("agent", "task")
    )
    return get_object_or_404(submissions, pk=submission_id)


def submission_judgments_view(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _submission(request, submission_id)
    return render(
        request,
        "judging/submission_judgments.html",
        {"submission": submission, "judging": judgments_panel_context(submission)},
    )


def _local_path(request: HttpRequest, url: str) -> str:
    if url and url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return url
    return ""


def submission_judgments_panel_view(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The panel's content alone, for the page's poller to swap in; `next` is the page
    it sits in, where the re-run button returns."""
    submission = _submission(request, submission_id)
    return render(
        request,
        "judging/_judgments_panel_body.html",
        {
            "judging": judgments_panel_context(submission),
            "return_to": _local_path(request, request.GET.get("next", ""))
            or reverse("judging:submission-judgments", args=[submission.pk]),
        },
    )


@require_POST
@organiser_required
def judgment_rerun_view(request: HttpRequest, judgment_id: int) -> HttpResponse:
    next_url = _local_path(request, request.POST.get("next", "")) or "/"
    try:
        judgment = judgment_rerun(judgment_id=judgment_id)
    except ApplicationError as exc:
        messages.error(request, f"Not re-run: {exc.message}.")
    else:
        messages.success(request, f"Judge {judgment.judge.name} queued again.")
    return redirect(next_url)


@require_POST
@organiser_required
def submission_judge_now_view(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Queue every active judge that has not scored the submission (the
    "Judge now" button, shown to organisers once a judge is active)."""
    submission = get_object_or_404(Submission, pk=submission_id)
    next_url = _local_path(request, request.POST.get("next", "")) or reverse(
        "judging:submission-judgments", args=[submission.pk]
    )
    report = judgments_queue(submissions=[submission])
    if report.judgment_ids:
        n = len(report.judgment_ids)
        messages.success(request, f"{n} judgment{'s' if n != 1 else ''} queued.")
    else:
        messages.error(
            request,
            "Nothing queued: "
            + ("; ".join(report.skipped) or "every active judge has already been asked")
            + ".",
        )
    return redirect(next_url)
