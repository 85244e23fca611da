"""CSV and JSON Lines writers, and the streamed zip of the whole public dataset.

Every CSV the site writes goes through the one writer, `common.csv_cells`
(`csv_lines`, `csv_text`), so a cell that a spreadsheet would run as a formula
(`=`, `+`, `-`, `@`, tab, carriage return first), the header's included, is
written with a leading `'` and shown as text instead.
"""

import datetime as dt
import json
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import IO, cast

from django.db.models import F, QuerySet

from benchmark.models import Agent, Task
from common.csv_cells import ROWS_PER_CHUNK, csv_lines
from judging.models import DimensionScore, HallucinationFinding, Judgment, JudgmentStatus
from judging.selectors import submissions_with_judging_state
from reviews.blind import under_open_review
from reviews.selectors import hallucination_checks_export, released_review_export
from submissions.models import Submission, SubmissionInput


def json_default(value: object) -> object:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def jsonl_lines(header: Sequence[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    """JSON Lines in chunks: one object per row, keyed by the header."""
    lines: list[str] = []
    for row in rows:
        lines.append(json.dumps(dict(zip(header, row, strict=True)), default=json_default) + "\n")
        if len(lines) == ROWS_PER_CHUNK:
            yield "".join(lines)
            lines.clear()
    yield "".join(lines)


# --- the tables of the public dataset ----------------------------------------


@dataclass(frozen=True)
class ExportTable:
    name: str
    header: tuple[str, ...]
    rows: Callable[[], Iterable[Sequence[object]]]


def _stream(queryset: QuerySet, fields: Sequence[str]) -> Iterator[tuple]:
    # A server-side cursor on PostgreSQL: the export never holds a table in memory.
    return queryset.values_list(*fields).iterator(chunk_size=ROWS_PER_CHUNK)


def _public_judgments() -> QuerySet[Judgment]:
    # Never a system agent's (the judges' canaries: they are no agent's results).
    return Judgment.objects.filter(status=JudgmentStatus.DONE, submission__agent__is_system=False)


TASK_FIELDS = ("slug", "title", "conference", "year", "topic", "kind", "description")
AGENT_FIELDS = (
    "name",
    "display_name",
    "team__name",
    "base_model",
    "coding_agent",
    "scaffold",
    "model_family",
    "description",
)
SUBMISSION_FIELDS = (
    "id",
    "agent__name",
    "task__slug",
    "stage",
    "version",
    "source",
    "state",  # the status shown everywhere: intake, then judging and judged (derived)
    "llm_cost_usd",
    "agent_cost_usd",
    "agent_duration_seconds",
    "created_at",
)
# Lineage: one row per input of a submission, in the order it named them.
SUBMISSION_INPUT_FIELDS = ("submission_id", "based_on_id", "position")
JUDGMENT_FIELDS = (
    "id",
    "submission_id",
    "submission__agent__name",
    "submission__task__slug",
    "submission__stage",
    "submission__version",
    "judge__name",
    "judge__model",
    "judge__model_family",
    "rubric__version",
    "condition",
    "confidence",
    "has_hallucination",
    "hallucination_details",
    "strengths",
    "weaknesses",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_seconds",
    "imported",
    "finished_at",
)
SCORE_FIELDS = (
    "judgment_id",
    "judgment__submission_id",
    "judgment__judge__name",
    "judgment__condition",
    "dimension",
    "score",
    "scale_min",
    "scale_max",
    "justification",
)


FINDING_FIELDS = (
    "judgment_id",
    "judgment__submission_id",
    "judgment__submission__agent__name",
    "judgment__submission__task__slug",
    "judgment__submission__stage",
    "judgment__judge__name",
    "judgment__kind",
    "judgment__condition",
    "position",
    "type",
    "description",
    "evidence",
)


def _header(fields: Sequence[str], renames: dict[str, str]) -> tuple[str, ...]:
    return tuple(renames.get(f, f) for f in fields)


def public_review_table() -> ExportTable:
    """Released human reviews: reviewers anonymised, only reviews of papers an
    organiser has released."""
    header, rows = released_review_export()
    return ExportTable("reviews", tuple(header), lambda: rows)


def _under_review():
    # Runs of a task with a paper in an open blind review round are left out until it closes.
    return Submission.objects.filter(under_open_review()).values("id")


def export_tables() -> list[ExportTable]:
    """Long because it declares each exported table."""
    tables = [
        ExportTable(
            "tasks",
            TASK_FIELDS,
            lambda: _stream(Task.objects.order_by("slug"), TASK_FIELDS),
        ),
        ExportTable(
            "agents",
            _header(AGENT_FIELDS, {"team__name": "team"}),
            lambda: _stream(Agent.objects.public().order_by("name"), AGENT_FIELDS),
        ),
        ExportTable(
            "submissions",
            _header(
                SUBMISSION_FIELDS, {"agent__name": "agent", "task__slug": "task", "state": "status"}
            ),
            lambda: _stream(
                submissions_with_judging_state(
                    Submission.objects.public().exclude(under_open_review()).order_by("id"),
                    name="state",
                ),
                SUBMISSION_FIELDS,
            ),
        ),
        ExportTable(
            "submission_inputs",
            _header(SUBMISSION_INPUT_FIELDS, {"based_on_id": "based_on"}),
            lambda: _stream(
                SubmissionInput.objects.filter(submission__agent__is_system=False)
                .exclude(submission__in=_under_review())
                .exclude(based_on__in=_under_review())
                .order_by("submission_id", "position"),
                SUBMISSION_INPUT_FIELDS,
            ),
        ),
        ExportTable(
            "judgments",
            _header(
                JUDGMENT_FIELDS,
                {
                    "submission__agent__name": "agent",
                    "submission__task__slug": "task",
                    "submission__stage": "stage",
                    "submission__version": "version",
                    "judge__name": "judge",
                    "judge__model": "judge_model",
                    "judge__model_family": "judge_model_family",
                    "rubric__version": "rubric_version",
                },
            ),
            lambda: _stream(
                _public_judgments().exclude(submission__in=_under_review()).order_by("id"),
                JUDGMENT_FIELDS,
            ),
        ),
        ExportTable(
            "scores",
            _header(
                SCORE_FIELDS,
                {
                    "judgment__submission_id": "submission_id",
                    "judgment__judge__name": "judge",
                    "judgment__condition": "condition",
                },
            ),
            lambda: _stream(
                DimensionScore.objects.filter(judgment__in=_public_judgments())
                .exclude(judgment__submission__in=_under_review())
                .order_by(F("judgment_id"), "dimension"),
                SCORE_FIELDS,
            ),
        ),
    ]
    tables.append(public_review_table())
    tables.append(
        ExportTable(
            "hallucination_findings",
            _header(
                FINDING_FIELDS,
                {
                    "judgment__submission_id": "submission_id",
                    "judgment__submission__agent__name": "agent",
                    "judgment__submission__task__slug": "task",
                    "judgment__submission__stage": "stage",
                    "judgment__judge__name": "judge",
                    "judgment__kind": "judgment_kind",
                    "judgment__condition": "condition",
                },
            ),
            lambda: _stream(
                HallucinationFinding.objects.filter(judgment__in=_public_judgments())
                .exclude(judgment__submission__in=_under_review())
                .order_by("judgment_id", "position"),
                FINDING_FIELDS,
            ),
        )
    )
    header, rows = hallucination_checks_export()
    tables.append(ExportTable("human_hallucination_checks", tuple(header), lambda: rows))
    return tables


EXPORT_FORMATS = {"csv": csv_lines, "jsonl": jsonl_lines}


# --- a zip written as it is sent ----------------------------------------------


class _Sink:
    """A write-only file for `zipfile`: it has no `tell`/`seek`, so zipfile
    writes data descriptors and never goes back, and the bytes can be sent as
    soon as they are written."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self._chunks.append(bytes(data))
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def drain(self) -> bytes:
        data = b"".join(self._chunks)
        self._chunks.clear()
        self.size = 0
        return data


def zip_stream(
    files: Iterable[tuple[str, Iterable[str]]], *, at: dt.datetime | None = None
) -> Iterator[bytes]:
    """A zip archive of `(name, text chunks)` files, produced piece by piece;
    every entry dated `at` (default now), so the same files at the same `at`
    make the same bytes."""
    sink = _Sink()
    now = (at or dt.datetime.now(tz=dt.UTC)).timetuple()[:6]
    # The sink is the write-only file zipfile needs; the stubs ask for a full IO.
    writable = cast(IO[bytes], sink)
    with zipfile.ZipFile(writable, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, chunks in files:
            info = zipfile.ZipInfo(name, date_time=now)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, mode="w", force_zip64=True) as entry:
                for chunk in chunks:
                    entry.write(chunk.encode("utf-8"))
                    if sink.size >= 256 * 1024:
                        yield sink.drain()
            yield sink.drain()
    yield sink.drain()


def export_files(formats: Sequence[str]) -> Iterator[tuple[str, Iterable[str]]]:
    for table in export_tables():
        for fmt in formats:
            yield f"{table.name}.{fmt}", EXPORT_FORMATS[fmt](table.header, table.rows())


def export_readme(formats: Sequence[str]) -> str:
    names = ", ".join(f"`<table>.{fmt}`" for fmt in formats)
    return (
        "MLR-Bench site: public dataset export\n\n"
        f"Each table is written as {names}. Tables: tasks, agents, submissions, "
        "submission_inputs (lineage: the submissions each one was based_on, by position), "
        "judgments (finished judgments only) and scores (one row per judgment and "
        "dimension; join on judgment_id / submission_id), plus released human reviews "
        "when the site has them.\n"
        "A submission's stage score on a dimension is the mean of its judges' scores "
        "in one condition (with_code by default).\n"
        "CSV cells that began with =, +, -, @, tab or carriage return start with an "
        "added ' so that spreadsheets do not run them as formulas.\n"
    )


def export_stream(formats: Sequence[str]) -> Iterator[bytes]:
    def files():
        yield "README.txt", [export_readme(formats)]
        yield from export_files(formats)

    return zip_stream(files())
