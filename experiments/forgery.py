"""The forged-label check of an MLRC-Bench task: does its `get_score` read labels
from files the method itself writes?

MLRC-Bench's depth-estimation task, for one, writes the ground truth beside the
prediction in the method's output and scores from there: a method that
rewrites those columns scores what it likes. The check runs the task's own
baseline on dev once (the method step, as a run does), then the task's
`get_score` twice on fresh copies of the task with the labels: once on the
baseline's output as written, once with its label-like columns altered. A
score that follows the alteration is forgeable. Label-like columns: those the
task's label files name (less the keys its inputs share with them, such as an
id) and those named as labels usually are (label, target, true, gt, ...).

Run at import (`objective_task import-mlrc`) and on demand
(`objective_task check-scoring SLUG`); the outcome is kept on the task
(`scoring_forgeable`: true, false, or null when it could not run, and
`scoring_check`: what it found, in words). The score of the baseline's output
as written is the task's dev baseline when the organiser gave none.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

import sandbox
from experiments.models import ObjectiveTask

from . import mlrc
from .environments import run_environment
from .errors import ExperimentRefused
from .slots import HostTooSmall, SlotsBusy, slots_acquire

logger = logging.getLogger(__name__)

# Column names that hold labels in most tasks' files (lowercase, and as a word of
# a longer name: gt_depth, true_label).
LABEL_WORDS = frozenset(
    {"label", "labels", "target", "targets", "true", "truth", "gt", "groundtruth", "answer"}
)
LABEL_NAMES = frozenset({"ground_truth", "y_true", "annotation", "annotations"})
# Columns that join a prediction to its label are keys, not labels.
KEY_RE = re.compile(r"(^|_)(id|ids|key|index|idx)$|^unnamed: ?\d+$", re.IGNORECASE)
TABLE_SUFFIXES = (".csv", ".tsv")
READ_MAX_BYTES = 64 * 1024 * 1024
CHECK_LOG_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ScoringCheck:
    forgeable: bool | None
    summary: str
    score_as_written: float | None = None
    score_altered: float | None = None


def _header(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            dialect = "excel-tab" if path.suffix == ".tsv" else "excel"
            return next(csv.reader(handle, dialect=dialect), [])
    except OSError:
        return []


def _tables(root: Path) -> list[str]:
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.lower().endswith(TABLE_SUFFIXES):
                found.append((Path(folder) / name).relative_to(root).as_posix())
    return sorted(found)


def label_columns(env_dir: Path, label_patterns: list[str]) -> set[str]:
    """The names of the task's label columns: the columns of its label files less
    those its other tables also have (keys such as an id or a locale)."""
    tables = _tables(env_dir)
    labelled = [t for t in tables if mlrc.read_only_match(t, label_patterns) is not None]
    label_names = {name for table in labelled for name in _header(env_dir / table)}
    shared = {
        name for table in tables if table not in labelled for name in _header(env_dir / table)
    }
    return {name for name in label_names - shared if name and not KEY_RE.search(name)}


def label_like(name: str, task_labels: set[str]) -> bool:
    lower = name.strip().lower()
    if not lower or KEY_RE.search(lower):
        return False
    words = set(re.split(r"[^a-z0-9]+", lower))
    return name in task_labels or lower in LABEL_NAMES or bool(words & LABEL_WORDS)


def _altered(values: list[str]) -> list[str]:
    """Other values of the same kind: numbers reversed and moved by one, text
    reversed in order (a column of one repeated text gets a mark)."""
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        changed = list(reversed(values))
        return changed if changed != values else [f"{v}#forged" for v in values]
    integral = all(n.is_integer() for n in numbers)
    moved = [n + 1 for n in reversed(numbers)]
    return [str(int(n)) if integral else repr(n) for n in moved]


def table_alter(path: Path, task_labels: set[str]) -> list[str]:
    """Alter the label-like columns of one output table in place; their names."""
    dialect = "excel-tab" if path.suffix == ".tsv" else "excel"
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        rows = list(csv.reader(handle, dialect=dialect))
    if len(rows) < 2:
        return []
    header, body = rows[0], rows[1:]
    columns = [i for i, name in enumerate(header) if label_like(name, task_labels)]
    for index in columns:
        values = [row[index] if index < len(row) else "" for row in body]
        for row, value in zip(body, _altered(values), strict=True):
            if index < len(row):
                row[index] = value
    if columns:
        out = io.StringIO()
        csv.writer(out, dialect=dialect).writerows([header, *body])
        path.write_text(out.getvalue(), encoding="utf-8")
    return [header[i] for i in columns]


class _Log:
    """The check's sandbox output, kept in memory for its tail (bounded)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes, /) -> int:
        room = CHECK_LOG_MAX_BYTES - len(self.data)
        if room > 0:
            self.data += data[:room]
        return len(data)

    def flush(self) -> None:
        return None

    def tail(self) -> str:
        return mlrc.log_tail(self.data.decode("utf-8", errors="replace"))


@dataclass
class _Check:
    objective: ObjectiveTask
    root: Path
    uid: int | None
    gpus: list[int]
    mounts: list[sandbox.Mount]
    env: dict[str, str]
    log: _Log

    def run(
        self, command: str, workdir: Path, *, read_only: list[str], method_step: bool = False
    ) -> sandbox.SandboxResult:
        """`command` in env/ of `workdir` (MLRC-Bench's layout: scripts/ beside it);
        a scoring step with scripts/ and `read_only` (paths under env/) not to be
        written, the method's step with nothing read-only (as a run's)."""
        spec = sandbox.SandboxSpec(
            command=command,
            workdir=workdir,
            cwd=f"{sandbox.INSIDE_WORKDIR}/{mlrc.ENV_FOLDER}",
            limits=sandbox.Limits(
                wall_seconds=self.objective.time_limit_seconds,
                memory_bytes=settings.SANDBOX_MEMORY_BYTES,
                processes=settings.SANDBOX_PROCESSES,
                disk_bytes=settings.SANDBOX_DISK_BYTES + _size(workdir),
            ),
            mounts=[*self.mounts, *(sandbox.Mount(Path(p), p) for p in settings.SANDBOX_RO_PATHS)],
            env=self.env,
            gpus=self.gpus,
            uid=self.uid,
            cgroups=settings.SANDBOX_CGROUPS,
            scratch=self.root,
            read_only=[]
            if method_step
            else [mlrc.SCRIPTS_FOLDER, *(f"{mlrc.ENV_FOLDER}/{p}" for p in read_only)],
        )
        self.log.write(f"$ {command}\n".encode())
        return sandbox.sandbox_run(spec, log=self.log, env_passthrough=_passthrough())

    def prepared(self, work: Path, *, with_labels: bool) -> None:
        copy = mlrc.TaskCopy(
            env_dir=Path(self.objective.dev_data_dir),
            patterns=list(self.objective.read_only_files or []),
            labels=list(self.objective.label_files or []),
        )
        mlrc.work_prepare(task=copy, method_files=[], work=work, with_labels=with_labels)
        self._own(work)

    def _own(self, folder: Path) -> None:
        for current, dirs, files in os.walk(folder):
            os.chmod(current, 0o755)
            for name in files:
                os.chmod(os.path.join(current, name), 0o644)
            if self.uid is not None:
                os.chown(current, self.uid, self.uid)
                for name in dirs + files:
                    os.chown(os.path.join(current, name), self.uid, self.uid, follow_symlinks=False)

    def score(self, name: str, method_output: Path) -> tuple[float | None, str]:
        """get_score on a fresh copy of the task (labels included) with these outputs."""
        work = self.root / name
        work.mkdir()
        self.prepared(work, with_labels=True)
        env = work / mlrc.ENV_FOLDER
        mlrc.outputs_copy(method_output, env / "output", _read)
        self._own(work)
        patterns = [*(self.objective.read_only_files or []), *(self.objective.label_files or [])]
        command = mlrc.SCORE_STEP.format(method=self.objective.baseline_method, phase="dev")
        result = self.run(command, work, read_only=mlrc.read_only_paths(env, patterns))
        if result.outcome != sandbox.Outcome.SUCCEEDED:
            return None, f"get_score failed ({result.reason or result.outcome})"
        evaluation = mlrc.evaluation_read(_read(env / mlrc.EVALS_FILE, 1 << 20), "dev")
        return evaluation.score, evaluation.problem


def _passthrough() -> dict[str, str]:
    return {name: os.environ[name] for name in settings.SANDBOX_ENV_ALLOW if name in os.environ}


def _read(path: Path, max_bytes: int) -> bytes | None:
    if path.is_symlink() or not path.is_file():
        return None
    with path.open("rb") as handle:
        return handle.read(min(max_bytes, READ_MAX_BYTES))


def _size(folder: Path) -> int:
    return sum(
        (Path(current) / name).stat().st_size
        for current, _, files in os.walk(folder)
        for name in files
        if not (Path(current) / name).is_symlink()
    )


def _environment(objective: ObjectiveTask, root: Path) -> tuple[list[sandbox.Mount], dict]:
    """The task version's environment and MLRC-Bench's stand-in, as a run gets them."""
    environment = run_environment(objective, objective.version)
    path = _passthrough().get("PATH", sandbox.SANDBOX_PATH)
    mounts = []
    if environment is not None:
        python = environment.python
        mounts.append(sandbox.Mount(Path(environment.path), environment.path))
        path = f"{environment.path}/bin:{path}"
    else:
        python = shutil.which("python3", path=path) or "/usr/bin/python3"
    shim = mlrc.shim_install(root / "mlrc", python)
    mounts.append(sandbox.Mount(shim, mlrc.SHIM_INSIDE))
    env = {
        "PYTHONPATH": mlrc.SHIM_INSIDE,
        "PATH": f"{path}:{mlrc.SHIM_INSIDE}/bin",
        "MLRC_TASK": objective.task.slug,
        "MLRC_BASELINE_SCORE": repr(objective.dev_baseline_score or objective.baseline_score),
        "MLRC_HUMAN_SCORE": repr(objective.human_score),
        "MLRC_BASELINE_RUNTIME": repr(objective.baseline_runtime_seconds or ""),
        "MLRC_BASELINE_METHOD": objective.baseline_method,
        "EXPERIMENT_PHASE": "dev",
    }
    return mounts, env


def _verdict(check: _Check, work: Path) -> ScoringCheck:
    output = work / mlrc.ENV_FOLDER / "output"
    as_written, problem = check.score("score-as-written", output)
    if as_written is None:
        return ScoringCheck(None, f"not checked: the baseline's output gave no score ({problem})")
    task_labels = label_columns(Path(check.objective.dev_data_dir), check.objective.label_files)
    altered: dict[str, list[str]] = {}
    for table in _tables(output):
        columns = table_alter(output / table, task_labels)
        if columns:
            altered[f"output/{table}"] = columns
    if not altered:
        tables = ", ".join(f"output/{t}" for t in _tables(output)) or "no table"
        return ScoringCheck(
            False,
            f"not forgeable: the baseline's output ({tables}) has no label-like column "
            f"(scored {as_written:g})",
            as_written,
        )
    named = "; ".join(f"{table}: {', '.join(cols)}" for table, cols in altered.items())
    score, problem = check.score("score-altered", output)
    if score is not None and score == as_written:
        return ScoringCheck(
            False,
            f"not forgeable: get_score gave {as_written:g} both for the baseline's output as "
            f"written and with its label-like columns altered ({named})",
            as_written,
            score,
        )
    after = f"{score:g}" if score is not None else f"no score ({problem})"
    return ScoringCheck(
        True,
        f"forgeable: get_score reads labels from the method's own output: the baseline's "
        f"output scored {as_written:g} as written and {after} with its label-like columns "
        f"altered ({named}); a method that rewrites them chooses its score",
        as_written,
        score,
    )


def scoring_check_run(objective: ObjectiveTask) -> ScoringCheck:
    """Run the check (a sandboxed baseline run on dev and two scorings); no writes."""
    if not objective.is_mlrc or not Path(objective.dev_data_dir).is_dir():
        return ScoringCheck(None, "not checked: the task has no MLRC-Bench env/ copy to run")
    root = Path(settings.EXPERIMENT_WORK_ROOT) / "checks" / secrets.token_hex(6)
    root.mkdir(parents=True)
    os.chmod(root.parent, 0o755)
    os.chmod(root, 0o755)
    log = _Log()
    try:
        mounts, env = _environment(objective, root)
        with slots_acquire(gpus=objective.gpu_count, wait_seconds=60) as slots:
            uid = slots.uid if os.geteuid() == 0 else None
            check = _Check(objective, root, uid, slots.gpus, mounts, env, log)
            work = root / "work"
            work.mkdir()
            check.prepared(work, with_labels=False)
            command = mlrc.METHOD_STEP.format(method=objective.baseline_method, phase="dev")
            # As a run's method step: nothing read-only (the task's code may write
            # where it writes, model_dir_NN/); the scoring steps run on fresh copies.
            result = check.run(command, work, read_only=[], method_step=True)
            if result.outcome != sandbox.Outcome.SUCCEEDED:
                return ScoringCheck(
                    None,
                    f"not checked: the baseline ({objective.baseline_method}) did not run on "
                    f"dev ({result.reason or result.outcome}); its log ends:\n{log.tail()}",
                )
            verdict = _verdict(check, work)
    except (ExperimentRefused, HostTooSmall, SlotsBusy, sandbox.SandboxError) as exc:
        return ScoringCheck(None, f"not checked: {exc}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if verdict.forgeable is None:
        return ScoringCheck(None, f"{verdict.summary}; the log ends:\n{log.tail()}")
    return verdict


def objective_scoring_check(*, objective: ObjectiveTask) -> ScoringCheck:
    """Run the forged-label check on the task's current version and keep what it
    found on the task (and the baseline's dev score as its dev baseline, when
    the organiser gave none)."""
    check = scoring_check_run(objective)
    objective.scoring_forgeable = check.forgeable
    objective.scoring_check = f"version {objective.version}: {check.summary}"
    fields = ["scoring_forgeable", "scoring_check", "updated_at"]
    if objective.dev_baseline_score is None and check.score_as_written is not None:
        objective.dev_baseline_score = check.score_as_written
        fields.append("dev_baseline_score")
    objective.save(update_fields=fields)
    logger.info("scoring check of %s: %s", objective.task.slug, objective.scoring_check)
    return check
