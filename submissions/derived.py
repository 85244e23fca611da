"""Derived artifacts: what is computed once from an untrusted artifact (the
clean HTML of a markdown document; other apps may add kinds, e.g. a PDF's
text) and stored, so that pages serve stored results and never render
untrusted input per request.

Derivation happens at intake and on import (`documents_derive` before the
rows are written, `derived_artifacts_store` with them). A row that is missing
or stale (the artifact's digest or the deriver's version changed: data from
before this existed, test factories) is derived on first read, under the
same budget, and stored, so it is rendered once either way.
"""

import hashlib
import json
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.safestring import SafeString, mark_safe

from common.rendering import (
    ARTIFACT_SRC_PREFIX,
    RenderedHtml,
    figure_resolver,
    markdown_render_budgeted,
)
from common.storage import object_read, storage_errors

from .highlight import HIGHLIGHT_VERSION, SourceFile, is_source, sources_highlight
from .models import Artifact, ArtifactKind, DerivedArtifact, DerivedKind
from .traces import TRACE_VERSION, trace_format_of, trace_parse

# Bump when the renderer's output changes: stored HTML is then derived again.
HTML_VERSION = 1
DOCUMENT_KINDS = frozenset(
    {
        ArtifactKind.TASK,
        ArtifactKind.IDEA,
        ArtifactKind.PROPOSAL,
        ArtifactKind.RELATED_WORK,
        ArtifactKind.PAPER,
        ArtifactKind.RESULTS,
    }
)
INLINE_FIGURE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


@dataclass(frozen=True)
class DocumentFile:
    """A file of a run as intake sees it: path, kind, digest and where it is on disk."""

    path: str
    kind: str
    sha256: str
    size: int
    location: Path


@dataclass(frozen=True)
class Derived:
    kind: str
    source_sha256: str
    version: int
    content: str
    note: str = ""


def is_document(path: str, kind: str) -> bool:
    return kind in DOCUMENT_KINDS and path.lower().endswith((".md", ".markdown"))


def _figures(files: Iterable[tuple[str, str]]) -> set[str]:
    return {
        path
        for path, kind in files
        if kind == ArtifactKind.FIGURE
        and posixpath.splitext(path.lower())[1] in INLINE_FIGURE_SUFFIXES
    }


def _html_derive(
    text: str, *, path: str, figures: set[str], sha256: str, timeout: float | None = None
) -> Derived:
    rendered: RenderedHtml = markdown_render_budgeted(
        text, math=True, image_src=figure_resolver(path, figures), timeout=timeout
    )
    return Derived(DerivedKind.HTML, sha256, HTML_VERSION, rendered.html, rendered.note)


def _left(deadline: float | None, own: float) -> float:
    """A step's time: its own limit, or what is left of the upload's budget."""
    return own if deadline is None else min(own, deadline - time.monotonic())


# Past the upload's derived bytes (INTAKE_MAX_DERIVED_BYTES), a document keeps
# only this note: what is stored for one upload stays bounded, however many
# documents it carries.
FALLBACK_NOTE_UPLOAD = (
    "This upload's documents are past the size the site renders for one upload; "
    "download this one to read it."
)


def documents_derive(
    files: list[DocumentFile], *, deadline: float | None = None
) -> dict[str, Derived]:
    """The clean HTML of every markdown document of a run, by path. Documents
    past the size limit get none (the page offers the download); past the
    upload's `deadline` (`time.monotonic()`), a document is kept as plain text;
    past the upload's derived bytes, as a note."""
    figures = _figures((item.path, item.kind) for item in files)
    derived: dict[str, Derived] = {}
    room = settings.INTAKE_MAX_DERIVED_BYTES
    for item in files:
        if not is_document(item.path, item.kind):
            continue
        if item.size > settings.MARKDOWN_RENDER_MAX_BYTES:
            continue
        made = None
        if item.size <= room:
            text = item.location.read_bytes().decode("utf-8", errors="replace")
            made = _html_derive(
                text,
                path=item.path,
                figures=figures,
                sha256=item.sha256,
                timeout=_left(deadline, settings.MARKDOWN_RENDER_TIMEOUT_SECONDS),
            )
        if made is None or len(made.content.encode("utf-8")) > room:
            note = f'<p class="render-note"><em>{FALLBACK_NOTE_UPLOAD}</em></p>'
            made = Derived(DerivedKind.HTML, item.sha256, HTML_VERSION, note, FALLBACK_NOTE_UPLOAD)
        room -= len(made.content.encode("utf-8"))
        derived[item.path] = made
    return derived


def traces_derive(
    files: list[DocumentFile], *, deadline: float | None = None
) -> dict[str, Derived]:
    """The steps of every coding-agent trace of a run, by path (`submissions.traces`),
    each within its own time and the upload's `deadline`."""
    derived: dict[str, Derived] = {}
    for item in files:
        reader = trace_format_of(item.path, item.kind)
        if reader is not None:
            derived[item.path] = _trace_derived(
                item.location.read_bytes,
                reader,
                item.size,
                item.sha256,
                seconds=_left(deadline, settings.TRACE_PARSE_SECONDS),
            )
    return derived


def derived_bytes(*made: dict[str, Derived]) -> int:
    """What derived rows made so far will store, in bytes."""
    return sum(len(item.content.encode("utf-8")) for each in made for item in each.values())


def sources_derive(
    files: list[DocumentFile], *, deadline: float | None = None, used_bytes: int = 0
) -> dict[str, Derived]:
    """The highlighted HTML of the run's source files, by path, made in one
    child within what is left of the upload's budget (`submissions.highlight`)
    and of its derived bytes (`INTAKE_MAX_DERIVED_BYTES` less `used_bytes`)."""
    sources = [
        SourceFile(path=item.path, location=item.location)
        for item in files
        if is_source(item.path, item.kind)
    ]
    own = min(
        settings.SOURCE_HIGHLIGHT_FILE_SECONDS * max(len(sources), 1),
        settings.SOURCE_HIGHLIGHT_UPLOAD_SECONDS,
    )
    highlighted = sources_highlight(
        sources,
        timeout=_left(deadline, own),
        max_bytes=settings.INTAKE_MAX_DERIVED_BYTES - used_bytes,
    )
    digests = {item.path: item.sha256 for item in files}
    return {
        path: Derived(DerivedKind.SOURCE_HTML, digests[path], HIGHLIGHT_VERSION, html)
        for path, html in highlighted.items()
        if path in digests
    }


def artifact_source_html(artifact: Artifact) -> str | None:
    """The highlighted HTML stored at intake, or None (the page shows plain text):
    a file page never runs a lexer."""
    row = (
        DerivedArtifact.objects.filter(artifact=artifact, kind=DerivedKind.SOURCE_HTML)
        .only("source_sha256", "version", "content")
        .first()
    )
    if row is None or row.source_sha256 != artifact.sha256 or row.version != HIGHLIGHT_VERSION:
        return None
    return row.content


def _trace_derived(
    read: Callable[[], bytes], reader: str, size: int, sha256: str, seconds: float | None = None
) -> Derived:
    trace = trace_parse(read, reader=reader, size=size, seconds=seconds)
    return Derived(
        DerivedKind.TRACE_STEPS,
        sha256,
        TRACE_VERSION,
        json.dumps(trace, ensure_ascii=False),
        trace["note"][:300],
    )


def derived_artifacts_store(
    *, artifacts: Sequence[Artifact], derived: Sequence[dict[str, Derived]]
) -> None:
    """Store what `documents_derive` (and the other `*_derive`) made, for the
    artifacts just written: one insert for all of them, in the order given."""
    DerivedArtifact.objects.bulk_create(
        DerivedArtifact(
            artifact=artifact,
            kind=item.kind,
            source_sha256=item.source_sha256,
            version=item.version,
            content=item.content,
            size=len(item.content.encode("utf-8")),
            note=item.note,
        )
        for made in derived
        for artifact in artifacts
        if (item := made.get(artifact.path)) is not None
    )


def artifact_html_derive(artifact: Artifact) -> DerivedArtifact | None:
    """Derive (again) and store one document's HTML; None when it is too large."""
    if artifact.size > settings.MARKDOWN_RENDER_MAX_BYTES:
        return None
    try:
        text = object_read(artifact.file.name).decode("utf-8", errors="replace")
    except storage_errors():
        return None
    siblings = Artifact.objects.filter(
        submission_id=artifact.submission_id, kind=ArtifactKind.FIGURE
    ).values_list("path", "kind")
    # A reviewer's page renames paths in memory (reviews.blind); figures resolve on the real ones.
    path = getattr(artifact, "real_path", artifact.path)
    item = _html_derive(text, path=path, figures=_figures(siblings), sha256=artifact.sha256)
    return _derived_store(artifact, item)


def _derived_store(artifact: Artifact, item: Derived) -> DerivedArtifact:
    values = {
        "source_sha256": item.source_sha256,
        "version": item.version,
        "content": item.content,
        "size": len(item.content.encode("utf-8")),
        "note": item.note,
    }
    try:
        with transaction.atomic():
            row, _ = DerivedArtifact.objects.update_or_create(
                artifact=artifact, kind=item.kind, defaults=values
            )
    except IntegrityError:  # derived by a concurrent reader first
        row = DerivedArtifact.objects.get(artifact=artifact, kind=item.kind)
    return row


def artifact_trace(artifact: Artifact) -> dict | None:
    """The stored steps of a coding-agent trace (read now if missing or stale,
    keeping the numbers a reproduction check located in it), or None when the
    artifact is not a trace."""
    path = getattr(artifact, "real_path", artifact.path)
    reader = trace_format_of(path, artifact.kind)
    if reader is None:
        return None
    row = (
        DerivedArtifact.objects.filter(artifact=artifact, kind=DerivedKind.TRACE_STEPS)
        .only("source_sha256", "version", "content")
        .first()
    )
    if row is not None and row.source_sha256 == artifact.sha256 and row.version == TRACE_VERSION:
        return json.loads(row.content)
    try:
        item = _trace_derived(
            lambda: object_read(artifact.file.name), reader, artifact.size, artifact.sha256
        )
    except storage_errors():
        return None
    if row is not None:
        trace = json.loads(item.content)
        trace["number_sources"] = json.loads(row.content).get("number_sources", [])
        item = Derived(item.kind, item.source_sha256, item.version, json.dumps(trace), item.note)
    return json.loads(_derived_store(artifact, item).content)


def trace_number_sources_store(*, artifact: Artifact, sources: list[dict]) -> None:
    """Keep where in the trace the paper's numbers were printed (found by the
    reproduction check, `experiments`), for the trace page to link."""
    trace = artifact_trace(artifact)
    if trace is None:
        return
    trace["number_sources"] = sources
    DerivedArtifact.objects.filter(artifact=artifact, kind=DerivedKind.TRACE_STEPS).update(
        content=json.dumps(trace, ensure_ascii=False)
    )


_HTML_FIELDS = ("artifact_id", "source_sha256", "version", "content", "note")


def _html_fresh(row: DerivedArtifact | None, artifact: Artifact) -> bool:
    return row is not None and row.source_sha256 == artifact.sha256 and row.version == HTML_VERSION


def artifact_html(artifact: Artifact) -> DerivedArtifact | None:
    """The stored clean HTML of a markdown document (derived now if missing or
    stale), or None when the document is too large to show."""
    row = (
        DerivedArtifact.objects.filter(artifact=artifact, kind=DerivedKind.HTML)
        .only(*_HTML_FIELDS)
        .first()
    )
    return row if _html_fresh(row, artifact) else artifact_html_derive(artifact)


def artifacts_html(artifacts: Iterable[Artifact]) -> dict[int, DerivedArtifact | None]:
    """`artifact_html` of each of `artifacts` by its id, the stored rows read in one
    query (a page shows several documents)."""
    artifacts = list(artifacts)
    rows = {
        row.artifact_id: row
        for row in DerivedArtifact.objects.filter(
            artifact__in=[artifact.pk for artifact in artifacts], kind=DerivedKind.HTML
        )
        .only(*_HTML_FIELDS)
        .order_by()
    }
    result: dict[int, DerivedArtifact | None] = {}
    for artifact in artifacts:
        row = rows.get(artifact.pk)
        result[artifact.pk] = row if _html_fresh(row, artifact) else artifact_html_derive(artifact)
    return result


_FIGURE_SRC_RE = re.compile(r'src="' + re.escape(ARTIFACT_SRC_PREFIX) + r'([^"]*)"')


def html_with_figures(html: str, url_for_path: Callable[[str], str]) -> SafeString:
    """Stored HTML with each kept figure pointing where this page serves it."""

    def replace(match: re.Match[str]) -> str:
        return f'src="{url_for_path(unquote(match.group(1)))}"'

    if ARTIFACT_SRC_PREFIX not in html:  # no figure: a plain search, not the pattern's
        return mark_safe(html)  # noqa: S308 - cleaned when stored
    return mark_safe(_FIGURE_SRC_RE.sub(replace, html))  # noqa: S308 - cleaned when stored


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
