"""The organisers' pages of MLR-Agent runs: the form that starts runs, the list,
a run's page (stages, transcript, cost so far, cancel) and the JSON it polls."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from benchmark.roles import organiser_required
from common.drf import serializer_error_items
from common.errors import ApplicationError, ValidationFailed, form_add_errors
from common.http import AuthenticatedHttpRequest, json_error

from . import selectors
from .forms import AgentRunForm
from .models import AgentRun
from .serializers import AgentRunCreateSerializer, agent_run_progress_data, run_arguments
from .services import agent_run_cancel, agent_run_create
from .workspace import TRACE_NAME

View = Callable[..., HttpResponse]


def _run_or_404(run_id: int) -> AgentRun:
    run = selectors.agent_run_with_stages(run_id=run_id)
    if run is None:
        raise Http404(f"no agent run {run_id}")
    return run


@organiser_required
def agent_run_new_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    if request.method != "POST":
        form = AgentRunForm(initial={"agent": "mlr-agent"})
        return render(request, "agent_runs/agent_run_new.html", {"form": form})
    form = AgentRunForm(request.POST)
    serializer = AgentRunCreateSerializer(data=form.serializer_data())
    try:
        if not serializer.is_valid():
            raise ValidationFailed(items=serializer_error_items(serializer.errors))
        runs = agent_run_create(
            **run_arguments(serializer.validated_data),
            requested_by=request.user,
            check_models=True,
        )
    except ValidationFailed as exc:
        form_add_errors(form, exc)
        return render(request, "agent_runs/agent_run_new.html", {"form": form}, status=400)
    tasks = ", ".join(run.task.slug for run in runs)
    messages.success(request, f"{len(runs)} agent run(s) queued: {tasks}.")
    if len(runs) == 1:
        return redirect("agent_runs:run-detail", run_id=runs[0].pk)
    return redirect(f"{reverse('agent_runs:run-list')}?mine=1")


@organiser_required
@require_GET
def agent_run_list_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    mine = request.GET.get("mine") == "1"
    runs = selectors.agent_runs_list(requested_by=request.user if mine else None)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    return render(request, "agent_runs/agent_run_list.html", {"page": page, "mine": mine})


def _transcript_after(request: HttpRequest, run: AgentRun) -> selectors.Transcript:
    """The run's transcript from the step the page's poll asks `after`."""
    try:
        after = max(0, int(request.GET.get("after") or 0))
    except ValueError:
        raise ValidationFailed("after must be a whole number of steps", field="after") from None
    return selectors.agent_run_transcript(run=run, after=after)


@organiser_required
@require_GET
def agent_run_detail_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _run_or_404(run_id)
    transcript = selectors.agent_run_transcript(run=run)
    progress = agent_run_progress_data(run, transcript)
    return render(
        request,
        "agent_runs/agent_run_detail.html",
        {"run": run, "progress": progress, "transcript": transcript, "trace_name": TRACE_NAME},
    )


@organiser_required
@require_GET
def agent_run_progress_view(request: HttpRequest, run_id: int) -> JsonResponse:
    """The run, its stages and the transcript from step `after` on (the page's poll)."""
    run = _run_or_404(run_id)
    try:
        transcript = _transcript_after(request, run)
    except ValidationFailed as exc:
        return json_error(exc)
    return JsonResponse(agent_run_progress_data(run, transcript))


@organiser_required
@require_GET
def agent_run_steps_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """The transcript's steps from `after` on as the page draws them (the page's
    poll adds them), with where to ask next in the list's data attributes."""
    run = _run_or_404(run_id)
    try:
        transcript = _transcript_after(request, run)
    except ValidationFailed as exc:
        return json_error(exc)
    return render(request, "agent_runs/_transcript_steps.html", {"transcript": transcript})


@organiser_required
@require_POST
def agent_run_cancel_view(request: AuthenticatedHttpRequest, run_id: int) -> HttpResponse:
    run = _run_or_404(run_id)
    try:
        run = agent_run_cancel(run=run, reason=f"cancelled by {request.user.get_username()}")
    except ApplicationError as exc:
        messages.error(request, f"Not cancelled: {exc.message}.")
    else:
        if run.is_final:
            messages.success(request, "The run is cancelled.")
        else:
            messages.success(request, "Cancel requested: the running stage stops at its next step.")
    return redirect("agent_runs:run-detail", run_id=run.pk)
