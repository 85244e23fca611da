"""Pages of human review: the reviewer's queue and paper, the organiser's
rounds, the CSV export and the public agreement dashboard. Thin: each parses
the request, calls a service or selector, renders."""

import mimetypes
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Concatenate, ParamSpec, cast
from urllib.parse import urlencode

from django.contrib import messages
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
)
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.utils.timezone import make_aware
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from benchmark.descriptions import task_description_html
from benchmark.roles import is_organiser, reviewer_required, reviewers, role_required
from common.csv_cells import csv_text
from common.errors import form_add_errors
from common.http import AuthenticatedHttpRequest, json_error
from judging.selectors import stage_panel
from submissions.derived import artifact_trace
from submissions.models import ArtifactKind, Stage
from submissions.selectors import trace_page
from submissions.traces import trace_format_of

from . import selectors, services
from .agreement import DimensionAgreement, Interval
from .blind import (
    artifact_for_blind_path,
    blind_agent_log_text,
    blind_log_text,
    blind_path,
    identity_words,
    submission_blind,
    trace_blind,
    trace_blind_file,
)
from .charts import agreement_charts
from .forms import (
    HALLUCINATION_REVIEW_STAGES,
    AssignmentAddForm,
    ReviewForm,
    ReviewRoundForm,
    score_field_name,
)
from .models import Assignment, ReviewRound, ReviewStatus

P = ParamSpec("P")

# Files a reviewer's browser may display inline; anything else is shown as text.
_INLINE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}


organiser_required = role_required(
    "organiser",
    refusal="This page is for the review organisers; your papers are in your review queue.",
)


def _own_assignment(request: AuthenticatedHttpRequest, code: str) -> Assignment:
    try:
        return selectors.assignment_of_reviewer(user=request.user, code=code)
    except Assignment.DoesNotExist as exc:
        # Somebody else's code is answered exactly like a code that does not exist.
        raise Http404("No such paper in your queue.") from exc


# Reviewer -----------------------------------------------------------------------------------


@never_cache
@reviewer_required
def queue_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    assignments = list(selectors.reviewer_assignments(user=request.user))
    done = sum(a.status == "submitted" for a in assignments)
    return render(
        request,
        "reviews/queue.html",
        {
            "assignments": assignments,
            "n_done": done,
            "n_total": len(assignments),
            "is_organiser": is_organiser(request.user),
        },
    )


def _form_initial(review, dimensions) -> dict:
    if review is None:
        return {}
    if review.draft:
        return dict(review.draft)
    if review.status == ReviewStatus.SUBMITTED:
        initial = {
            "confidence": review.confidence,
            "strengths": review.strengths,
            "weaknesses": review.weaknesses,
            "comments": review.comments,
        }
        for score in review.scores.all():
            initial[score_field_name(score.dimension)] = score.score
        # Only the reviewer's own answers: nobody else's check is ever shown here.
        initial.update(services.review_hallucination_initial(review))
        return initial
    return {}


@never_cache
@reviewer_required
def paper_view(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    """Long because the review form's submit, refusal and draft answers share the assignment and its
    rubric."""
    assignment = _own_assignment(request, code)
    status = 200
    form = None
    review = selectors.review_of_assignment(assignment)
    rubric = (
        review.rubric
        if review and review.rubric_id
        else selectors.rubric_for_stage(assignment.review_round.stage)
    )
    dimensions = rubric.dimensions if rubric else []
    hallucination = assignment.review_round.stage in HALLUCINATION_REVIEW_STAGES
    if request.method == "POST":
        try:
            review = services.review_submit(assignment=assignment, data=request.POST)
        except services.ReviewInvalid as exc:
            frozen = services.review_frozen_values(review)
            form = ReviewForm(
                request.POST,
                dimensions=dimensions,
                hallucination=hallucination,
                # Disabled, so shown as submitted (a disabled field is not posted).
                frozen=frozen,
                initial=frozen,
            )
            form_add_errors(form, exc)
            status = 400
        except (services.AssignmentClosed, services.ScoresFrozen) as exc:
            messages.error(request, str(exc))
            return redirect("reviews:paper", code=code)
        else:
            messages.success(
                request,
                "Review updated." if review.revisions.count() > 1 else "Review submitted.",
            )
            return redirect("reviews:paper", code=code)
        review = selectors.review_of_assignment(assignment)
    frozen = services.review_frozen_values(review)
    if form is None:
        form = ReviewForm(
            initial={**_form_initial(review, dimensions), **frozen},
            dimensions=dimensions,
            hallucination=hallucination,
            frozen=frozen,
        )
    submission = submission_blind(assignment.submission)
    revealed = selectors.identity_visible(assignment=assignment, review=review)
    context = {
        "assignment": assignment,
        "submission": submission,
        "task": submission.task,
        "task_html": task_description_html(submission.task),
        "rubric": rubric,
        "form": form,
        "review": review,
        "submitted": revealed,
        "revisions": list(review.revisions.all()) if review else [],
        "reveal": selectors.assignment_reveal(assignment=assignment) if revealed else None,
        "closed": assignment.is_closed,
        "scores_frozen": bool(frozen),
    }
    return render(request, "reviews/paper.html", context, status=status)


BLIND_LOG_MAX_BYTES = 10 * 1024 * 1024


@never_cache
@reviewer_required
def paper_file_view(request: AuthenticatedHttpRequest, code: str, path: str) -> HttpResponseBase:
    """A file of the paper, by its blind path: the only way a reviewer reaches artifacts."""
    assignment = _own_assignment(request, code)
    artifact = artifact_for_blind_path(assignment.submission, path)
    if artifact is None or not artifact.file:
        raise Http404("No such file in this paper.")
    if request.GET.get("steps") is not None:
        return _blind_trace_response(request, assignment, artifact, path)
    content_type, _ = mimetypes.guess_type(posixpath.basename(path))
    if content_type not in _INLINE_TYPES:
        # Never let the site's origin run an uploaded HTML or SVG file.
        content_type = "text/plain; charset=utf-8"
    words = identity_words(assignment.submission.agent)
    reader = trace_format_of(artifact.path, artifact.kind)
    if reader == "json":
        # A trace file is served as the blind filter leaves its steps: its own
        # bytes keep each step's tokens and cost.
        response: HttpResponseBase = _blind_trace_file_response(assignment, artifact)
    elif artifact.kind in (ArtifactKind.LOG, ArtifactKind.TRACE) or _is_text(content_type):
        # Every text a reviewer reads (logs, results, code, token usage) made neutral.
        response = _blind_log_response(assignment, artifact, agent_log=reader is not None)
    else:
        response = FileResponse(artifact.file.open("rb"), content_type=content_type)
    # The blind name, from the real path (a link may name the file another way).
    shown = posixpath.basename(blind_path(getattr(artifact, "real_path", artifact.path), words))
    response["Content-Disposition"] = f'inline; filename="{shown}"'
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _blind_trace_response(
    request: AuthenticatedHttpRequest, assignment: Assignment, artifact, path: str
) -> HttpResponse:
    """The trace viewer on a trace's stored steps, made neutral (reviews.blind)."""
    trace = artifact_trace(artifact)
    if trace is None:
        raise Http404("This file is not a trace the site reads.")
    blind = trace_blind(trace, identity_words(assignment.submission.agent))
    context = {
        "assignment": assignment,
        "path": path,
        "view": trace_page(
            blind, page_number=request.GET.get("page"), markup=False, query="steps=1&"
        ),
    }
    return render(request, "reviews/trace.html", context)


def _is_text(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type == "application/json"


def _blind_log_response(assignment: Assignment, artifact, *, agent_log: bool) -> HttpResponse:
    """A log or text file with the paths and names that would tell the agent
    made neutral (reviews.blind), and a coding agent's own log (`agent_log`)
    without its token counts; a reviewer reads at most the first
    BLIND_LOG_MAX_BYTES of it."""
    with artifact.file.open("rb") as handle:
        data = handle.read(BLIND_LOG_MAX_BYTES + 1)
    text = data[:BLIND_LOG_MAX_BYTES].decode("utf-8", errors="replace")
    if len(data) > BLIND_LOG_MAX_BYTES:
        text += "\n[... cut: the rest of this file is not shown ...]\n"
    words = identity_words(assignment.submission.agent)
    blind = blind_agent_log_text(text, words) if agent_log else blind_log_text(text, words)
    return HttpResponse(blind, content_type="text/plain; charset=utf-8")


def _blind_trace_file_response(assignment: Assignment, artifact) -> HttpResponse:
    trace = artifact_trace(artifact)
    if trace is None:
        raise Http404("This trace cannot be read now.")
    words = identity_words(assignment.submission.agent)
    return HttpResponse(trace_blind_file(trace, words), content_type="text/plain; charset=utf-8")


@never_cache
@require_POST
@reviewer_required
def draft_view(request: AuthenticatedHttpRequest, code: str) -> JsonResponse:
    assignment = _own_assignment(request, code)
    try:
        review = services.review_draft_save(assignment=assignment, data=request.POST)
    except services.AssignmentClosed as exc:
        return json_error(exc)
    saved_at = review.draft_saved_at or review.updated_at
    return JsonResponse({"saved_at": saved_at.isoformat(), "pending_edits": bool(review.draft)})


# Organiser ----------------------------------------------------------------------------------


@never_cache
@organiser_required
def rounds_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = ReviewRoundForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            review_round = services.review_round_create(
                name=data["name"],
                stage=data["stage"],
                due_at=data["due_at"],
                reviewers_per_paper=data["reviewers_per_paper"],
                submissions=list(data["submissions"]) or None,
                created_by=request.user,
            )
        except services.ReviewInvalid as exc:
            form_add_errors(form, exc)
        else:
            messages.success(request, f"Round “{review_round.name}” created.")
            return redirect("reviews:round", pk=review_round.pk)
    return render(
        request,
        "reviews/rounds.html",
        {"rounds": selectors.review_rounds(), "form": form},
        status=400 if request.method == "POST" else 200,
    )


def _reviewers():
    return reviewers().order_by("username")


@never_cache
@require_GET
@organiser_required
def round_view(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """A round's page; each of its buttons posts to one of the action views below."""
    review_round = get_object_or_404(ReviewRound, pk=pk)
    return render(
        request,
        "reviews/round.html",
        {
            "round": review_round,
            "progress": selectors.round_progress(review_round=review_round),
            "add_form": AssignmentAddForm(review_round=review_round, reviewers=_reviewers()),
        },
    )


# An organiser's action on a round: the view gets the round, says what it did
# in a message, and the organiser is sent back to the round's page.
RoundAction = Callable[Concatenate[HttpRequest, ReviewRound, P], HttpResponse | None]


def _round_action(
    action: RoundAction[P],
) -> Callable[Concatenate[HttpRequest, int, P], HttpResponse]:
    @never_cache
    @require_POST
    @organiser_required
    @wraps(action)
    def view(request: HttpRequest, pk: int, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        review_round = get_object_or_404(ReviewRound, pk=pk)
        try:
            response = action(request, review_round, *args, **kwargs)
        except services.ReviewError as exc:
            messages.error(request, str(exc))
        else:
            if response is not None:
                return response
        return redirect("reviews:round", pk=review_round.pk)

    return view


def _round_assignment(review_round: ReviewRound, assignment_pk: int) -> Assignment:
    return get_object_or_404(Assignment, pk=assignment_pk, review_round=review_round)


@_round_action
def round_assign_view(request: HttpRequest, review_round: ReviewRound) -> None:
    """Assign reviewers automatically."""
    plan = services.assignments_generate(review_round=review_round)
    messages.success(request, f"{len(plan.created)} assignment(s) made.")
    if plan.short:
        messages.warning(
            request,
            f"{len(plan.short)} paper(s) still lack reviewers: no eligible "
            "reviewer has room (team conflicts or maximum loads).",
        )


@_round_action
def round_assignment_add_view(request: HttpRequest, review_round: ReviewRound) -> None:
    form = AssignmentAddForm(request.POST, review_round=review_round, reviewers=_reviewers())
    if not form.is_valid():
        messages.error(request, "Choose a reviewer and a paper of this round.")
        return
    services.assignment_add(
        review_round=review_round,
        reviewer=form.cleaned_data["reviewer"],
        submission=form.cleaned_data["submission"],
    )
    messages.success(request, "Assignment added.")


@_round_action
def round_assignment_remove_view(
    request: HttpRequest, review_round: ReviewRound, assignment_pk: int
) -> None:
    assignment = _round_assignment(review_round, assignment_pk)
    services.assignment_remove(assignment=assignment)
    messages.success(request, f"Assignment {assignment.code} removed.")


@_round_action
def round_assignment_due_view(
    request: HttpRequest, review_round: ReviewRound, assignment_pk: int
) -> None:
    assignment = _round_assignment(review_round, assignment_pk)
    due = parse_datetime(request.POST.get("due_at", ""))
    if due is None:
        messages.error(request, "The due date must look like 2025-06-30T18:00.")
        return
    services.assignment_due_set(
        assignment=assignment, due_at=due if due.tzinfo else make_aware(due)
    )
    messages.success(request, f"{assignment.code} is now due {due:%Y-%m-%d %H:%M}.")


@_round_action
def round_remind_view(request: HttpRequest, review_round: ReviewRound) -> None:
    sent = services.reminders_send(
        review_round=review_round,
        queue_url=request.build_absolute_uri(reverse("reviews:queue")),
    )
    messages.success(request, f"{sent} reminder(s) sent.")


def _round_confirmation(
    request: HttpRequest, review_round: ReviewRound, action: str
) -> HttpResponse | None:
    """Closing and releasing cannot be undone: the first POST answers a page
    that says how many assignments are still open; its button confirms."""
    if request.POST.get("confirm") == "yes":
        return None
    progress = selectors.round_progress(review_round=review_round)
    return render(
        request,
        "reviews/round_confirm.html",
        {
            "round": review_round,
            "action": action,
            "progress": progress,
            "n_open": progress.n_total - progress.n_submitted,
        },
    )


@_round_action
def round_close_view(request: HttpRequest, review_round: ReviewRound) -> HttpResponse | None:
    confirmation = _round_confirmation(request, review_round, "close")
    if confirmation is not None:
        return confirmation
    services.review_round_close(review_round=review_round)
    messages.success(request, "Round closed: reviews can no longer change.")
    return None


@_round_action
def round_release_view(request: HttpRequest, review_round: ReviewRound) -> HttpResponse | None:
    confirmation = _round_confirmation(request, review_round, "release")
    if confirmation is not None:
        return confirmation
    services.review_round_release(review_round=review_round)
    messages.success(
        request,
        "Round released: its submitted reviews are now public on the "
        "leaderboard and in the export.",
    )
    return None


def reviews_csv_response(stage: str) -> HttpResponse:
    header, rows = selectors.reviews_export(stage=stage)
    response = HttpResponse(
        csv_text(header, rows, lineterminator="\n"), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="human_review_{stage}.csv"'
    return response


@never_cache
@organiser_required
def export_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    stage = request.GET.get("stage", Stage.END2END)
    if stage not in Stage.values:
        return HttpResponse(f"Unknown stage {stage!r}.", status=400, content_type="text/plain")
    return reviews_csv_response(stage)


# Public -------------------------------------------------------------------------------------


_AGREEMENT_COLUMNS = [
    ("n_human_human", "human-human gaps", "d"),
    ("n_human_llm", "human-LLM gaps", "d"),
    ("mean_abs_diff_human_human", "mean |h−h|", "f"),
    ("ci_mean_abs_diff_human_human", "95% CI", "ci"),
    ("median_abs_diff_human_human", "median |h−h|", "f"),
    ("mean_abs_diff_human_llm", "mean |h−LLM|", "f"),
    ("ci_mean_abs_diff_human_llm", "95% CI", "ci"),
    ("median_abs_diff_human_llm", "median |h−LLM|", "f"),
    ("ci_mean_abs_diff_difference", "CI of difference", "ci"),
    ("u_statistic", "U", "u"),
    ("p_value", "p", "p"),
    ("p_value_holm", "p (Holm)", "p"),
    ("rank_biserial", "rank-biserial", "f"),
    ("krippendorff_alpha_humans", "α humans", "f"),
    ("krippendorff_alpha_humans_llm", "α humans+LLM", "f"),
    ("spearman_rho", "Spearman ρ", "f"),
]


def _cell(value: object, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "d":
        return str(value)
    if kind == "u":
        return f"{value:g}"
    if kind == "p":
        return f"{value:.3g}"
    if kind == "ci":
        low, high = cast(Interval, value)
        return f"[{low:.2f}, {high:.2f}]"
    return f"{value:.3f}"


@dataclass(frozen=True)
class AgreementCell:
    key: str
    text: str
    reason: str  # why the figure is empty; "" when it is not


@dataclass(frozen=True)
class AgreementRow:
    dimension: str
    cells: list[AgreementCell]


def _agreement_rows(dimensions: list[DimensionAgreement]) -> list[AgreementRow]:
    """Table rows: each cell's text, and why it is empty when it is."""
    return [
        AgreementRow(
            dimension=row.dimension,
            cells=[
                AgreementCell(
                    key=key,
                    text=_cell(getattr(row, key), kind),
                    reason=row.unavailable.get(key, ""),
                )
                for key, _label, kind in _AGREEMENT_COLUMNS
            ],
        )
        for row in dimensions
    ]


def agreement_view(request: HttpRequest) -> HttpResponse:
    stage = request.GET.get("stage") or Stage.END2END
    judge = request.GET.get("judge") or None
    error = ""
    result: selectors.StageAgreement | None
    try:
        reviews = selectors.agreement_reviews_for(request.user, request.GET.get("reviews"))
        result = selectors.agreement_for_stage(stage=stage, judge=judge, reviews=reviews)
    except (selectors.UnknownStage, selectors.UnknownJudge) as exc:
        error = str(exc)
        result = None
    return render(
        request,
        "reviews/agreement.html",
        {
            "stage": stage,
            "judge": judge or "",
            "stage_tabs": [
                (value, label, "?" + urlencode({"stage": value, "judge": judge or ""}))
                for value, label in Stage.choices
                if value != Stage.METHOD
            ],
            "judges": selectors.agreement_judges(),
            "mean_panel": stage_panel(stage=stage) if stage in Stage.values else None,
            "result": result,
            "charts": agreement_charts(result) if result else [],
            "columns": [label for _key, label, _fmt in _AGREEMENT_COLUMNS],
            "rows": _agreement_rows(result.dimensions) if result else [],
            "skipped_rows": selectors.imported_review_skips(),
            "error": error,
        },
        status=400 if error else 200,
    )
