"""PDF papers: their text is extracted once, at intake or import, under a time,
size and memory budget, and stored as a derived artifact (`DerivedArtifact`,
kind `pdf_text`) beside the submission's files. Pages, search and judges read
what was stored; nothing parses an untrusted PDF per request.

The extraction runs in a child process (`submissions.pdf_worker`, pypdf, in the
pool of `common.child_pool`) with a wall-clock timeout and an address-space
limit, so that a PDF built to make a parser loop or balloon costs the intake a
refusal, not a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from common.child_pool import ChildFailed, ChildTimeout, child_run
from common.storage import object_read, object_save, storage_errors

from .models import Artifact, DerivedArtifact, DerivedKind
from .pdf_worker import extract_budgeted

DERIVED_FOLDER = "derived"
PDF_MAGIC = b"%PDF-"


class PdfRefused(Exception):
    """The PDF cannot be taken; the message says why, in the uploader's terms."""


@dataclass(frozen=True)
class PdfText:
    text: str
    pages: int
    truncated: bool


def pdf_text_extract(path: Path, *, name: str, timeout: float | None = None) -> PdfText:
    """The text of the PDF at `path`, or PdfRefused naming `name` and the reason.
    `timeout`: what is left of the upload's budget, when less than `PDF_TEXT_SECONDS`."""
    seconds = settings.PDF_TEXT_SECONDS if timeout is None else timeout
    size = path.stat().st_size
    if size > settings.PDF_MAX_BYTES:
        raise PdfRefused(
            f"{name}: the PDF is {size} bytes; at most {settings.PDF_MAX_BYTES} are accepted"
        )
    with path.open("rb") as handle:
        head = handle.read(1024)
    if PDF_MAGIC not in head:
        raise PdfRefused(f"{name}: not a PDF file (it does not start with %PDF-)")
    result: object
    try:
        result = child_run(
            extract_budgeted,
            str(path),
            settings.PDF_MAX_PAGES,
            settings.PDF_TEXT_MAX_CHARS,
            settings.PDF_TEXT_MEMORY_BYTES,
            timeout=max(seconds, 0.001),
        )
    except ChildTimeout:
        if seconds < settings.PDF_TEXT_SECONDS:
            raise PdfRefused(
                f"{name}: the upload's documents and PDFs took longer than "
                f"{settings.INTAKE_WORK_SECONDS:g} s to read together"
            ) from None
        raise PdfRefused(
            f"{name}: reading the PDF's text took longer than {settings.PDF_TEXT_SECONDS:g} s"
        ) from None
    except ChildFailed:
        result = {}
    if not isinstance(result, dict) or ("text" not in result and "error" not in result):
        raise PdfRefused(f"{name}: the PDF could not be read (the reader stopped)")
    if "error" in result:
        raise PdfRefused(f"{name}: {result['error']}")
    text = str(result["text"])
    if not text.strip():
        raise PdfRefused(f"{name}: the PDF has no text to read (a scanned paper?)")
    return PdfText(text=text, pages=int(result["pages"]), truncated=bool(result["truncated"]))


def derived_path(submission_id: int, path: str) -> str:
    """The name a derived text is stored under: outside the run's own
    folder, so it is never mistaken for one of the agent's files."""
    return f"{DERIVED_FOLDER}/{submission_id}/{path}.txt"


def derived_text_write(*, artifact: Artifact, extracted: PdfText) -> DerivedArtifact:
    """Store a PDF's text and its row (the intake stages the text instead)."""
    relative = derived_path(artifact.submission_id, artifact.path)
    object_save(relative, extracted.text.encode("utf-8"))
    return derived_text_record(artifact=artifact, extracted=extracted)


def derived_text_record(*, artifact: Artifact, extracted: PdfText) -> DerivedArtifact:
    """The row of a PDF's text stored (or about to be moved) at `derived_path`."""
    derived, _created = DerivedArtifact.objects.update_or_create(
        artifact=artifact,
        kind=DerivedKind.PDF_TEXT,
        defaults={
            "file": derived_path(artifact.submission_id, artifact.path),
            "size": len(extracted.text.encode("utf-8")),
            "pages": extracted.pages,
            "truncated": extracted.truncated,
        },
    )
    return derived


def pdf_text_of(artifact: Artifact, *, limit: int | None = None) -> str | None:
    """The stored text of a PDF artifact (at most `limit` characters), None without one."""
    derived = (
        DerivedArtifact.objects.filter(artifact=artifact, kind=DerivedKind.PDF_TEXT)
        .only("file")
        .first()
    )
    if derived is None or not derived.file.name:
        return None
    try:
        # UTF-8 takes at most 4 bytes a character.
        data = object_read(derived.file.name, limit=None if limit is None else 4 * limit)
    except storage_errors():
        return None
    text = data.decode("utf-8", errors="replace")
    return text if limit is None else text[:limit]


def is_pdf_path(path: str) -> bool:
    return path.lower().endswith(".pdf")
