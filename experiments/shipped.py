"""Install the objective tasks that ship with the site (`shipped_tasks/`) and,
optionally, their example methods as agent submissions.

Each shipped task is an MLRC-Bench task folder (env/, scripts/) plus
`task.json` (metric, direction, baseline and human scores, baseline runtime,
example methods) and `examples/<name>/` (method archives: methods/ and
method_name.txt). Installing prepares its data with its own
`scripts/prepare.py` and imports it exactly as `objective_task import-mlrc`
imports any MLRC-Bench task.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Max

from benchmark.models import Agent, Team
from common.results import results_changed
from experiments.models import ExperimentPhase, ObjectiveResult, ObjectiveTask
from submissions.models import Artifact, Stage, Submission, SubmissionSource, SubmissionStatus
from submissions.run_layout import artifact_kind

from .objective_tasks import ImportOutcome, objective_task_import_mlrc
from .queue import experiment_queue, objective_test_queue
from .selectors import objective_best_dev_run

SHIPPED_ROOT = Path(__file__).resolve().parent / "shipped_tasks"
EXAMPLES_TEAM = ("MLR-Bench site examples", "mlr-bench-site-examples")
# What an install copies of a shipped folder: the MLRC-Bench task itself.
TASK_PARTS = ("env", "scripts")
_OUTCOME_LABELS = {
    ImportOutcome.CREATED: "objective tasks created",
    ImportOutcome.NEW_VERSION: "objective tasks updated to a new version",
    ImportOutcome.UPDATED: "objective tasks updated",
    ImportOutcome.UNCHANGED: "objective tasks unchanged",
}


@dataclass
class InstallReport:
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    objectives: list[ObjectiveTask] = field(default_factory=list)

    def add(self, label: str, n: int = 1) -> None:
        self.counts[label] = self.counts.get(label, 0) + n


def shipped_task_folders() -> list[Path]:
    return sorted(path.parent for path in SHIPPED_ROOT.glob("*/task.json"))


def _shipped_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for part in TASK_PARTS:
        for path in sorted((folder / part).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                relative = path.relative_to(folder).as_posix()
                digest.update(
                    relative.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest()
                )
    return digest.hexdigest()


def task_folder_prepare(folder: Path, target: Path) -> bool:
    """The shipped task as an organiser would hold it: its files copied to
    `target` and its data made by its scripts/prepare.py, unless the same
    files already made it there."""
    stamp = _shipped_digest(folder)
    stamp_file = target / ".prepared-from"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    for part in TASK_PARTS:
        shutil.copytree(folder / part, staging / part, ignore=shutil.ignore_patterns("__pycache__"))
    # The organiser's own preparation, not submitted code: it runs unsandboxed.
    subprocess.run(
        [sys.executable, str(staging / "scripts" / "prepare.py"), str(staging)],
        check=True,
        timeout=600,
    )
    (staging / ".prepared-from").write_text(stamp)
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return True


def objective_tasks_install(
    *, data_root: Path | None = None, run_examples: bool = False
) -> InstallReport:
    """Install every shipped objective task (idempotent); with `run_examples`, submit
    their example methods and queue their dev runs, then, for agents whose dev runs
    are done, their one test evaluation."""
    report = InstallReport()
    root = Path(data_root or settings.EXPERIMENT_DATA_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    # The runs copy the task from here (the folders above it must let the
    # sandbox user in too; the sandbox names the one that does not).
    os.chmod(root, 0o755)
    for folder in shipped_task_folders():
        spec = json.loads((folder / "task.json").read_text())
        source = root / ".sources" / spec["slug"]
        if task_folder_prepare(folder, source):
            report.add("data generated")
        objective, outcome, _ = objective_task_import_mlrc(
            path=source,
            slug=spec["slug"],
            title=spec["title"],
            metric=spec["metric"],
            higher_is_better=spec["higher_is_better"],
            baseline_score=spec["baseline_score"],
            human_score=spec["human_score"],
            baseline_runtime_seconds=spec.get("baseline_runtime_seconds"),
            time_limit_seconds=spec.get("time_limit_seconds", 600),
            gpu_count=spec.get("gpu_count", 0),
            data_root=root,
        )
        report.add(_OUTCOME_LABELS[outcome])
        report.objectives.append(objective)
        if run_examples:
            _examples_run(objective, folder, spec.get("examples", {}), report)
    return report


def _files_of(method: Path) -> list[tuple[str, bytes]]:
    return [
        (path.relative_to(method).as_posix(), path.read_bytes())
        for path in sorted(method.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    ]


def example_submission(
    *, objective: ObjectiveTask, agent_name: str, method: Path
) -> tuple[Submission, bool]:
    """The example method as a `method` submission of its own agent (created once)."""
    files = _files_of(method)
    digest = hashlib.sha256()
    for path, content in files:
        digest.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
    sha = digest.hexdigest()
    team, _ = Team.objects.get_or_create(slug=EXAMPLES_TEAM[1], defaults={"name": EXAMPLES_TEAM[0]})
    agent, _ = Agent.objects.get_or_create(
        name=agent_name,
        defaults={
            "team": team,
            "display_name": agent_name.replace("-", " ").capitalize(),
            "description": f"An example method shipped with the site ({method.name}).",
        },
    )
    existing = Submission.objects.filter(
        agent=agent, task=objective.task, stage=Stage.METHOD, archive_sha256=sha
    ).first()
    if existing is not None:
        return existing, False
    with transaction.atomic():
        version = (
            Submission.objects.filter(
                agent=agent, task=objective.task, stage=Stage.METHOD
            ).aggregate(Max("version"))["version__max"]
            or 0
        ) + 1
        submission = Submission.objects.create(
            agent=agent,
            task=objective.task,
            stage=Stage.METHOD,
            version=version,
            source=SubmissionSource.IMPORT,
            archive_sha256=sha,
            status=SubmissionStatus.READY,
        )
        for path, content in files:
            artifact = Artifact(
                submission=submission,
                kind=artifact_kind(path),
                path=path,
                size=len(content),
                sha256=hashlib.sha256(content).hexdigest(),
            )
            artifact.file.save(
                f"submissions/{submission.pk}/{path}", ContentFile(content), save=False
            )
            artifact.save()
        results_changed([Stage.METHOD])
    return submission, True


def _examples_run(objective: ObjectiveTask, folder: Path, examples: dict, report: InstallReport):
    from sandbox import sandbox_problem

    problem = sandbox_problem()
    if problem:
        report.problems.append(f"example runs of {objective.task.slug} skipped: {problem}")
        return
    for agent_name, method in examples.items():
        submission, created = example_submission(
            objective=objective, agent_name=agent_name, method=folder / method
        )
        if created:
            report.add("example submissions created")
        if not submission.experiment_runs.filter(phase=ExperimentPhase.DEV).exists():
            experiment_queue(submission=submission, phase=ExperimentPhase.DEV)
            report.add("example dev runs queued")
        agent = submission.agent
        tested = ObjectiveResult.objects.filter(
            objective=objective, agent=agent, task_version=objective.version
        )
        if tested.exists():
            continue
        if objective_best_dev_run(agent_id=agent.pk, objective=objective, trial=1) is not None:
            objective_test_queue(agent=agent, objective=objective)
            report.add("example test runs queued")
