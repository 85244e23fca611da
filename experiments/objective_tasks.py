"""Defining objective tasks (MLRC-Bench style): metric, baseline, top human,
dev and test data, the evaluation program."""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from django.conf import settings
from django.db import transaction

from benchmark.models import (
    OBJECTIVE_SLUG_PATTERN,
    Task,
    TaskKind,
)
from common.results import results_changed
from experiments.models import (
    ObjectiveFormat,
    ObjectiveTask,
    TestFolder,
    TestPhase,
)

from . import mlrc
from .environments import (
    EnvironmentFile,
    Progress,
    environment_build,
    environment_file_read,
    interpreter_for,
)
from .errors import EnvironmentInvalid, ExperimentRefused, ObjectiveTaskInvalid
from .queue import gpu_check

logger = logging.getLogger(__name__)


_SLUG_RE = re.compile(OBJECTIVE_SLUG_PATTERN)
SLUG_RULE = "<venue><year>_<name> (a lowercase venue: neurips2024_x, kdd2023_y)"


def _slug_problems(slug: str) -> list[str]:
    return [] if _SLUG_RE.match(slug) else [f"slug {slug!r} is not {SLUG_RULE}"]


def _range_of(
    metric: str, metric_min: float | None, metric_max: float | None
) -> tuple[float | None, float | None]:
    """The metric's range as given, else as the metric's name implies (RMSE >= 0)."""
    known_min, known_max = mlrc.metric_range(metric)
    return (
        known_min if metric_min is None else metric_min,
        known_max if metric_max is None else metric_max,
    )


def _range_problems(
    low: float | None, high: float | None, baseline: float, human: float
) -> list[str]:
    if low is not None and high is not None and not low < high:
        return [f"the metric's range is empty ({low:g} to {high:g})"]
    problems = []
    for label, score in (("baseline", baseline), ("human", human)):
        problem = mlrc.score_range_problem(score, low, high, "score")
        if problem:
            problems.append(f"the {label} score is outside the metric's range: {problem}")
    return problems


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
    metric_min: float | None = None,
    metric_max: float | None = None,
) -> tuple[ObjectiveTask, bool]:
    """Create or update an objective task (and its catalogue task); returns (it, created).

    Each data folder must hold `public/` (seen by the method) and `private/`
    (seen by the evaluation only); dev and test must be different folders.

    Long because every field is checked, naming each problem, before the one write."""
    match = _SLUG_RE.match(slug)
    problems = _slug_problems(slug)
    problems += _definition_problems(
        metric=metric,
        higher_is_better=higher_is_better,
        baseline_score=baseline_score,
        human_score=human_score,
    )
    low, high = _range_of(metric, metric_min, metric_max)
    problems += _range_problems(low, high, baseline_score, human_score)
    if not eval_command.strip():
        problems.append("the evaluation command is empty")
    problems += _folder_problems(
        dev_data_dir=Path(dev_data_dir), test_data_dir=Path(test_data_dir), eval_dir=eval_dir
    )
    problems += _gpu_problems(gpu_count)
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
                "metric_min": low,
                "metric_max": high,
            },
        )
    return objective, created


def _gpu_problems(gpu_count: int) -> list[str]:
    if not gpu_count:
        return []
    try:
        gpu_check(gpu_count)
    except ExperimentRefused as exc:
        return [str(exc)]
    return []


def _definition_problems(
    *,
    metric: str,
    higher_is_better: bool,
    baseline_score: float,
    human_score: float,
) -> list[str]:
    problems = []
    if not metric.strip():
        problems.append("the metric needs a name")
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
    task, created = Task.objects.get_or_create(
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
    if created or changed:
        results_changed(None)  # a catalogue task: every stage's news
    return task


class ImportOutcome(StrEnum):
    CREATED = "created"
    NEW_VERSION = "new version"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class ImportNotes:
    """What an import says besides its outcome: where each part came from, the
    conda names it renamed, the Python it asked for, the test phase's folder."""

    sources: dict[str, str]
    renamed: list[tuple[str, str]]
    python_note: str
    test_folder: str
    dev_test_data: str  # what the dev phase has of scripts/test_data/, and why


def _environment_of(spec: mlrc.TaskSpec | None, problems: list[str]):
    if spec is None or spec.environment is None:
        return EnvironmentFile()
    try:
        return environment_file_read(*spec.environment)
    except EnvironmentInvalid as exc:
        problems.extend(exc.problems)
        return EnvironmentFile()


def objective_task_import_mlrc(
    *,
    path: Path,
    slug: str,
    metric: str,
    higher_is_better: bool,
    baseline_score: float,
    human_score: float,
    baseline_runtime_seconds: float | None = None,
    title: str | None = None,
    time_limit_seconds: int = 600,
    gpu_count: int = 0,
    data_root: Path | None = None,
    labels: list[str] | None = None,
    metric_min: float | None = None,
    metric_max: float | None = None,
    test_phase: str = TestPhase.LOCAL,
    dev_baseline_score: float | None = None,
    test_folder: str = TestFolder.FRESH,
    research_problem: Path | None = None,
    read_only: list[str] | None = None,
    requirements: Path | None = None,
    dev_test_data: str = "auto",
    build_env: bool = False,
    progress: Progress | None = None,
) -> tuple[ObjectiveTask, ImportOutcome, ImportNotes]:
    """Import an MLRC-Bench task folder as it is published (see experiments/mlrc.py).

    The statement comes from scripts/research_problem.txt (else
    `research_problem`, else the folder's README); the read-only list and the
    environment file from scripts/ or the organiser (`read_only`,
    `requirements`). env/, scripts/ and scripts/test_data/ are copied into the
    data root as this task version's, the test data apart, so a dev run is
    never given it in data/. The same folder again changes nothing; a changed
    folder becomes the next version. A task whose test phase is `external`
    (scored elsewhere) needs no scripts/test_data/. With `build_env`, the
    environment is built first: one that cannot be built imports nothing.
    `dev_baseline_score`: the baseline's dev score (MLRC-Bench's
    `ALL_BASE_PERFORMANCE[task]["dev"]`); a new version's forged-label check is
    to be run again (`forgery.objective_scoring_check`).

    Long because the folder's parts are checked in the order MLRC-Bench publishes them, each problem
    named, before the one write."""
    path = Path(path)
    match = _SLUG_RE.match(slug)
    problems = _slug_problems(slug)
    if test_phase not in TestPhase.values:
        problems.append(f"the test phase must be one of {', '.join(TestPhase.values)}")
    if test_folder not in TestFolder.values:
        problems.append(f"the test folder must be one of {', '.join(TestFolder.values)}")
    if dev_test_data not in mlrc.DEV_TEST_DATA_CHOICES:
        choices = ", ".join(mlrc.DEV_TEST_DATA_CHOICES)
        problems.append(f"--dev-test-data must be one of {choices}")
    problems += _definition_problems(
        metric=metric,
        higher_is_better=higher_is_better,
        baseline_score=baseline_score,
        human_score=human_score,
    )
    if dev_baseline_score is not None and not math.isfinite(dev_baseline_score):
        problems.append("the dev baseline score must be a finite number")
    if baseline_runtime_seconds is not None and not baseline_runtime_seconds > 0:
        problems.append("the baseline's runtime must be a positive number of seconds")
    low, high = _range_of(metric, metric_min, metric_max)
    problems += _range_problems(low, high, baseline_score, human_score)
    spec, missing = mlrc.task_spec(
        path,
        research_problem=research_problem,
        read_only=read_only,
        requirements=requirements,
        test_phase_local=test_phase != TestPhase.EXTERNAL,
    )
    problems += missing
    environment = _environment_of(spec, problems)
    problems += _gpu_problems(gpu_count)
    existing = ObjectiveTask.objects.select_related("task").filter(task__slug=slug).first()
    if existing is not None and not existing.is_mlrc:
        problems.append(f"{slug} is an objective task of the site's own format, not MLRC-Bench's")
    if problems:
        raise ObjectiveTaskInvalid(problems)
    assert match is not None and spec is not None  # else among the problems above
    if build_env:
        try:
            environment_build(
                requirements=environment.requirements,
                python=environment.python,
                progress=progress,
            )
        except (EnvironmentInvalid, ExperimentRefused) as exc:
            raise ObjectiveTaskInvalid(
                [f"the environment cannot be built: {p}" for p in _problems_of(exc)]
            ) from exc
    dev_sees_test_data, dev_test_data_note = _dev_test_data(path, dev_test_data)
    digest = mlrc.folder_digest(spec)
    version = _version_for(existing, digest)
    target = Path(data_root or settings.EXPERIMENT_DATA_ROOT) / slug / f"v{version}"
    if existing is None or version != existing.version or not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        mlrc.snapshot_write(
            spec, target, environment=environment.requirements, python=environment.python
        )
    fields = {
        "format": ObjectiveFormat.MLRC,
        "metric": metric.strip(),
        "higher_is_better": higher_is_better,
        "baseline_score": baseline_score,
        "human_score": human_score,
        "baseline_runtime_seconds": baseline_runtime_seconds,
        "method_command": mlrc.COMMAND,
        "eval_command": "",
        "eval_dir": "",
        "dev_data_dir": str((target / "env").resolve()),
        "test_data_dir": str((target / "test_data").resolve()),
        "time_limit_seconds": time_limit_seconds,
        "gpu_count": gpu_count,
        "version": version,
        "source_sha256": digest,
        "read_only_files": mlrc.read_only_patterns(spec.read_only),
        "label_files": list(labels or mlrc.DEFAULT_LABEL_PATTERNS),
        "metric_min": low,
        "metric_max": high,
        "test_phase": test_phase,
        "test_folder": test_folder,
        "dev_sees_test_data": dev_sees_test_data,
        "environment_requirements": environment.requirements,
        "environment_python": environment.python,
    }
    fields |= _scoring_fields(existing, version, dev_baseline_score)
    objective, outcome = _mlrc_put(
        existing,
        slug=slug,
        year=int(match.group(2)),
        conference=match.group(1),
        title=title,
        description=spec.research_problem,
        fields=fields,
    )
    notes = ImportNotes(
        sources=spec.sources,
        renamed=environment.renamed,
        python_note=interpreter_for(environment.python).note,
        test_folder=test_folder,
        dev_test_data=dev_test_data_note,
    )
    return objective, outcome, notes


def _scoring_fields(
    existing: ObjectiveTask | None, version: int, dev_baseline_score: float | None
) -> dict[str, object]:
    """The dev baseline the organiser gave, and a new version's forged-label
    check to be run again (the check was of the folder as it was)."""
    fields: dict[str, object] = {}
    if dev_baseline_score is not None:
        fields["dev_baseline_score"] = dev_baseline_score
    if existing is not None and version != existing.version:
        fields |= {"scoring_forgeable": None, "scoring_check": ""}
    return fields


def _dev_test_data(path: Path, choice: str) -> tuple[bool, str]:
    """Whether the dev phase has scripts/test_data/ beside env/, and what the import says."""
    reader = mlrc.reads_scripts_test_data(path)
    if choice == "beside" or (choice == "auto" and reader):
        why = f"{reader} reads it" if reader else "--dev-test-data beside"
        return True, (
            f"../scripts/test_data/ beside env/ in dev too, less its labels, as MLRC-Bench "
            f"lays it out ({why}; --dev-test-data hidden withholds it)"
        )
    why = "--dev-test-data hidden" if choice == "hidden" else "no code under env/ reads it"
    return False, (
        f"../scripts/ beside env/ without test_data/ in dev ({why}; --dev-test-data beside "
        "gives it, less its labels, as MLRC-Bench's launch does)"
    )


def _problems_of(exc: Exception) -> list[str]:
    return list(getattr(exc, "problems", None) or [str(exc)])


def _version_for(existing: ObjectiveTask | None, digest: str) -> int:
    if existing is None:
        return 1
    return existing.version if existing.source_sha256 == digest else existing.version + 1


def _mlrc_put(
    existing: ObjectiveTask | None,
    *,
    slug: str,
    conference: str,
    year: int,
    title: str | None,
    description: str,
    fields: dict[str, object],
) -> tuple[ObjectiveTask, ImportOutcome]:
    with transaction.atomic():
        task = _catalogue_task_put(
            slug=slug, conference=conference, year=year, title=title, description=description
        )
        if existing is None:
            return ObjectiveTask.objects.create(task=task, **fields), ImportOutcome.CREATED
        changed = [name for name, value in fields.items() if getattr(existing, name) != value]
        if not changed:
            return existing, ImportOutcome.UNCHANGED
        outcome = (
            ImportOutcome.NEW_VERSION
            if fields["version"] != existing.version
            else ImportOutcome.UPDATED
        )
        for name in changed:
            setattr(existing, name, fields[name])
        existing.save(update_fields=[*changed, "updated_at"])
    logger.info("objective task %s: %s (version %s)", slug, outcome, existing.version)
    return existing, outcome
