"""The experiments' check of a method archive at intake (see
`SUBMISSION_INTAKE_CHECKS`): a method is uploaded to an objective task only; on
an MLRC-Bench task, the archive holds methods/ and names a method the task
knows, and changes no read-only file."""

from __future__ import annotations

from pathlib import Path

from benchmark.models import Task
from submissions.models import Stage

from . import mlrc
from .models import ObjectiveTask

READ_MAX_BYTES = 64 * 1024


def method_archive_problem(*, task: Task, stage: str, folder: Path, paths: list[str]) -> str | None:
    """Why a method archive cannot run on the task (None when it can)."""
    if stage != Stage.METHOD:
        return None
    objective = ObjectiveTask.objects.filter(task=task).first()
    if objective is None:
        # An open-ended task has nothing to run a method against nor a score to give.
        return (
            f"the method stage is for objective tasks; {task.slug} is an open-ended task "
            "(its stages: idea, proposal, experiment, paper, end2end)"
        )
    if not objective.is_mlrc:
        return None
    problems = mlrc.archive_problems(paths=paths, patterns=list(objective.read_only_files or []))

    def read(path: str) -> bytes | None:
        try:
            with (folder / path).open("rb") as handle:
                return handle.read(READ_MAX_BYTES)
        except OSError:
            return None

    task_init = Path(objective.dev_data_dir) / mlrc.METHODS_FOLDER / "__init__.py"
    choice = mlrc.method_choose(
        paths=paths,
        read=read,
        task_init=task_init.read_text(encoding="utf-8") if task_init.is_file() else "",
        baseline=objective.baseline_method,
    )
    if choice.problem:
        problems.append(choice.problem)
    return "; ".join(problems) or None
