"""Defining objective tasks (MLRC-Bench style): metric, baseline, top human,
dev and test data, the evaluation program."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from django.db import transaction

from benchmark.models import (
    TASK_SLUG_PATTERN,
    Task,
    TaskKind,
)
from experiments.models import (
    ObjectiveTask,
)

from .errors import ExperimentRefused, ObjectiveTaskInvalid
from .queue import gpu_check

logger = logging.getLogger(__name__)


_SLUG_RE = re.compile(TASK_SLUG_PATTERN)


def objective_task_define(
    *,
    slug: str,
    metric: str,
    higher_is_better: bool,
    baseline_score: float,
    human_score: float,
    eval_command: str,
    dev_data_dir: Path,
    test_data_dir: Path,
    eval_dir: Path | None = None,
    title: str | None = None,
    description: str | None = None,
    method_command: str = "sh run.sh",
    time_limit_seconds: int = 600,
    gpu_count: int = 0,
) -> tuple[ObjectiveTask, bool]:
    """Create or update an objective task (and its catalogue task); returns (it, created).

    Each data folder must hold `public/` (seen by the method) and `private/`
    (seen by the evaluation only); dev and test must be different folders.
    """
    match = _SLUG_RE.match(slug)
    problems = [] if match else [f"slug {slug!r} is not <iclr|icml|neurips><year>_<name>"]
    problems += _definition_problems(
        metric=metric,
        higher_is_better=higher_is_better,
        baseline_score=baseline_score,
        human_score=human_score,
        eval_command=eval_command,
    )
    problems += _folder_problems(
        dev_data_dir=Path(dev_data_dir), test_data_dir=Path(test_data_dir), eval_dir=eval_dir
    )
    if gpu_count:
        try:
            gpu_check(gpu_count)
        except ExperimentRefused as exc:
            problems.append(str(exc))
    if problems:
        raise ObjectiveTaskInvalid(problems)
    assert match is not None  # a bad slug is among the problems above
    conference, year = match.group(1), int(match.group(2))
    with transaction.atomic():
        task = _catalogue_task_put(
            slug=slug, conference=conference, year=year, title=title, description=description
        )
        objective, created = ObjectiveTask.objects.update_or_create(
            task=task,
            defaults={
                "metric": metric.strip(),
                "higher_is_better": higher_is_better,
                "baseline_score": baseline_score,
                "human_score": human_score,
                "eval_command": eval_command.strip(),
                "eval_dir": str(Path(eval_dir).resolve()) if eval_dir else "",
                "dev_data_dir": str(Path(dev_data_dir).resolve()),
                "test_data_dir": str(Path(test_data_dir).resolve()),
                "method_command": method_command,
                "time_limit_seconds": time_limit_seconds,
                "gpu_count": gpu_count,
            },
        )
    return objective, created


def _definition_problems(
    *,
    metric: str,
    higher_is_better: bool,
    baseline_score: float,
    human_score: float,
    eval_command: str,
) -> list[str]:
    problems = []
    if not metric.strip():
        problems.append("the metric needs a name")
    if not eval_command.strip():
        problems.append("the evaluation command is empty")
    if human_score == baseline_score or (human_score > baseline_score) != higher_is_better:
        direction = "higher" if higher_is_better else "lower"
        problems.append(
            f"the human score ({human_score:g}) must be better than the baseline "
            f"({baseline_score:g}); {direction} is better for {metric}"
        )
    return problems


def _folder_problems(
    *, dev_data_dir: Path, test_data_dir: Path, eval_dir: Path | None
) -> list[str]:
    problems = []
    for label, folder in {"dev data": dev_data_dir, "test data": test_data_dir}.items():
        for half in ("public", "private"):
            if not (folder / half).is_dir():
                problems.append(f"the {label} folder {folder} has no {half}/ folder")
    if dev_data_dir.resolve() == test_data_dir.resolve():
        problems.append("the dev and test data must be different folders")
    if eval_dir is not None and not Path(eval_dir).is_dir():
        problems.append(f"the evaluation folder {eval_dir} does not exist")
    return problems


def _catalogue_task_put(
    *, slug: str, conference: str, year: int, title: str | None, description: str | None
) -> Task:
    """The catalogue task behind an objective task, created or brought up to date."""
    task, _ = Task.objects.get_or_create(
        slug=slug,
        defaults={
            "title": title or slug,
            "conference": conference,
            "year": year,
            "description": description or f"# {title or slug}\n",
            "kind": TaskKind.OBJECTIVE,
        },
    )
    changed = []
    for field_name, value in (
        ("title", title),
        ("description", description),
        ("kind", TaskKind.OBJECTIVE),
    ):
        if value is not None and getattr(task, field_name) != value:
            setattr(task, field_name, value)
            changed.append(field_name)
    if changed:
        task.save(update_fields=[*changed, "updated_at"])
    return task
