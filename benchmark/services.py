"""Every write to the benchmark catalogue goes through these functions."""

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from common.errors import ErrorItem, ValidationFailed
from common.results import results_changed

from .descriptions import task_description_derive
from .models import Task, TaskKind
from .task_files import (
    ParsedTask,
    TaskFileError,
    task_folder_parse,
    task_folder_resolve,
    topics_csv_parse,
)


class TaskImportError(ValidationFailed):
    """Raised when an import is refused; `problems` names every bad input."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(items=[ErrorItem(code="invalid_task_file", message=p) for p in problems])


@dataclass
class TaskImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: list[TaskFileError] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.created + self.updated + self.unchanged


_SYNCED_FIELDS = ("title", "conference", "year", "description")

# The site's own reading of the 201 published tasks into the paper's nine
# topics (the paper publishes counts, not a per-task list).
SHIPPED_TOPICS_CSV = Path(__file__).resolve().parent / "data" / "task_topics.csv"


def task_topics_default_apply(*, csv_path: Path = SHIPPED_TOPICS_CSV) -> int:
    """Give every task without a topic the one the shipped classification
    names; a topic already set (by an organiser in the admin, or by
    `import_tasks --topics`) is kept. Returns how many tasks got one."""
    topics, errors = topics_csv_parse(csv_path)
    if errors:
        raise TaskImportError(errors)
    updated = 0
    with transaction.atomic():
        for topic in sorted(set(topics.values()) - {""}):
            slugs = [slug for slug, value in topics.items() if value == topic]
            updated += Task.objects.filter(slug__in=slugs, topic="").update(topic=topic)
    return updated


def tasks_import(
    *, path: Path, topics_csv: Path | None = None, skip_invalid: bool = False
) -> TaskImportReport:
    """Import every task file under `path`, all or nothing.

    Every file is validated before anything is written. With `skip_invalid`
    the good files are imported and the bad ones reported as skipped.
    Re-importing the same files changes nothing.
    """
    path = Path(path)
    if not path.is_dir():
        raise TaskImportError([f"{path}: not a folder"])
    folder = task_folder_resolve(path)
    parsed, errors = task_folder_parse(folder)
    if errors and not skip_invalid:
        raise TaskImportError([str(error) for error in errors])
    if not parsed and not errors:
        raise TaskImportError([f"{folder}: no task files (<slug>.md) found"])

    topics: dict[str, str] = {}
    if topics_csv is not None:
        topics, topic_errors = topics_csv_parse(Path(topics_csv))
        known = {task.slug for task in parsed} | set(
            Task.objects.filter(slug__in=topics.keys()).values_list("slug", flat=True)
        )
        topic_errors += [
            f"{topics_csv}: no task {slug!r} in the import or the catalogue"
            for slug in sorted(topics.keys() - known)
        ]
        if topic_errors:
            raise TaskImportError(topic_errors)

    report = TaskImportReport(skipped=errors)
    with transaction.atomic():
        _tasks_upsert(parsed, topics, report)
        if report.created or report.updated:
            results_changed(None)  # catalogue tasks: every stage's news
    return report


def _tasks_upsert(
    parsed: list[ParsedTask], topics: dict[str, str], report: TaskImportReport
) -> None:
    wanted = {item.slug: {name: getattr(item, name) for name in _SYNCED_FIELDS} for item in parsed}
    # A topics file may also name tasks already in the catalogue but not in
    # this folder: those get their topic and nothing else.
    for slug, topic in topics.items():
        wanted.setdefault(slug, {})["topic"] = topic
    existing = {
        task.slug: task for task in Task.objects.select_for_update().filter(slug__in=wanted)
    }
    to_create: list[Task] = []
    to_update: list[tuple[Task, list[str]]] = []
    for slug, values in wanted.items():
        task = existing.get(slug)
        if task is None:
            task = Task(slug=slug, kind=TaskKind.OPEN_ENDED, **values)
            task_description_derive(task)
            to_create.append(task)
            continue
        changed = [name for name, value in values.items() if getattr(task, name) != value]
        if changed:
            for name in changed:
                setattr(task, name, values[name])
            if "description" in changed or "title" in changed:
                task_description_derive(task)
                changed += ["description_html", "description_html_sha256"]
            to_update.append((task, changed))
        else:
            report.unchanged += 1
    Task.objects.bulk_create(to_create)
    for task, changed in to_update:
        task.save(update_fields=[*changed, "updated_at"])
    report.created += len(to_create)
    report.updated += len(to_update)
