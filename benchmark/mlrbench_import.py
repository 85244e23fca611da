"""`import_mlrbench` loads a clone of the MLR-Bench repository in parts:
tasks, then agent runs (benchmark), then judge reviews (judging), then human
scores (reviews). Apps that depend on `benchmark` register their part here in
their `AppConfig.ready()`, so the arrows between apps keep pointing one way.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from common.errors import ValidationFailed


class ImportRefused(ValidationFailed):
    """A part cannot run at all (for example a missing folder); the command stops."""


@dataclass
class ImportPartReport:
    """What one part did: counts by label (e.g. `end2end created`), every
    file it could not read, with the reason, and notes: what it chose to leave
    out on purpose (a duplicated row), so the output names each one."""

    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, label: str, n: int = 1) -> None:
        self.counts[label] = self.counts.get(label, 0) + n

    @property
    def changed(self) -> int:
        return sum(n for label, n in self.counts.items() if label.endswith(("created", "updated")))


@dataclass(frozen=True)
class ImportOptions:
    """Options of the command that a part may read (each part documents its own)."""

    # Human scores: refuse a file where one reviewer scores one paper twice
    # (the default keeps the first row of each pair and lists the others).
    strict_human_reviews: bool = False
    progress: Callable[[str], None] = lambda message: None
    # The hallucination check's `LLM` column -> agent names, over the defaults.
    hallucination_agents: dict[str, str] = field(default_factory=dict)


ImportPartFunction = Callable[[Path, ImportOptions], ImportPartReport]


@dataclass(frozen=True)
class ImportPart:
    name: str
    order: int
    run: ImportPartFunction


_PARTS: dict[str, ImportPart] = {}


def import_part_register(*, name: str, order: int, run: ImportPartFunction) -> None:
    _PARTS[name] = ImportPart(name=name, order=order, run=run)


def import_parts() -> list[ImportPart]:
    return sorted(_PARTS.values(), key=lambda part: part.order)


def tasks_part(path: Path, options: ImportOptions) -> ImportPartReport:
    """The first part: every task file; a bad one is listed and the rest imported."""
    from .services import TaskImportError, task_topics_default_apply, tasks_import

    try:
        result = tasks_import(path=path, skip_invalid=True)
    except TaskImportError as exc:
        raise ImportRefused("; ".join(exc.problems)) from exc
    report = ImportPartReport(problems=[str(error) for error in result.skipped])
    report.add("created", result.created)
    report.add("updated", result.updated)
    report.add("unchanged", result.unchanged)
    topics_set = task_topics_default_apply()
    if topics_set:
        report.add("topics set", topics_set)
    return report
