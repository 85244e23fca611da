from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from common.errors import ValidationFailed
from common.http import json_error
from submissions.models import Submission
from submissions.visibility import submissions_visible_to

from .selectors import experiment_log_chunk, experiment_runs


@require_GET
def experiment_run_list_view(request: HttpRequest) -> HttpResponse:
    """The runs of one submission (`?submission=ID`), as the submission page shows them."""
    try:
        submission_id = int(request.GET.get("submission", ""))
    except ValueError:
        raise Http404("name a submission: /experiments/?submission=ID") from None
    submissions = submissions_visible_to(
        user=request.user, submissions=Submission.objects.select_related("agent", "task")
    )
    submission = get_object_or_404(submissions, pk=submission_id)
    runs = experiment_runs(submission_id=submission.pk, user=request.user)
    return render(
        request, "experiments/experiment_runs.html", {"submission": submission, "runs": runs}
    )


@require_GET
def experiment_run_detail_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(experiment_runs(user=request.user), pk=pk)
    return render(request, "experiments/experiment_run.html", {"run": run, "runs": [run]})


@require_GET
def experiment_run_log_view(request: HttpRequest, pk: int) -> JsonResponse:
    """The log from `offset` on (or its tail without one), for the page's live view."""
    run = get_object_or_404(experiment_runs(user=request.user), pk=pk)
    offset = request.GET.get("offset")
    try:
        offset_value = int(offset) if offset not in (None, "") else None
    except ValueError:
        return json_error(
            ValidationFailed("offset must be a whole number of bytes", field="offset")
        )
    chunk = experiment_log_chunk(run=run, offset=offset_value)
    return JsonResponse(
        {
            "text": chunk.text,
            "start": chunk.start,
            "offset": chunk.offset,
            "size": chunk.size,
            "status": chunk.status,
            "status_display": run.get_status_display(),
            "finished": chunk.finished,
        }
    )
