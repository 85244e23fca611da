"""The `human scores` part of `import_mlrbench` (after tasks, runs and judge
reviews): `human_eval/human_review.csv` becomes submitted reviews of the
end-to-end submissions, one inactive placeholder account per `reviewer_id`.

Columns: `reviewer_id,model_name,workshop_name,<dimension>...`, where
`model_name` is the end-to-end agent and `workshop_name` the task slug.

The same reviewer scoring the same paper twice (the published file has three
such pairs) keeps the first row of each pair: every skipped row is listed in
the command's output and recorded (`ImportedReviewSkip`) for the agreement
page's data note. `--strict-human-reviews` refuses the whole file instead,
listing every duplicated row. Rows naming an unknown agent or task, or a paper
without an end-to-end submission, are listed and never guessed.
"""

import csv
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from benchmark.mlrbench_import import ImportOptions, ImportPartReport
from benchmark.models import Agent, Task
from submissions.models import Stage, Submission

from .models import ImportedReviewSkip
from .selectors import rubric_for_stage
from .services import (
    imported_review_skips_replace,
    placeholder_reviewer,
    review_import_record,
)

CSV_PATH = Path("human_eval") / "human_review.csv"
KEY_COLUMNS = ("reviewer_id", "model_name", "workshop_name")
DEFAULT_RANGE = (1, 10)


@dataclass(frozen=True)
class _Row:
    line: int
    reviewer_id: str
    agent: str
    task: str
    scores: dict[str, int]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.reviewer_id, self.agent, self.task)

    def describe(self) -> str:
        return f"reviewer {self.reviewer_id}, agent {self.agent}, task {self.task}"


def _rows_read(
    csv_path: Path, ranges: dict[str, tuple[int, int]], report: ImportPartReport
) -> tuple[list[_Row], list[str]]:
    try:
        with csv_path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            header = [name.strip() for name in reader.fieldnames or []]
            missing = [column for column in KEY_COLUMNS if column not in header]
            dimensions = [name for name in header if name and name not in KEY_COLUMNS]
            if missing or not dimensions:
                report.problems.append(
                    f"{CSV_PATH}: the header must have {', '.join(KEY_COLUMNS)} and at least "
                    f"one dimension column (found: {', '.join(header) or 'nothing'})"
                )
                return [], dimensions
            rows: list[_Row] = []
            for line, raw in enumerate(reader, start=2):
                raw = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k}
                reviewer_id, agent, task = (raw.get(c, "") for c in KEY_COLUMNS)
                if not (reviewer_id and agent and task):
                    report.problems.append(
                        f"{CSV_PATH} line {line}: reviewer_id, model_name and workshop_name "
                        "must all be given"
                    )
                    continue
                scores, errors = {}, []
                if len(reviewer_id) > 100 or not reviewer_id.isprintable():
                    errors.append("reviewer_id must be printable and at most 100 characters")
                for dimension in dimensions:
                    text = raw.get(dimension, "")
                    if text == "":
                        continue
                    low, high = ranges.get(dimension, DEFAULT_RANGE)
                    try:
                        value = float(text)
                    except ValueError:
                        value = None
                    if value is None or not value.is_integer() or not low <= value <= high:
                        errors.append(f"{dimension}={text!r} is not a whole number {low}-{high}")
                    else:
                        scores[dimension] = int(value)
                if errors or not scores:
                    report.problems.append(
                        f"{CSV_PATH} line {line}: "
                        + ("; ".join(errors) if errors else "no score in any dimension")
                    )
                    continue
                rows.append(_Row(line, reviewer_id, agent, task, scores))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        report.problems.append(f"{CSV_PATH}: cannot be read ({exc})")
        return [], []
    return rows, dimensions


def _duplicates_report(
    duplicated: dict[tuple[str, str, str], list[_Row]], report: ImportPartReport
) -> None:
    """With --strict-human-reviews: name every duplicated row, import nothing."""
    for group in duplicated.values():
        lines = ", ".join(str(r.line) for r in group)
        for row in group:
            report.problems.append(
                f"{CSV_PATH} line {row.line}: {row.describe()} appears more than once "
                f"(lines {lines})"
            )
    report.problems.append(
        f"{CSV_PATH}: {len(duplicated)} reviewer/paper pair(s) are duplicated, so no human "
        "review was imported; fix the file or run without --strict-human-reviews to keep the "
        "first row of each"
    )
    report.add("reviews created", 0)


def _first_of_each(
    by_key: dict[tuple[str, str, str], list[_Row]], report: ImportPartReport
) -> tuple[list[_Row], list[ImportedReviewSkip]]:
    """The first row of each reviewer/paper pair, in file order, and the rows
    skipped (each listed in the report's notes)."""
    kept: list[_Row] = []
    skipped: list[ImportedReviewSkip] = []
    for group in by_key.values():
        kept.append(group[0])
        for row in group[1:]:
            report.notes.append(
                f"{CSV_PATH} line {row.line}: skipped, duplicate of line {group[0].line} "
                f"({row.describe()})"
            )
            skipped.append(
                ImportedReviewSkip(
                    source=CSV_PATH.as_posix(),
                    line=row.line,
                    kept_line=group[0].line,
                    reviewer_id=row.reviewer_id,
                    agent=row.agent,
                    task=row.task,
                )
            )
    if skipped:
        report.add("duplicate rows skipped", len(skipped))
    kept.sort(key=lambda r: r.line)
    return kept, skipped


class _Papers:
    """The agents, tasks and end-to-end submissions the rows name."""

    def __init__(self, rows: list[_Row]):
        self.agents = {a.name: a for a in Agent.objects.filter(name__in={r.agent for r in rows})}
        self.tasks = {t.slug: t for t in Task.objects.filter(slug__in={r.task for r in rows})}
        self.submissions: dict[tuple[int, int], Submission] = {}
        for submission in Submission.objects.filter(
            stage=Stage.END2END, agent__in=self.agents.values(), task__in=self.tasks.values()
        ).order_by("version"):
            # The newest version is the one under review.
            self.submissions[(submission.agent_id, submission.task_id)] = submission

    def submission_of(self, row: _Row) -> tuple[Submission | None, str]:
        """The row's submission, or None and what is wrong with the row."""
        agent, task = self.agents.get(row.agent), self.tasks.get(row.task)
        if agent is None or task is None:
            unknown = [
                f"unknown agent {row.agent!r} (model_name)" if agent is None else "",
                f"unknown task {row.task!r} (workshop_name)" if task is None else "",
            ]
            return None, "; ".join(u for u in unknown if u)
        submission = self.submissions.get((agent.id, task.id))
        if submission is None:
            return None, (f"agent {row.agent} has no end-to-end submission for task {row.task}")
        return submission, ""


def human_scores_part(path: Path, options: ImportOptions) -> ImportPartReport:
    report = ImportPartReport()
    csv_path = Path(path) / CSV_PATH
    if not csv_path.is_file():
        report.problems.append(f"{CSV_PATH}: not found, no human scores imported")
        return report
    rubric = rubric_for_stage(Stage.END2END)
    ranges = {
        d["key"]: (int(d.get("min", 1)), int(d.get("max", 10)))
        for d in (rubric.dimensions if rubric else [])
    }
    rows, _dimensions = _rows_read(csv_path, ranges, report)

    by_key: dict[tuple[str, str, str], list[_Row]] = defaultdict(list)
    for row in rows:
        by_key[row.key].append(row)
    duplicated = {key: group for key, group in by_key.items() if len(group) > 1}
    if duplicated and options.strict_human_reviews:
        _duplicates_report(duplicated, report)
        return report
    kept, skipped = _first_of_each(by_key, report)

    papers = _Papers(kept)
    with transaction.atomic():
        imported_review_skips_replace(source=CSV_PATH.as_posix(), skips=skipped)
        reviewers: dict[str, User] = {}
        for row in kept:
            submission, problem = papers.submission_of(row)
            if submission is None:
                report.problems.append(f"{CSV_PATH} line {row.line}: {problem}")
                continue
            if row.reviewer_id not in reviewers:
                reviewers[row.reviewer_id] = placeholder_reviewer(reviewer_id=row.reviewer_id)
            outcome = review_import_record(
                submission=submission,
                reviewer=reviewers[row.reviewer_id],
                scores=row.scores,
                ranges={d: ranges.get(d, DEFAULT_RANGE) for d in row.scores},
                rubric=rubric,
            )
            report.add(f"reviews {outcome}")
        options.progress(f"human scores: {len(kept)} rows read")
    return report
