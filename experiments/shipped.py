"""Install the objective tasks that ship with the site (`benchmark/objective_tasks/`)
and, optionally, their example methods as agent submissions.

Each shipped task is a folder with `task.json` (metric, direction, baseline
and human scores, commands), `README.md` (the task as markdown),
`generate_data.py` (writes dev/ and test/ with public/ and private/ halves),
`evaluate.py` and `methods/<name>/` (code with a run.sh).
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

from benchmark.models import (
    Agent,
    Artifact,
    ArtifactKind,
    Stage,
    Submission,
    SubmissionSource,
    SubmissionStatus,
    Team,
)
from experiments.models import ExperimentPhase, ObjectiveResult, ObjectiveTask

from .objective_tasks import objective_task_define
from .queue import experiment_queue, objective_test_queue
from .selectors import objective_best_dev_run

SHIPPED_ROOT = Path(__file__).resolve().parent / "shipped_tasks"
EXAMPLES_TEAM = ("MLR-Bench site examples", "mlr-bench-site-examples")


@dataclass
class InstallReport:
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    objectives: list[ObjectiveTask] = field(default_factory=list)

    def add(self, label: str, n: int = 1) -> None:
        self.counts[label] = self.counts.get(label, 0) + n


def shipped_task_folders() -> list[Path]:
    return sorted(path.parent for path in SHIPPED_ROOT.glob("*/task.json"))


def _readable_tree(root: Path) -> None:
    """The sandbox user mounts these folders, so they must be readable by others."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


def _data_install(folder: Path, target: Path) -> bool:
    """Generate the task's data into `target` unless the same generator already did."""
    generator = folder / "generate_data.py"
    stamp = hashlib.sha256(generator.read_bytes()).hexdigest()
    stamp_file = target / ".generated-by"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    # The organiser's own generator, not submitted code: it runs unsandboxed.
    subprocess.run([sys.executable, str(generator), str(staging)], check=True, timeout=600)
    (staging / "eval").mkdir()
    shutil.copy2(folder / "evaluate.py", staging / "eval" / "evaluate.py")
    (staging / ".generated-by").write_text(stamp)
    _readable_tree(staging)
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
    # The sandbox user mounts the data from here (the folders above it must let
    # others in too; the sandbox names the one that does not).
    os.chmod(root, 0o755)
    for folder in shipped_task_folders():
        spec = json.loads((folder / "task.json").read_text())
        target = root / spec["slug"]
        if _data_install(folder, target):
            report.add("data generated")
        objective, created = objective_task_define(
            slug=spec["slug"],
            title=spec["title"],
            description=(folder / "README.md").read_text(encoding="utf-8"),
            metric=spec["metric"],
            higher_is_better=spec["higher_is_better"],
            baseline_score=spec["baseline_score"],
            human_score=spec["human_score"],
            eval_command=spec["eval_command"],
            eval_dir=target / "eval",
            dev_data_dir=target / "dev",
            test_data_dir=target / "test",
            method_command=spec.get("method_command", "sh run.sh"),
            time_limit_seconds=spec.get("time_limit_seconds", 600),
            gpu_count=spec.get("gpu_count", 0),
        )
        report.add("objective tasks created" if created else "objective tasks unchanged")
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
                kind=ArtifactKind.CODE,
                path=path,
                size=len(content),
                sha256=hashlib.sha256(content).hexdigest(),
            )
            artifact.file.save(
                f"submissions/{submission.pk}/{path}", ContentFile(content), save=False
            )
            artifact.save()
    return submission, True


def _examples_run(objective: ObjectiveTask, folder: Path, examples: dict, report: InstallReport):
    from experiments.sandbox import sandbox_problem

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
        if ObjectiveResult.objects.filter(objective=objective, agent=agent).exists():
            continue
        if objective_best_dev_run(agent_id=agent.pk, objective=objective) is not None:
            objective_test_queue(agent=agent, objective=objective)
            report.add("example test runs queued")
