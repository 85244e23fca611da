"""Pages for agent builders: upload a run, see a submission, browse its files
and an agent's submissions. Thin: forms, then services or selectors."""

import dataclasses
import posixpath
import secrets
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from benchmark.accounts import agents_of
from benchmark.models import Agent, Task
from common.errors import (
    ApplicationError,
    ValidationFailed,
    form_add_errors,
    form_error_items,
)
from common.http import AuthenticatedHttpRequest, json_error
from common.storage import storage_errors

from .derived import artifact_source_html, artifact_trace
from .forms import SubmissionUploadForm
from .highlight import source_plain_html
from .intake import DuplicateSubmission, submission_intake
from .ledger import (
    provenance_summary_item,
    submission_ledger_view,
    submission_paper_marked,
)
from .lineage import submission_lineage
from .models import Stage, Submission, SubmissionSource
from .page_panels import submission_page_panels, submission_summary
from .selectors import (
    CODE_STAGES,
    PDF_TYPE,
    RenderedDocument,
    SubmissionPage,
    artifact_delivery,
    artifact_get,
    artifact_raw_url,
    artifact_text,
    pdf_viewer_html,
    submission_list,
    submission_page,
    submission_sections,
    trace_page,
    trace_step_page,
)
from .uploads import UploadsBusy, upload_refusal, upload_slot
from .visibility import (
    agents_visible_to,
    hidden_submission_ids,
    omitted_submission_ids,
    staff_only_submission,
    submissions_visible_to,
    unseen_submission_ids,
)

SUBMISSIONS_PER_PAGE = 50
MAX_PLAIN_SOURCE_BYTES = 1024 * 1024

# Submission pages show untrusted content: even if something slipped past the
# sanitiser, the browser would run no script but the site's own files.
SUBMISSION_PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self'; font-src 'self'; object-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# Artifacts themselves are never a page that runs anything.
ARTIFACT_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"
ARTIFACT_PDF_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _upload(request: AuthenticatedHttpRequest, form: SubmissionUploadForm) -> Submission | None:
    """The intake of the form's archive; None when the form itself is not valid."""
    refusal = upload_refusal(request, "archive")
    if refusal:
        raise ValidationFailed(refusal, code="too_large", field="archive")
    if not form.is_valid():
        return None
    archive = form.cleaned_data["archive"]
    with upload_slot(user_id=request.user.pk):
        return submission_intake(
            agent=form.cleaned_data["agent"],
            task=form.cleaned_data["task"],
            stage=form.cleaned_data["stage"],
            archive=Path(archive.temporary_file_path()),
            archive_name=archive.name,
            archive_sha256=getattr(archive, "sha256", None),
            uploader=request.user,
            source=SubmissionSource.UPLOAD,
            based_on=form.cleaned_data["based_on"],
        )


LAST_STAGE_SESSION_KEY = "upload_last_stage"


@login_required
def submission_upload_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = SubmissionUploadForm(request.POST, request.FILES, user=request.user)
        json_status, extra, retry_after = 400, {}, None
        try:
            submission = _upload(request, form)
        except ApplicationError as exc:
            form_add_errors(form, exc)
            json_status, extra = exc.status_code, exc.extra
            retry_after = getattr(exc, "retry_after", None)
            if isinstance(exc, DuplicateSubmission):
                extra = {**extra, "existing_url": exc.submission.get_absolute_url()}
        else:
            if submission is not None:
                request.session[LAST_STAGE_SESSION_KEY] = submission.stage
                messages.success(
                    request,
                    f"Submission {submission.pk} stored: version {submission.version}, "
                    f"{submission.artifacts.count()} files.",
                )
                url = submission.get_absolute_url()
                if _wants_json(request):
                    return JsonResponse({"id": submission.pk, "url": url}, status=201)
                return redirect(url)
        if _wants_json(request):
            # The upload script reads the API's error shape.
            error = ValidationFailed(items=form_error_items(form.errors), extra=extra)
            return _retry_after(json_error(error, status=json_status), retry_after)
        status = 400 if retry_after is None else UploadsBusy.status_code
    else:
        # The stage of the user's last upload is the likely one for the next.
        initial = {"stage": request.session.get(LAST_STAGE_SESSION_KEY, ""), **request.GET.dict()}
        form = SubmissionUploadForm(user=request.user, initial=initial)
        status = 200
    response = render(
        request,
        "submissions/submission_upload.html",
        {
            "form": form,
            "tasks": Task.objects.only("slug", "title"),
            "has_agents": agents_of(request.user).exists(),
        },
        status=status,
    )
    return _retry_after(response, retry_after if request.method == "POST" else None)


def _retry_after(response: HttpResponse, seconds: int | None) -> HttpResponse:
    if seconds is not None:
        response["Retry-After"] = str(seconds)
    return response


def _visible_submissions(request: HttpRequest):
    return submissions_visible_to(user=request.user, submissions=submission_list())


class _HtmlSplice:
    """The documents' stored HTML, put into the rendered page once, at the end.
    Passed through the template, a document of a megabyte would be copied again
    at every level of its nested tags (each block joins its children): a page
    of three such documents took twice an ordinary page's time. The template
    gets a marker instead, made with a secret of this request, so no document
    can hold one."""

    def __init__(self) -> None:
        self.marker = f"<!--document-{secrets.token_hex(16)}-"
        self.parts: list[str] = []

    def _document(self, document: RenderedDocument) -> RenderedDocument:
        if document.html is None:
            return document
        self.parts.append(document.html)
        marker = SafeString(f"{self.marker}{len(self.parts) - 1}-->")
        return dataclasses.replace(document, html=marker)

    def page(self, page: SubmissionPage) -> SubmissionPage:
        """`page` with markers where its documents' HTML goes."""
        return dataclasses.replace(
            page,
            paper=self._document(page.paper) if page.paper is not None else None,
            documents=[self._document(document) for document in page.documents],
        )

    def into(self, html: str) -> str:
        """The rendered page with each marker replaced by its document's HTML."""
        first, *rest = html.split(self.marker)
        pieces = [first]
        for piece in rest:
            index, _, after = piece.partition("-->")
            pieces += [self.parts[int(index)], after]
        return "".join(pieces)


def submission_detail_view(request: HttpRequest, submission_id: int) -> HttpResponse:
    # The visibility hooks, once for the request: the page and its lineage both ask.
    hidden = hidden_submission_ids(user=request.user)
    unseen = hidden | omitted_submission_ids(user=request.user)
    submission = get_object_or_404(
        submissions_visible_to(user=request.user, submissions=submission_list(), unseen=unseen),
        pk=submission_id,
    )
    page = submission_page(submission)
    provenance = submission_ledger_view(submission=submission) if page.paper is not None else None
    if provenance is not None and page.paper is not None and page.paper.html is not None:
        html, provenance["marked"] = submission_paper_marked(
            submission=submission,
            html=page.paper.html,
            paper=page.paper.artifact.path,
            ledger=provenance,
        )
        # Cleaned at intake; each mark is built from escaped values and cleaned again.
        page = dataclasses.replace(
            page, paper=dataclasses.replace(page.paper, html=SafeString(html))
        )
    summary = submission_summary(submission=submission)
    if provenance is not None:
        summary.append(provenance_summary_item(provenance))
    splice = _HtmlSplice()
    html = render_to_string(
        "submissions/submission_detail.html",
        {
            "page": splice.page(page),
            "sections": submission_sections(page),
            "code_stage": submission.stage in CODE_STAGES,
            # Panels with nothing to show for this stage render nothing, and are left out.
            "panels": [
                panel
                for panel in submission_page_panels(request=request, submission=submission)
                if panel.strip()
            ],
            "summary": summary,
            "provenance": provenance,
            "lineage": submission_lineage(submission=submission, user=request.user, hidden=hidden),
        },
        request=request,
    )
    response = HttpResponse(splice.into(html))
    response["Content-Security-Policy"] = SUBMISSION_PAGE_CSP
    return response


def submission_list_view(request: HttpRequest) -> HttpResponse:
    submissions = _visible_submissions(request)
    chosen = {}
    for name in ("agent", "task", "stage"):
        value = request.GET.get(name, "").strip()
        if value:
            chosen[name] = value
    if "agent" in chosen:
        submissions = submissions.filter(agent__name=chosen["agent"])
    if "task" in chosen:
        submissions = submissions.filter(task__slug=chosen["task"])
    if "stage" in chosen:
        submissions = submissions.filter(stage=chosen["stage"])
    page = Paginator(submissions, SUBMISSIONS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "submissions/submission_list.html",
        {"page": page, "chosen": chosen, "stages": Stage.choices, "query": query.urlencode()},
    )


def _artifact_or_404(request: HttpRequest, submission_id: int, path: str):
    if submission_id in unseen_submission_ids(user=request.user) or staff_only_submission(
        user=request.user, submission_id=submission_id
    ):
        raise Http404("No such file in this submission.")
    artifact = artifact_get(submission_id=submission_id, path=path)
    if artifact is None:
        raise Http404("No such file in this submission.")
    return artifact


def artifact_detail_view(request: HttpRequest, submission_id: int, path: str) -> HttpResponse:
    artifact = _artifact_or_404(request, submission_id, path)
    delivery = artifact_delivery(artifact)
    highlighted = None
    if delivery.content_type.startswith("text/"):
        # Highlighted once at intake; otherwise escaped text (linear), never a lexer here.
        highlighted = artifact_source_html(artifact)
        if highlighted is None:
            text = artifact_text(artifact, limit=MAX_PLAIN_SOURCE_BYTES)
            highlighted = source_plain_html(text) if text is not None else None
    response = render(
        request,
        "submissions/artifact_detail.html",
        {
            "artifact": artifact,
            "submission": artifact.submission,
            "raw_url": artifact_raw_url(artifact),
            "is_image": delivery.inline and delivery.content_type.startswith("image/"),
            "pdf_viewer": pdf_viewer_html(artifact) if delivery.content_type == PDF_TYPE else None,
            "highlighted": highlighted,
        },
    )
    response["Content-Security-Policy"] = SUBMISSION_PAGE_CSP
    return response


def trace_view(request: HttpRequest, submission_id: int, path: str) -> HttpResponse:
    """A coding-agent trace step by step, from the steps stored at intake."""
    artifact = _artifact_or_404(request, submission_id, path)
    trace = artifact_trace(artifact)
    if trace is None:
        raise Http404("This file is not a trace the site reads.")
    page_number = request.GET.get("page")
    step = request.GET.get("step", "")
    if page_number is None and step.isdigit():
        # A link to one step (the paper's provenance marks): the page that shows it.
        page_number = str(trace_step_page(trace, int(step)))
    response = render(
        request,
        "submissions/trace.html",
        {
            "artifact": artifact,
            "submission": artifact.submission,
            "view": trace_page(trace, page_number=page_number),
            "raw_url": artifact_raw_url(artifact),
        },
    )
    response["Content-Security-Policy"] = SUBMISSION_PAGE_CSP
    return response


def artifact_raw_view(request: HttpRequest, submission_id: int, path: str) -> FileResponse:
    artifact = _artifact_or_404(request, submission_id, path)
    delivery = artifact_delivery(artifact)
    inline = delivery.inline and request.GET.get("download") is None
    try:
        # Streamed from the store in chunks (S3 too), never read whole.
        handle = artifact.file.open("rb")
    except storage_errors():
        raise Http404("The file is missing from the artifact store.") from None
    response = FileResponse(
        handle,
        as_attachment=not inline,
        filename=posixpath.basename(artifact.path),
        content_type=delivery.content_type,
    )
    response["X-Content-Type-Options"] = "nosniff"
    # Chromium's PDF viewer refuses a sandboxed document, so a PDF paper gets the
    # same policy less `sandbox`: it still may load nothing and run no site script.
    response["Content-Security-Policy"] = (
        ARTIFACT_PDF_CSP if delivery.content_type == PDF_TYPE else ARTIFACT_CSP
    )
    if delivery.content_type == PDF_TYPE:
        # Shown in the site's own pages' viewer (an <object>), nowhere else.
        response["X-Frame-Options"] = "SAMEORIGIN"
    return response


def agent_detail_view(request: HttpRequest, name: str) -> HttpResponse:
    agents = agents_visible_to(user=request.user, agents=Agent.objects.select_related("team"))
    agent = get_object_or_404(agents, name=name)
    submissions = _visible_submissions(request).filter(agent=agent)[:200]
    return render(
        request, "submissions/agent_detail.html", {"agent": agent, "submissions": submissions}
    )
