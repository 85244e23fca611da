"""The provenance ledger of a submission (`submissions.provenance`), computed at
intake and stored as a derived artifact of the run's first paper (kind
`provenance`), and read or computed again for what is stored
(`manage.py provenance_compute`).

The computation runs in a child of the renderers' pool (`common.child_pool`)
within what is left of the upload's budget (`INTAKE_WORK_SECONDS`): a crafted
trace or paper costs at most that budget, and past it the ledger says it was
not computed (never "clean"), for the command to compute again.
"""

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from common.child_pool import ChildFailed, ChildTimeout, child_run
from common.claims import paper_claim_cells
from common.storage import object_read, storage_errors

from .derived import Derived, DocumentFile, artifact_trace
from .models import Artifact, ArtifactKind, DerivedArtifact, DerivedKind, Submission
from .page_panels import SummaryItem
from .paper_marks import MARKS_MAX, Mark, paper_marked
from .provenance import (
    CLASSES,
    FILE_MAX_CHARS,
    KNOWN_STATUSES,
    NO_TRACE,
    PROVENANCE_VERSION,
    FileInput,
    TraceInput,
    counts_line,
    ledger_run,
)
from .traces import trace_format_of

logger = logging.getLogger(__name__)

# The shipped files the ledger searches: text the run's code or commands may have written.
SEARCHED_KINDS = frozenset(
    {ArtifactKind.LOG, ArtifactKind.RESULTS, ArtifactKind.DATA, ArtifactKind.CODE}
)
SEARCHED_SUFFIXES = (
    ".json", ".jsonl", ".csv", ".tsv", ".txt", ".log", ".out", ".md", ".py", ".sh", ".yaml",
    ".yml",
)  # fmt: skip


@dataclass(frozen=True)
class RunFile:
    """A file of a run as the ledger needs it: its path, kind and how to read it."""

    path: str
    kind: str
    read: Callable[[int], bytes]  # the file's first n bytes


def not_computed(why: str) -> dict[str, Any]:
    return {
        "version": PROVENANCE_VERSION,
        "status": "not computed",
        "note": why,
        "papers": [],
        "traces": [],
        "counts": dict.fromkeys(CLASSES, 0),
        "verdict": "unknown",
        "entries": [],
    }


def _text(item: RunFile, limit: int = FILE_MAX_CHARS) -> str:
    return item.read(limit).decode("utf-8", errors="replace")


# What the ledger reads of a run's searched files in all (each up to FILE_MAX_CHARS):
# they are read in the upload's process, so 6,000 small data files cost a bounded
# amount of memory; the logs and results first, then the code, then data.
SEARCHED_MAX_BYTES = 8 * 1024 * 1024
_SEARCH_ORDER: dict[str, int] = {
    str(ArtifactKind.LOG): 0,
    str(ArtifactKind.RESULTS): 1,
    str(ArtifactKind.CODE): 2,
}


def ledger_inputs(files: Iterable[RunFile], traces: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What `provenance.ledger_compute` reads, from a run's files and its parsed
    traces (by path). A paper without a result number needs no file read; past
    SEARCHED_MAX_BYTES the files are named, not read (`unsearched`)."""
    papers, searched, pdfs = [], [], []
    # Plain strings, never the model's enum: the child that reads them loads no Django.
    files = [RunFile(item.path, str(item.kind), item.read) for item in files]
    for item in files:
        lower = item.path.lower()
        if item.kind == ArtifactKind.PAPER:
            if lower.endswith(".pdf"):
                pdfs.append(item.path)
            else:
                papers.append(FileInput(item.path, item.kind, _text(item)))
        elif (
            item.kind in SEARCHED_KINDS
            and lower.endswith(SEARCHED_SUFFIXES)
            and trace_format_of(item.path, item.kind) is None
        ):
            searched.append(item)
    claims = any(paper_claim_cells(paper.text, paper.path) for paper in papers)
    found, unsearched, room = [], 0, SEARCHED_MAX_BYTES
    for item in sorted(searched, key=lambda item: _SEARCH_ORDER.get(item.kind, 3)):
        # Without a claim nothing is searched: the kinds alone say log or trace.
        text = _text(item, min(room, FILE_MAX_CHARS)) if claims and room > 0 else ""
        room -= len(text)
        unsearched += 1 if claims and room <= 0 and not text else 0
        found.append(FileInput(item.path, item.kind, text))
    read = [
        TraceInput(
            path, trace.get("steps") or [], bool(trace.get("truncated")), str(trace["format"])
        )
        for path, trace in sorted(traces.items())
    ]
    return {
        "papers": papers,
        "traces": read,
        "files": found,
        "pdf_papers": pdfs,
        "unsearched": unsearched,
    }


def ledger_of_run(
    files: list[RunFile], traces: dict[str, dict[str, Any]], *, seconds: float
) -> dict[str, Any]:
    """The ledger, computed in a child within `seconds`."""
    if seconds <= 0:
        return not_computed("past the upload's time budget")
    inputs = ledger_inputs(files, traces)
    inputs["tolerance"] = settings.REPRODUCTION_TOLERANCE
    inputs["seconds"] = seconds
    started = time.monotonic()
    try:
        # A margin past the ledger's own clock: it cuts itself short first.
        return child_run(ledger_run, inputs, timeout=seconds + 2)
    except ChildTimeout:
        return not_computed(f"past its time budget ({time.monotonic() - started:.0f} s)")
    except ChildFailed as exc:
        logger.warning("the provenance ledger failed: %s", exc)
        return not_computed("the ledger could not be computed")


def provenance_derive(
    files: list[DocumentFile],
    traces: dict[str, Derived],
    *,
    deadline: float,
    digest: str,
    based_on: Iterable[Submission] = (),
) -> dict[str, Derived]:
    """At intake: the run's ledger, by the path of the paper it is kept with
    (none without a paper), within what is left of the upload's budget."""
    paper = ledger_paper((item.path, item.kind) for item in files)
    if paper is None:
        return {}

    def reader(item: DocumentFile) -> Callable[[int], bytes]:
        def read(limit: int) -> bytes:
            with item.location.open("rb") as handle:
                return handle.read(limit)

        return read

    try:
        run, parsed = inputs_read(based_on)
    except storage_errors():
        run, parsed = [], {}
    run += [RunFile(item.path, item.kind, reader(item)) for item in files]
    parsed.update({path: json.loads(item.content) for path, item in traces.items()})
    ledger = ledger_of_run(run, parsed, seconds=deadline - time.monotonic())
    content = json.dumps(ledger, ensure_ascii=False)
    note = str(ledger.get("note") or "")[:300]
    return {paper: Derived(DerivedKind.PROVENANCE, digest, PROVENANCE_VERSION, content, note)}


def ledger_paper(paths: Iterable[tuple[str, str]]) -> str | None:
    """The path of the paper the ledger is kept with (the first, markdown first)."""
    papers = sorted(
        (path.lower().endswith(".pdf"), path) for path, kind in paths if kind == ArtifactKind.PAPER
    )
    return papers[0][1] if papers else None


def ledger_store(*, artifact: Artifact, ledger: dict[str, Any], digest: str) -> None:
    """Keep the ledger with the paper's artifact (`digest`: the run's content digest)."""
    content = json.dumps(ledger, ensure_ascii=False)
    values = {
        "source_sha256": digest,
        "version": PROVENANCE_VERSION,
        "content": content,
        "size": len(content.encode("utf-8")),
        "note": str(ledger.get("note") or "")[:300],
    }
    try:
        with transaction.atomic():
            DerivedArtifact.objects.update_or_create(
                artifact=artifact, kind=DerivedKind.PROVENANCE, defaults=values
            )
    except IntegrityError:  # stored by a concurrent reader first
        pass


INPUT_PREFIX = "based_on"


def input_path(submission_id: int, path: str) -> str:
    """How the ledger names a file of a submission this one was built on (a
    paper's trace is its experiment's): `based_on/<id>/<path>`."""
    return f"{INPUT_PREFIX}/{submission_id}/{path}"


def _stored_files(artifacts: Iterable[Artifact], prefix: Callable[[str], str]) -> list[RunFile]:
    def reader(artifact: Artifact) -> Callable[[int], bytes]:
        return lambda limit: object_read(artifact.file.name, limit=limit)

    return [
        RunFile(prefix(artifact.path), artifact.kind, reader(artifact)) for artifact in artifacts
    ]


def _under(submission_id: int) -> Callable[[str], str]:
    return lambda path: input_path(submission_id, path)


def inputs_read(
    based_on: Iterable[Submission],
) -> tuple[list[RunFile], dict[str, dict[str, Any]]]:
    """The traces and searched files of the submissions a run was built on (not
    their papers: the ledger is this run's paper's)."""
    files: list[RunFile] = []
    traces: dict[str, dict[str, Any]] = {}
    for source in based_on:
        artifacts = [a for a in source.artifacts.all() if a.kind != ArtifactKind.PAPER]
        files += _stored_files(artifacts, _under(source.pk))
        for artifact in artifacts:
            trace = artifact_trace(artifact)
            if trace is not None:
                traces[input_path(source.pk, artifact.path)] = trace
    return files, traces


def submission_ledger_compute(*, submission: Submission, seconds: float | None = None) -> dict:
    """Compute and store the ledger of a stored submission (the command; a
    missing or stale one on first read). A submission without a paper has none."""
    artifacts = list(submission.artifacts.all())
    paper = ledger_paper((artifact.path, artifact.kind) for artifact in artifacts)
    if paper is None:
        return not_computed("no paper")
    try:
        based_on = [row.based_on for row in submission.inputs.select_related("based_on")]
        files, traces = inputs_read(based_on)
        files += _stored_files(artifacts, str)
        for artifact in artifacts:
            trace = artifact_trace(artifact)
            if trace is not None:
                traces[artifact.path] = trace
        ledger = ledger_of_run(
            files,
            traces,
            seconds=settings.INTAKE_WORK_SECONDS if seconds is None else seconds,
        )
    except storage_errors():
        return not_computed("the artifact store could not be read")
    (row,) = [artifact for artifact in artifacts if artifact.path == paper]
    ledger_store(artifact=row, ledger=ledger, digest=submission.content_sha256)
    return ledger


def submission_ledger(*, submission: Submission, compute: bool = True) -> dict[str, Any] | None:
    """The submission's stored ledger (computed now when missing or stale and
    `compute`); None when the submission has no paper."""
    row = (
        DerivedArtifact.objects.filter(artifact__submission=submission, kind=DerivedKind.PROVENANCE)
        .only("source_sha256", "version", "content")
        .first()
    )
    fresh = (
        row is not None
        and row.version == PROVENANCE_VERSION
        and row.source_sha256 == submission.content_sha256
    )
    if fresh and row is not None:
        # One that was not computed in time stays so until the command computes it:
        # a page view never spends an upload's budget again.
        ledger: dict[str, Any] = json.loads(row.content)
        return ledger
    if not compute:
        return None
    paths = submission.artifacts.values_list("path", "kind")
    if ledger_paper(paths) is None:
        return None
    return submission_ledger_compute(submission=submission)


def evidence_text(evidence: dict[str, Any]) -> str:
    """An entry's evidence as one line a person reads."""
    if "function" in evidence:
        of = ", ".join(item["text"] for item in evidence.get("of", []))
        return f"{evidence['function']} of {of}"
    parts = []
    if evidence.get("step") is not None:
        tool, trace = evidence.get("tool", ""), evidence.get("trace", "")
        parts.append(f"step {evidence['step']} ({tool}) of {trace}")
    if evidence.get("file"):
        how = f": {evidence['how']}" if evidence.get("how") else ""
        parts.append(f"{evidence['file']}{how}")
    if evidence.get("printed"):
        parts.append(f"printed {evidence['printed']}")
    if "literal_at" in evidence:
        typed = dict(evidence["literal_at"])
        literal = typed.pop("literal", "")
        parts.append(f"typed before as {literal} in {evidence_text(typed)}")
    if evidence.get("literal"):
        parts.append(f"typed as {evidence['literal']}")
    return "; ".join(parts) or str(evidence.get("note") or "found nowhere")


def _placed(evidence: dict[str, Any]) -> str:
    step, tool, where = evidence.get("step"), evidence.get("tool", ""), evidence.get("file", "")
    if evidence.get("source") == "output" and step is not None:
        return f"printed by step {step} ({tool})"
    if evidence.get("source") == "read" and step is not None:
        return f"in {where}, read at step {step} ({tool})"
    if step is not None:
        return f"typed by the agent at step {step} ({tool})" + (f" in {where}" if where else "")
    line = f" line {evidence['line']}" if evidence.get("line") else ""
    how = f" ({evidence['how']})" if evidence.get("how") else ""
    return f"in {where}{line}{how}"


def entry_label(entry: dict[str, Any]) -> str:
    """What a reader of the paper is told of a number: its class and, shortly,
    where it came from ("measured: printed by step 14 (Bash)")."""
    klass, evidence = entry["class"], entry.get("evidence") or {}
    if "function" in evidence:
        return f"{klass}: {evidence_text(evidence)}"
    if klass == "untraced":
        note = evidence.get("note") or "found nowhere in the trace or the run's files"
        return f"untraced: {note}"
    said = _placed(evidence)
    typed = evidence.get("literal_at")
    if klass == "hard-coded" and typed:
        said += f", typed before as {typed.get('literal', '')} {_placed(typed)}"
    return f"{klass}: {said}"


def _owner(submission_id: int, path: str) -> tuple[int, str]:
    """The submission and path of a file the ledger names (`based_on/<id>/<path>`
    for a file of the run this one was built on)."""
    prefix, _, rest = path.partition("/")
    owner, _, inner = rest.partition("/")
    if prefix == INPUT_PREFIX and owner.isdigit() and inner:
        return int(owner), inner
    return submission_id, path


def entry_href(
    submission_id: int,
    index: int,
    entry: dict[str, Any],
    urls: dict[tuple[str, str], str] | None = None,
) -> str:
    """Where a marked number links: the trace viewer's step, the file (its
    printed text highlighted where the browser can), else the ledger's row.
    `urls`: the URLs reversed so far (a page links one trace a thousand times)."""
    urls = {} if urls is None else urls

    def url_of(name: str, path: str) -> str:
        if (name, path) not in urls:
            urls[name, path] = reverse(name, args=list(_owner(submission_id, path)))
        return urls[name, path]

    evidence = entry.get("evidence") or {}
    if entry["class"] in ("measured", "hard-coded", "written"):
        if evidence.get("trace") and evidence.get("step") is not None:
            step = int(evidence["step"])
            return f"{url_of('submissions:trace', evidence['trace'])}?step={step}#step-{step}"
        if evidence.get("file"):
            url = url_of("submissions:artifact-detail", evidence["file"])
            found = evidence.get("printed") or evidence.get("literal")
            return f"{url}#:~:text={quote(str(found), safe='')}" if found else url
    return f"#provenance-row-{index}"


def submission_paper_marked(
    *, submission: Submission, html: str, paper: str, ledger: dict[str, Any]
) -> tuple[str, int]:
    """The paper's stored HTML with each number the ledger classed marked
    (`submissions.paper_marks`), and how many were."""

    urls: dict[tuple[str, str], str] = {}

    def mark_of(index: int, entry: dict[str, Any]) -> Mark:
        label = entry_label(entry)
        if entry.get("common"):
            label += " (one significant digit: never counts towards the verdict)"
        href = entry_href(submission.pk, index, entry, urls)
        return Mark(entry["class"], label, href, common=bool(entry.get("common")))

    return paper_marked(html, ledger.get("entries") or [], paper=paper, mark_of=mark_of)


# The ledger's rows (and the paper's marks: `paper_marks.MARKS_MAX`) a page shows;
# the API has them all.
PAGE_ROWS_MAX = MARKS_MAX


def _rows_html(rows: list[dict[str, Any]]) -> SafeString:
    """The ledger table's rows (made here, not by the template: a page of 500 rows
    took a template a third of a second); `format_html` escapes every value."""

    def cells(index: int, row: dict[str, Any]) -> tuple[Any, ...]:
        klass = str(row["klass"])
        shown: Any = row["shown"]
        if not row["href"].startswith("#"):
            shown = format_html(
                '<a href="{}" data-testid="provenance-evidence-link">{}</a>', row["href"], shown
            )
        common = (
            format_html(' <span class="muted small">{}</span>', "(common)")
            if row.get("common")
            else ""
        )
        return (index, klass, klass, row["text"], row["where"], klass, klass, common, shown)

    return format_html_join(
        "\n",
        '<tr id="provenance-row-{}" class="provenance-{}" data-class="{}"><td>{}</td>'
        '<td>{}</td><td><mark class="prov prov-{}">{}</mark>{}</td><td>{}</td></tr>',
        (cells(index, row) for index, row in enumerate(rows)),
    )


def submission_ledger_view(*, submission: Submission) -> dict[str, Any] | None:
    """What the page of a submission with a paper shows of the stored ledger, in
    one query (never computed on a page view: `manage.py provenance_compute`
    computes what is missing)."""
    ledger = submission_ledger(submission=submission, compute=False) or not_computed(
        "not computed yet (manage.py provenance_compute)"
    )
    urls: dict[tuple[str, str], str] = {}
    rows = [
        {
            **entry,
            "klass": entry["class"],
            "shown": evidence_text(entry["evidence"]),
            "href": entry_href(submission.pk, index, entry, urls),
        }
        for index, entry in enumerate(ledger["entries"][:PAGE_ROWS_MAX])
    ]
    return {
        **ledger,
        "line": counts_line(ledger["counts"]),
        "known": ledger["status"] in KNOWN_STATUSES,
        "rows": rows,
        "rows_left_out": max(len(ledger["entries"]) - PAGE_ROWS_MAX, 0),
        "rows_html": _rows_html(rows),
    }


def ledger_known(ledger: dict[str, Any]) -> dict[str, Any]:
    """What a reader is told of a ledger at a glance: `known` (its numbers were
    placed), `provenance` (the counts line, or why provenance is unknown) and
    `counts` (None when unknown: a paper without a trace has no count of 0)."""
    if ledger["status"] in KNOWN_STATUSES:
        return {"known": True, "provenance": counts_line(ledger["counts"])}
    status = ledger["status"]
    why = NO_TRACE if status == "no trace" else f"{status}: provenance unknown"
    return {"known": False, "provenance": why, "counts": None}


def provenance_summary_item(view: dict[str, Any]) -> SummaryItem:
    """The summary's line on the ledger: its counts and verdict, or why
    provenance is unknown (never a count of 0 for a paper without a trace)."""
    if view["known"]:
        return SummaryItem(
            key="provenance",
            label="Provenance",
            value=f"{view['line']} · verdict {view['verdict']}",
            href="#provenance",
            flag=view["verdict"] == "fabricated",
        )
    value = ledger_known(view)["provenance"]
    return SummaryItem(key="provenance", label="Provenance", value=value, href="#provenance")


def submission_ledgers(*, submission_ids: Iterable[int] | Any) -> dict[int, dict[str, Any]]:
    """The stored, fresh ledgers of many submissions in one query (a release)."""
    rows = DerivedArtifact.objects.filter(
        kind=DerivedKind.PROVENANCE,
        version=PROVENANCE_VERSION,
        artifact__submission_id__in=submission_ids,
    ).values_list(
        "artifact__submission_id",
        "artifact__submission__content_sha256",
        "source_sha256",
        "content",
    )
    return {sid: json.loads(content) for sid, digest, source, content in rows if digest == source}


def ledgers_release_tables(*, submission_ids: Iterable[int] | Any) -> dict[str, Any]:
    """What a release carries of the ledgers: each submission's verdict and counts,
    and one row per reported number (its evidence as JSON)."""
    ledgers = submission_ledgers(submission_ids=submission_ids)
    verdicts = [
        [
            sid,
            ledger["status"],
            ledger["verdict"],
            # Unknown provenance has no counts (never 0 for a paper without a trace).
            *(
                ledger["counts"][name] if ledger["status"] in KNOWN_STATUSES else None
                for name in CLASSES
            ),
        ]
        for sid, ledger in sorted(ledgers.items())
    ]
    entries = [
        [
            sid,
            entry["where"],
            entry["text"],
            entry["class"],
            entry["common"],
            json.dumps(entry["evidence"], sort_keys=True),
        ]
        for sid, ledger in sorted(ledgers.items())
        for entry in ledger["entries"]
    ]
    return {
        "version": PROVENANCE_VERSION,
        "verdicts": {
            "header": ["submission_id", "status", "verdict", *CLASSES],
            "rows": verdicts,
        },
        "entries": {
            "header": ["submission_id", "where", "text", "class", "common", "evidence"],
            "rows": entries,
        },
    }
