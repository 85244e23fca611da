"""Reads of submissions and their artifacts that the pages and the API share."""

import bisect
import posixpath
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from benchmark.models import Agent
from common.storage import object_read, storage_errors

from .costs import StepCost, coding_cost_unknown, steps_priced_total, submission_steps
from .derived import artifact_html, artifacts_html, html_with_figures
from .models import Artifact, ArtifactKind, DerivedArtifact, Stage, Submission
from .pdf_text import is_pdf_path, pdf_text_of
from .run_layout import TEXT_SUFFIXES, primary_path
from .states import submissions_with_state
from .trace_steps import TraceStep, trace_step
from .traces import trace_format_of

LOG_TAIL_LINES = 200
LOG_TAIL_BYTES = 64 * 1024
MAX_RENDERED_MARKDOWN_BYTES = 2 * 1024 * 1024
INLINE_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
PDF_TYPE = "application/pdf"


def submission_list() -> QuerySet[Submission]:
    """Submissions with their state (`.state`: intake status, or judging and judged)."""
    return submissions_with_state(Submission.objects.select_related("agent", "task", "uploader"))


def submissions_newest(submissions: QuerySet[Submission]) -> QuerySet[Submission]:
    """Only the newest version of each (agent, task, stage) among `submissions`."""
    newer = Submission.objects.filter(
        agent=OuterRef("agent"),
        task=OuterRef("task"),
        stage=OuterRef("stage"),
        version__gt=OuterRef("version"),
    )
    return submissions.filter(~Exists(newer))


def agent_list() -> QuerySet[Agent]:
    return Agent.objects.select_related("team")


def artifact_raw_url(artifact: Artifact) -> str:
    return reverse(
        "submissions:artifact-raw",
        kwargs={"submission_id": artifact.submission_id, "path": artifact.path},
    )


@dataclass(frozen=True)
class ArtifactDelivery:
    """How to serve an artifact: inline only for images and plain text."""

    content_type: str
    inline: bool


def artifact_delivery(artifact: Artifact) -> ArtifactDelivery:
    suffix = posixpath.splitext(artifact.path.lower())[1]
    if suffix in INLINE_IMAGE_TYPES:
        # Checked at intake: the content is what the extension says.
        return ArtifactDelivery(INLINE_IMAGE_TYPES[suffix], True)
    if suffix == ".pdf" and artifact.kind == ArtifactKind.PAPER:
        # A PDF paper was read at intake (`pdf_text`): it is a PDF.
        return ArtifactDelivery(PDF_TYPE, True)
    if suffix in TEXT_SUFFIXES or artifact.kind in (ArtifactKind.LOG, ArtifactKind.CODE):
        return ArtifactDelivery("text/plain; charset=utf-8", True)
    return ArtifactDelivery("application/octet-stream", False)


def artifact_text(artifact: Artifact, *, limit: int = MAX_RENDERED_MARKDOWN_BYTES) -> str | None:
    """The artifact as text, or None when it is too large or unreadable."""
    if artifact.size > limit:
        return None
    try:
        return object_read(artifact.file.name).decode("utf-8", errors="replace")
    except storage_errors():
        return None


def artifact_tail(artifact: Artifact) -> str:
    """The last lines of a log, read from its end only."""
    try:
        with artifact.file.open("rb") as handle:
            handle.seek(max(0, artifact.size - LOG_TAIL_BYTES))
            data = handle.read()
    except storage_errors():
        return ""
    lines = data.decode("utf-8", errors="replace").splitlines()
    if artifact.size > LOG_TAIL_BYTES:
        lines = lines[1:]  # the first line is probably cut
    return "\n".join(lines[-LOG_TAIL_LINES:])


@dataclass
class TreeNode:
    name: str
    path: str
    artifact: Artifact | None = None
    children: dict[str, "TreeNode"] = field(default_factory=dict)

    @property
    def folders(self) -> list["TreeNode"]:
        return sorted((c for c in self.children.values() if c.artifact is None), key=_by_name)

    @property
    def files(self) -> list["TreeNode"]:
        return sorted((c for c in self.children.values() if c.artifact is not None), key=_by_name)


def _by_name(node: TreeNode) -> str:
    return node.name.lower()


def artifact_tree(artifacts: list[Artifact]) -> TreeNode:
    root = TreeNode(name="", path="")
    for artifact in artifacts:
        node = root
        parts = artifact.path.split("/")
        for depth, part in enumerate(parts[:-1], start=1):
            node = node.children.setdefault(part, TreeNode(name=part, path="/".join(parts[:depth])))
        node.children[parts[-1]] = TreeNode(name=parts[-1], path=artifact.path, artifact=artifact)
    return root


@dataclass
class SubmissionCosts:
    steps: list[StepCost]
    # The priced steps' sum, a lower bound when `llm_unpriced_steps` > 0.
    llm_total: Decimal | None
    llm_unpriced_steps: int
    agent_cost_usd: Decimal | None
    agent_duration_seconds: float | None
    # The run has a coding agent that recorded no cost: every total is a lower bound.
    coding_cost_unknown: bool = False


@dataclass
class RenderedDocument:
    title: str
    artifact: Artifact
    html: SafeString | None  # None: too large to render; offer the download


@dataclass
class SubmissionPage:
    submission: Submission
    artifacts: list[Artifact]
    paper: RenderedDocument | None
    documents: list[RenderedDocument]
    tree: TreeNode
    log: Artifact | None
    log_tail: str
    other_logs: list[Artifact]  # further logs and coding-agent traces
    costs: SubmissionCosts
    traces: list[Artifact]  # shown step by step in the trace viewer


def pdf_viewer_html(artifact: Artifact) -> SafeString:
    """A PDF paper: the browser's own viewer on the stored file, and the text the
    intake extracted (never the PDF parsed again here)."""
    text = pdf_text_of(artifact, limit=MAX_RENDERED_MARKDOWN_BYTES)
    return format_html(
        '<object class="pdf-viewer" data="{}" type="application/pdf" data-testid="pdf-viewer" '
        'aria-label="The paper (PDF)">'
        '<p><a href="{}">Open the PDF</a></p></object>'
        '<details class="pdf-text" open><summary>Text of the PDF</summary>'
        '<pre data-testid="pdf-text">{}</pre></details>',
        artifact_raw_url(artifact),
        artifact_raw_url(artifact),
        text if text is not None else "The text of this PDF was not extracted.",
    )


def _render(
    title: str, artifact: Artifact, stored: dict[int, DerivedArtifact | None] | None = None
) -> RenderedDocument:
    """The document as stored at intake: a PDF's viewer and extracted text, or a
    markdown document's HTML (`stored`: read already, by artifact id) with its
    figures served from the submission's files."""
    if is_pdf_path(artifact.path):
        return RenderedDocument(title=title, artifact=artifact, html=pdf_viewer_html(artifact))
    derived = stored[artifact.pk] if stored is not None else artifact_html(artifact)
    html = None
    if derived is not None:
        html = html_with_figures(
            derived.content,
            lambda path: reverse(
                "submissions:artifact-raw",
                kwargs={"submission_id": artifact.submission_id, "path": path},
            ),
        )
    return RenderedDocument(title=title, artifact=artifact, html=html)


def submission_costs(submission: Submission) -> SubmissionCosts:
    """The run's costs as priced at intake (`Submission.llm_steps`)."""
    steps = submission_steps(submission)
    total, unpriced = steps_priced_total(steps)
    return SubmissionCosts(
        steps=steps,
        llm_total=total,
        llm_unpriced_steps=unpriced,
        agent_cost_usd=submission.agent_cost_usd,
        agent_duration_seconds=submission.agent_duration_seconds,
        coding_cost_unknown=coding_cost_unknown(
            stage=submission.stage,
            coding_agent=submission.agent.coding_agent,
            agent_cost_usd=submission.agent_cost_usd,
        ),
    )


def submission_page(submission: Submission) -> SubmissionPage:
    artifacts = list(submission.artifacts.all())
    by_path = {artifact.path: artifact for artifact in artifacts}
    paths = list(by_path)

    def primary(kind: str) -> Artifact | None:
        path = primary_path(paths, kind)
        return by_path[path] if path else None

    paper_artifact = primary(ArtifactKind.PAPER)
    shown = [
        (title, artifact)
        for kind, title in (
            (ArtifactKind.IDEA, "Idea"),
            (ArtifactKind.PROPOSAL, "Proposal"),
            (ArtifactKind.RELATED_WORK, "Related work"),
            (ArtifactKind.RESULTS, "Results"),
        )
        if (artifact := primary(kind)) is not None
    ]
    # Every markdown document's stored HTML in one query.
    stored = artifacts_html(
        artifact
        for artifact in [paper_artifact, *(artifact for _, artifact in shown)]
        if artifact is not None and not is_pdf_path(artifact.path)
    )
    paper = _render("Paper", paper_artifact, stored) if paper_artifact else None
    documents = [_render(title, artifact, stored) for title, artifact in shown]
    log = primary(ArtifactKind.LOG)
    other_logs = [
        a for a in artifacts if a.kind in (ArtifactKind.LOG, ArtifactKind.TRACE) and a != log
    ]
    return SubmissionPage(
        submission=submission,
        artifacts=artifacts,
        paper=paper,
        documents=documents,
        tree=artifact_tree(artifacts),
        log=log,
        log_tail=artifact_tail(log) if log else "",
        other_logs=other_logs,
        costs=submission_costs(submission),
        traces=trace_artifacts(artifacts),
    )


# The submission page's sections after the summary, in the order a reader of
# the stage wants them: the stage's own output first. "panels" are the other
# apps' panels (the judges, the experiment runs).
_STAGE_SECTIONS = {
    Stage.IDEA: ("documents", "panels", "files", "cost"),
    Stage.PROPOSAL: ("documents", "panels", "files", "cost"),
    Stage.EXPERIMENT: ("documents", "panels", "log", "paper", "files", "cost"),
    Stage.PAPER: ("paper", "panels", "documents", "files", "cost"),
    Stage.END2END: ("paper", "panels", "log", "documents", "files", "cost"),
    Stage.METHOD: ("panels", "log", "documents", "files", "cost"),
}
# Stages whose runs execute code: a coding agent's cost belongs to them.
CODE_STAGES = frozenset({Stage.EXPERIMENT, Stage.END2END, Stage.METHOD})


def submission_sections(page: SubmissionPage) -> list[str]:
    """The sections the page shows, in order: only those with something in them."""
    costs = page.costs
    has = {
        "paper": page.paper is not None,
        "documents": bool(page.documents),
        "panels": True,  # each panel decides for itself (an empty one renders nothing)
        "log": bool(page.log or page.traces or page.other_logs),
        "files": bool(page.artifacts),
        "cost": bool(
            costs.steps
            or costs.agent_cost_usd is not None
            or costs.agent_duration_seconds is not None
        ),
    }
    order = _STAGE_SECTIONS.get(Stage(page.submission.stage), _STAGE_SECTIONS[Stage.END2END])
    return [key for key in order if has[key]]


def artifact_get(*, submission_id: int, path: str) -> Artifact | None:
    return (
        Artifact.objects.select_related("submission")
        .filter(submission_id=submission_id, path=path)
        .first()
    )


TRACE_STEPS_PER_PAGE = 100
# And at most this many tool calls a page (a step holds at most
# `submissions.traces.STEP_MAX_CALLS`): a page's cost is bounded by what it shows.
TRACE_CALLS_PER_PAGE = 200


@dataclass(frozen=True)
class TraceStepsPage:
    """One page of steps: what the pager shows (as Django's `Page` names it)."""

    number: int
    num_pages: int
    start: int  # the position of the page's first step
    steps: list[dict[str, Any]]
    count: int  # steps in all

    def has_other_pages(self) -> bool:
        return self.num_pages > 1

    def has_previous(self) -> bool:
        return self.number > 1

    def has_next(self) -> bool:
        return self.number < self.num_pages

    def previous_page_number(self) -> int:
        return self.number - 1

    def next_page_number(self) -> int:
        return self.number + 1

    def start_index(self) -> int:
        return self.start + 1 if self.steps else 0

    def end_index(self) -> int:
        return self.start + len(self.steps)


@dataclass
class TracePage:
    """One page of a trace's stored steps, with the paper's numbers located in it."""

    trace: dict[str, Any]
    steps: list[TraceStep]
    page: TraceStepsPage
    # The paper's numbers the reproduction check found, each with the step that printed it.
    number_sources: list[dict[str, Any]]
    query: str  # what links to other pages of steps start their query with


def _page_starts(steps: list[dict[str, Any]]) -> list[int]:
    """Where each page of steps starts: at most TRACE_STEPS_PER_PAGE steps and,
    past its first step, TRACE_CALLS_PER_PAGE tool calls a page (linear)."""
    starts, calls = [0], 0
    for position, step in enumerate(steps):
        more = len(step.get("tool_calls") or ())
        on_page = position - starts[-1]
        if on_page and (on_page >= TRACE_STEPS_PER_PAGE or calls + more > TRACE_CALLS_PER_PAGE):
            starts.append(position)
            calls = 0
        calls += more
    return starts


def trace_step_page(trace: dict[str, Any], index: int, starts: list[int] | None = None) -> int:
    """The page of the trace viewer that shows step `index` of `trace`."""
    starts = _page_starts(trace["steps"]) if starts is None else starts
    return max(bisect.bisect_right(starts, index), 1)


def _steps_page(
    steps: list[dict[str, Any]], starts: list[int], page_number: str | None
) -> TraceStepsPage:
    try:
        number = min(max(int(page_number or 1), 1), len(starts))
    except ValueError:
        number = 1
    start = starts[number - 1]
    end = starts[number] if number < len(starts) else len(steps)
    return TraceStepsPage(number, len(starts), start, steps[start:end], len(steps))


def trace_page(
    trace: dict[str, Any], *, page_number: str | None, markup: bool = True, query: str = ""
) -> TracePage:
    """`trace` (from `artifact_trace`) cut into pages of steps. `markup`: the
    messages' HTML, cleaned at intake, is served as it was stored; without it
    (a reviewer's blind copy) messages are plain text. `query` starts the
    query of links to other pages (`steps=1&` on the blind page)."""
    starts = _page_starts(trace["steps"])
    page = _steps_page(trace["steps"], starts, page_number)
    by_step: dict[int, list[dict[str, Any]]] = {}
    sources = []
    for source in trace.get("number_sources", []):
        step = source["step"]
        linked = {
            **source,
            "href": f"?{query}page={trace_step_page(trace, step, starts)}#step-{step}",
        }
        sources.append(linked)
        by_step.setdefault(source["step"], []).append(linked)
    steps = [
        trace_step(
            step,
            html=mark_safe(step["html"]) if markup and step.get("html") else None,  # noqa: S308 - cleaned at intake
            numbers=by_step.get(step["index"], []),
        )
        for step in page.steps
    ]
    return TracePage(trace=trace, steps=steps, page=page, number_sources=sources, query=query)


def trace_artifacts(artifacts: list[Artifact]) -> list[Artifact]:
    """The artifacts of a submission that the trace viewer shows."""
    return [a for a in artifacts if trace_format_of(getattr(a, "real_path", a.path), a.kind)]
