"""Python environments for objective task versions: what a task folder asks
for (scripts/environment.yml's pip list and its conda packages under their
PyPI names, CONDA_TO_PYPI; or scripts/requirements.txt), and building it once
per requirements hash with pip from the package registries, on the host.

A conda file's `python=X.Y` is honoured where the host has `pythonX.Y` on its
PATH (one that runs); otherwise the environment is built with TASK_ENV_PYTHON
and says so (`python_note`). pip reads TASK_ENV_PIP_INDEX_URL and
TASK_ENV_PIP_EXTRA_INDEX_URL (a CPU-only host points torch at CPU wheels).

A run never reaches a registry: it uses the built interpreter, mounted
read-only in the sandbox. Environments live under TASK_ENV_ROOT, one folder
per hash, shared by every version (of any task) with the same requirements.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import yaml
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from experiments.models import EnvironmentStatus, ObjectiveTask, TaskEnvironment

from . import mlrc
from .errors import EnvironmentInvalid, ExperimentRefused

logger = logging.getLogger(__name__)

# Conda packages that are the interpreter or conda's own plumbing, not PyPI
# distributions: never given to pip.
CONDA_ONLY = frozenset(
    {
        "python",
        "pip",
        "setuptools",
        "wheel",
        "conda",
        "cudatoolkit",
        "cudnn",
        "ca-certificates",
        "openssl",
        "certifi",
        "libgcc-ng",
        "libstdcxx-ng",
        "libgomp",
        "ld_impl_linux-64",
        "ncurses",
        "readline",
        "sqlite",
        "tk",
        "xz",
        "zlib",
        "bzip2",
        "libffi",
        "tzdata",
        "mkl",
        "blas",
        "nomkl",
    }
)
# conda's names for packages PyPI knows under another name (MLRC-Bench's task
# environments are conda files). Names absent here are the same on both sides
# (numpy, pandas, scikit-learn, pytorch-lightning, ...); the import shows each
# renaming it applied.
CONDA_TO_PYPI = {
    "pytorch": "torch",
    "pytorch-cpu": "torch",
    "pytorch-gpu": "torch",
    "opencv": "opencv-python",
    "py-opencv": "opencv-python",
    "libopencv": "opencv-python",
    "matplotlib-base": "matplotlib",
    "tensorflow-gpu": "tensorflow",
    "tensorflow-base": "tensorflow",
    "py-xgboost": "xgboost",
    "py-lightgbm": "lightgbm",
    "pytables": "tables",
    "pyqt": "PyQt5",
    "huggingface_hub": "huggingface-hub",
    "jpeg": None,
    "pytorch-cuda": None,
    "pytorch-mutex": None,
    "cuda": None,
    "cuda-toolkit": None,
    "cuda-version": None,
    "cudatoolkit-dev": None,
    "torchtriton": None,
    "gxx_linux-64": None,
    "gcc_linux-64": None,
}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CONDA_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:(==?|>=|<=|>|<|!=)\s*([^=\s]+))?")
PIP_TIMEOUT_SECONDS = 1800
# Written last into a built environment: its hash and `pip freeze`. A folder
# with it is a finished build this host already has (another database, a
# reinstalled site): adopted as it is, never built twice.
BUILT_MARKER = ".mlrbench-environment.json"


# ---------------------------------------------------------------- what a folder asks for


@dataclass
class EnvironmentFile:
    """What an environment file asks for: pip requirements, the interpreter's
    version (conda's `python=3.10`; "" for any) and the conda names it renamed."""

    requirements: list[str] = field(default_factory=list)
    python: str = ""
    renamed: list[tuple[str, str]] = field(default_factory=list)


def _conda_python(entry: str) -> str:
    """`python=3.10` or `python==3.10.*` -> "3.10"; "" for a range or none."""
    match = re.fullmatch(r"python\s*==?\s*(\d+\.\d+)(?:\.[\d*]+)?(?:=\S*)?", entry.strip())
    return match.group(1) if match else ""


def _conda_requirement(entry: str, found: EnvironmentFile | None = None) -> str | None:
    """`numpy=1.26=py311h...` -> `numpy==1.26`, `pytorch` -> `torch`; None for
    conda-only packages."""
    entry = entry.split("::", 1)[-1].strip()
    match = _CONDA_RE.match(entry)
    if match is None:
        return entry
    name, operator, version = match.groups()
    if name.lower() == "python" and found is not None:
        found.python = _conda_python(entry)
    if name.lower() in CONDA_TO_PYPI:
        renamed = CONDA_TO_PYPI[name.lower()]
        if renamed is None:
            return None
        if found is not None:
            found.renamed.append((name, renamed))
        name = renamed
    elif name.lower() in CONDA_ONLY or name.lower().startswith(("lib", "_")):
        return None
    if not version:
        return name
    if operator == "=":
        # conda's `=1.26` means 1.26.*; pip's closest is a prefix match.
        return f"{name}=={version}" if version.count(".") >= 2 else f"{name}=={version}.*"
    return f"{name}{operator}{version}"


def _yaml_requirements(path: Path, text: str, found: EnvironmentFile) -> list[str]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise EnvironmentInvalid([f"{path.name}{where}: cannot be read ({problem})"]) from exc
    if data is None:
        return []
    dependencies = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(dependencies, list | type(None)):
        raise EnvironmentInvalid([f"{path.name}: `dependencies` must be a list"])
    requirements: list[str] = []
    problems: list[str] = []
    for entry in dependencies or []:
        if isinstance(entry, dict) and "pip" in entry:
            pip_list = entry["pip"]
            if not isinstance(pip_list, list) or not all(isinstance(p, str) for p in pip_list):
                problems.append(f"{path.name}: the `pip:` section must be a list of requirements")
                continue
            requirements += [p.strip() for p in pip_list if p.strip()]
        elif isinstance(entry, str):
            requirement = _conda_requirement(entry, found)
            if requirement:
                requirements.append(requirement)
        else:
            problems.append(f"{path.name}: dependency {entry!r} is neither a package nor pip:")
    if problems:
        raise EnvironmentInvalid(problems)
    return requirements


def _requirements_txt(path: Path, text: str) -> list[str]:
    requirements = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            # Options (-r, -e, --index-url) could point pip anywhere: refused.
            raise EnvironmentInvalid([f"{path.name} line {number}: option {line!r} is not allowed"])
        requirements.append(line)
    return requirements


def environment_file_read(name: str, text: str) -> EnvironmentFile:
    """What an environment file (`environment.yml` or `requirements.txt`) asks for."""
    found = EnvironmentFile()
    path = Path(name)
    if name.endswith(".txt"):
        requirements = _requirements_txt(path, text)
    else:
        requirements = _yaml_requirements(path, text, found)
    # The same list in any order is the same environment.
    found.requirements = sorted(dict.fromkeys(requirements))
    return found


def spec_hash(requirements: list[str], base_python: str) -> str:
    payload = json.dumps({"python": base_python, "requirements": sorted(requirements)})
    return hashlib.sha256(payload.encode()).hexdigest()


def version_environment(objective: ObjectiveTask, version: int) -> tuple[list[str], str]:
    """The requirements and the Python version recorded for a task version at import."""
    if version == objective.version:
        return list(objective.environment_requirements or []), objective.environment_python
    folder = Path(objective.dev_data_dir).parent.with_name(f"v{version}")
    raw = folder / mlrc.VERSION_ENVIRONMENT_FILE
    if not folder.is_dir():
        raise ExperimentRefused(f"{objective.task.slug} has no version {version}")
    try:
        data = json.loads(raw.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], ""
    return list(data.get("requirements") or []), str(data.get("python") or "")


def version_requirements(objective: ObjectiveTask, version: int) -> list[str]:
    """The requirements recorded in a version's folder at import."""
    return version_environment(objective, version)[0]


# ---------------------------------------------------------------- building


def _root() -> Path:
    return Path(settings.TASK_ENV_ROOT)


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: str  # "3.11.2"; "" when it does not run
    note: str  # why it is not the one asked for ("" when it is)


@functools.cache
def _version_of(python: str) -> str:
    try:
        found = subprocess.run(  # noqa: S603 - a fixed command
            [python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return found.stdout.strip() if found.returncode == 0 else ""


def interpreter_for(python: str = "") -> Interpreter:
    """The interpreter an environment asking for Python `python` ("3.10", or ""
    for any) is built with: `python3.10` on the PATH where it runs, else
    TASK_ENV_PYTHON, with a note that says so."""
    default = str(settings.TASK_ENV_PYTHON)
    if not python:
        return Interpreter(default, _version_of(default), "")
    version = _version_of(default)
    if version.startswith(f"{python}."):
        return Interpreter(default, version, "")
    candidate = shutil.which(f"python{python}")
    if candidate and _version_of(candidate).startswith(f"{python}."):
        return Interpreter(candidate, _version_of(candidate), "")
    return Interpreter(
        default,
        version,
        f"python {python} asked for; this host has no python{python}: "
        f"built with {default} (Python {version or 'unknown'})",
    )


def _base_python(python: str = "") -> str:
    return interpreter_for(python).path


def environment_for(requirements: list[str], *, python: str = "") -> TaskEnvironment | None:
    """The environment row for these requirements (None: none is needed or none recorded)."""
    if not requirements:
        return None
    return TaskEnvironment.objects.filter(
        spec_sha256=spec_hash(requirements, _base_python(python))
    ).first()


def _claim(requirements: list[str], python: str = "") -> TaskEnvironment | None:
    """Take the build of this spec (missing or failed -> building); None when it is
    ready or another build holds it."""
    base = _base_python(python)
    digest = spec_hash(requirements, base)
    environment, _ = TaskEnvironment.objects.get_or_create(
        spec_sha256=digest,
        defaults={
            "requirements": requirements,
            "base_python": base,
            "path": str(_root() / digest[:32]),
        },
    )
    # A build that has held its claim past pip's time limit died with its process.
    stale = timezone.now() - timedelta(seconds=PIP_TIMEOUT_SECONDS + 60)
    claimed = (
        TaskEnvironment.objects.filter(pk=environment.pk)
        .filter(
            Q(status__in=[EnvironmentStatus.MISSING, EnvironmentStatus.FAILED])
            | Q(status=EnvironmentStatus.BUILDING, updated_at__lt=stale)
        )
        .update(status=EnvironmentStatus.BUILDING, error="", updated_at=timezone.now())
    )
    environment.refresh_from_db()
    return environment if claimed else None


# What pip says of the one requirement it cannot install (after "Collecting"
# lines that name every other one).
_PIP_CANNOT = re.compile(
    r"(?:No matching distribution found for|Could not find a version that satisfies "
    r"the requirement)\s+([^\s(]+)"
)


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _pip_failure(output: str, requirements: list[str]) -> str:
    """The spec entry pip cannot install (as the spec names it), or pip's last lines."""
    tail = "\n".join(output.strip().splitlines()[-8:])
    match = _PIP_CANNOT.search(output)
    if match is None:
        return f"pip failed:\n{tail}"
    wanted = _requirement_name(match.group(1))
    named = next((r for r in requirements if _requirement_name(r) == wanted), match.group(1))
    return f"pip cannot install {named}:\n{tail}"


Progress = Callable[[str], None]


def _run(command: list[str], progress: Progress | None = None) -> subprocess.CompletedProcess:
    """Run a build command; with `progress`, each line of its output as it comes."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}
    if progress is None:
        return subprocess.run(  # noqa: S603 - a fixed command, requirements as arguments
            command,
            capture_output=True,
            text=True,
            timeout=PIP_TIMEOUT_SECONDS,
            env=env,
            check=False,
        )
    lines = []
    with subprocess.Popen(  # noqa: S603 - a fixed command, requirements as arguments
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    ) as process:
        timer = threading.Timer(PIP_TIMEOUT_SECONDS, process.kill)
        timer.start()
        try:
            assert process.stdout is not None
            for line in process.stdout:
                lines.append(line)
                progress(line.rstrip("\n"))
        finally:
            timer.cancel()
        code = process.wait()
    return subprocess.CompletedProcess(command, code, "".join(lines), "")


def _pip_index_options() -> list[str]:
    options = []
    if settings.TASK_ENV_PIP_INDEX_URL:
        options += ["--index-url", settings.TASK_ENV_PIP_INDEX_URL]
    for url in settings.TASK_ENV_PIP_EXTRA_INDEX_URL.split():
        options += ["--extra-index-url", url]
    return options


def _build_into(
    staging: Path, requirements: list[str], base: str, progress: Progress | None = None
) -> list[str]:
    """Create the virtual environment and install; returns `pip freeze`."""
    created = _run([base, "-m", "venv", str(staging)])
    if created.returncode != 0:
        raise EnvironmentInvalid([f"cannot create a virtual environment: {created.stderr[-500:]}"])
    pip = [str(staging / "bin" / "python"), "-m", "pip"]
    install = [*pip, "install", "--no-input", "--only-binary=:all:", *_pip_index_options()]
    installed = _run([*install, *requirements], progress)
    if installed.returncode != 0:
        raise EnvironmentInvalid([_pip_failure(installed.stdout + installed.stderr, requirements)])
    frozen = _run([*pip, "freeze", "--all"])
    return [line for line in frozen.stdout.splitlines() if line.strip()]


def _readable_by_all(folder: Path) -> None:
    """The sandbox's uid reads the environment: o+r, and o+x where anyone may run."""
    for current, _dirs, files in os.walk(folder):
        os.chmod(current, os.stat(current).st_mode | 0o555)
        for name in files:
            path = os.path.join(current, name)
            if os.path.islink(path):
                continue
            mode = os.stat(path).st_mode
            os.chmod(path, mode | 0o444 | (0o111 if mode & 0o100 else 0))


def _size(folder: Path) -> int:
    total = 0
    for current, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(current, name)
            if not os.path.islink(path):
                total += os.lstat(path).st_size
    return total


def environment_build(
    *, requirements: list[str], python: str = "", progress: Progress | None = None
) -> TaskEnvironment | None:
    """Build the environment for `requirements` once (a ready one is reused as it is),
    with Python `python` where the host has it; `progress` gets pip's output lines.

    A failed build leaves no folder behind, and its row (never `ready`) says
    why, naming the spec entry pip could not install. Returns None when nothing
    is needed (no requirements: the host's Python)."""
    if not requirements:
        return None
    environment = _claim(requirements, python)
    if environment is None:
        current = environment_for(requirements, python=python)
        assert current is not None  # _claim created it
        if current.status == EnvironmentStatus.READY and Path(current.python).exists():
            return current
        if current.status == EnvironmentStatus.READY:
            # Its folder was removed: build again.
            TaskEnvironment.objects.filter(pk=current.pk).update(status=EnvironmentStatus.MISSING)
            return environment_build(requirements=requirements, python=python, progress=progress)
        raise ExperimentRefused(f"the environment {current.spec_sha256[:12]} is being built")
    return _build_claimed(environment, requirements, progress)


def _built_packages(target: Path, digest: str) -> list[str] | None:
    """`pip freeze` of a finished build of this hash in `target`, or None."""
    try:
        marker = json.loads((target / BUILT_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("spec_sha256") != digest:
        return None
    packages = marker.get("packages")
    if not isinstance(packages, list) or not (target / "bin" / "python").exists():
        return None
    return [str(package) for package in packages]


def _build_claimed(
    environment: TaskEnvironment, requirements: list[str], progress: Progress | None = None
) -> TaskEnvironment:
    target = Path(environment.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o755)
    started = time.monotonic()
    adopted = _built_packages(target, environment.spec_sha256)
    if adopted is not None:
        return _ready(environment, adopted, target, started)
    try:
        # A venv's scripts name its own path, so it is built where it stays;
        # the claim keeps any other build of this spec away meanwhile.
        if target.exists():
            shutil.rmtree(target)
        packages = _build_into(target, requirements, environment.base_python, progress)
    except (EnvironmentInvalid, OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        message = "; ".join(exc.problems) if isinstance(exc, EnvironmentInvalid) else str(exc)
        TaskEnvironment.objects.filter(pk=environment.pk).update(
            status=EnvironmentStatus.FAILED, error=message, packages=[], updated_at=timezone.now()
        )
        environment.refresh_from_db()
        raise EnvironmentInvalid([message]) from exc
    _readable_by_all(target)
    (target / BUILT_MARKER).write_text(
        json.dumps({"spec_sha256": environment.spec_sha256, "packages": packages}),
        encoding="utf-8",
    )
    os.chmod(target / BUILT_MARKER, 0o644)
    return _ready(environment, packages, target, started)


def _ready(
    environment: TaskEnvironment, packages: list[str], target: Path, started: float
) -> TaskEnvironment:
    with transaction.atomic():
        TaskEnvironment.objects.filter(pk=environment.pk).update(
            status=EnvironmentStatus.READY,
            python_version=_version_of(str(target / "bin" / "python")),
            packages=packages,
            error="",
            build_seconds=time.monotonic() - started,
            size_bytes=_size(target),
            built_at=timezone.now(),
            updated_at=timezone.now(),
        )
    environment.refresh_from_db()
    logger.info(
        "environment %s built in %.1f s", environment.spec_sha256[:12], time.monotonic() - started
    )
    return environment


def objective_environment_build(
    *, objective: ObjectiveTask, version: int | None = None, progress: Progress | None = None
):
    """`objective_task env-build SLUG [--version N]`."""
    requirements, python = version_environment(objective, version or objective.version)
    return environment_build(requirements=requirements, python=python, progress=progress)


def environment_state(requirements: list[str], python: str = "") -> dict:
    """The `environment` answer of a task version: status, packages, error, and
    the Python asked for (`python_requested`) and used (`python_version`, with
    `python_note` when they differ)."""
    interpreter = interpreter_for(python)
    asked = {"python_requested": python, "python_note": interpreter.note}
    if not requirements:
        return {
            "status": EnvironmentStatus.READY.value,
            "packages": [],
            "error": "",
            "requirements": [],
            "python": "host",
            "python_version": "",
            **asked,
        }
    environment = environment_for(requirements, python=python)
    if environment is None:
        return {
            "status": EnvironmentStatus.MISSING.value,
            "packages": [],
            "error": "",
            "requirements": requirements,
            "python": "",
            "python_version": "",
            **asked,
        }
    ready = environment.status == EnvironmentStatus.READY
    return {
        "status": environment.status,
        "packages": environment.packages,
        "error": environment.error,
        "requirements": requirements,
        "python": environment.python if ready else "",
        "python_version": environment.python_version if ready else "",
        **asked,
    }


def run_environment(objective: ObjectiveTask, version: int) -> TaskEnvironment | None:
    """The ready environment a run of this version uses (None: the host's Python).

    Raises ExperimentRefused, with the reason, when it is not built."""
    requirements, python = version_environment(objective, version)
    if not requirements:
        return None
    environment = environment_for(requirements, python=python)
    status = environment.status if environment is not None else EnvironmentStatus.MISSING
    if environment is not None and status == EnvironmentStatus.READY:
        if Path(environment.python).exists():
            return environment
        status = EnvironmentStatus.MISSING
    detail = f": {environment.error}" if environment is not None and environment.error else ""
    raise ExperimentRefused(
        f"the environment of {objective.task.slug} version {version} is {status}{detail}; "
        f"build it with `objective_task env-build {objective.task.slug}` (or queue the run "
        "with `run_experiment ... --build-env`)"
    )


def base_prefix(environment: TaskEnvironment) -> Path | None:
    """The installation a virtual environment's interpreter comes from (its
    pyvenv.cfg `home`'s parent), where it is not the system's own /usr: a run
    mounts it read-only too, or the environment's `python` leads nowhere."""
    try:
        config = (Path(environment.path) / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^home\s*=\s*(.+)$", config, re.MULTILINE)
    if match is None:
        return None
    prefix = Path(match.group(1).strip()).parent
    if prefix in (Path("/usr"), Path("/usr/local"), Path("/")):
        return None
    return prefix if prefix.is_dir() else None
