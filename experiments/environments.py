"""Python environments for objective task versions: what a task folder asks
for (scripts/environment.yml's pip list and conda packages with a PyPI name of
the same name, or scripts/requirements.txt), and building it once per
requirements hash with pip from the package registries, on the host.

A run never reaches a registry: it uses the built interpreter, mounted
read-only in the sandbox. Environments live under TASK_ENV_ROOT, one folder
per hash, shared by every version (of any task) with the same requirements.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import time
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
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CONDA_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:(==?|>=|<=|>|<|!=)\s*([^=\s]+))?")
PIP_TIMEOUT_SECONDS = 1800
# Written last into a built environment: its hash and `pip freeze`. A folder
# with it is a finished build this host already has (another database, a
# reinstalled site): adopted as it is, never built twice.
BUILT_MARKER = ".mlrbench-environment.json"


# ---------------------------------------------------------------- what a folder asks for


def _conda_requirement(entry: str) -> str | None:
    """`numpy=1.26=py311h...` -> `numpy==1.26`; None for conda-only packages."""
    entry = entry.split("::", 1)[-1].strip()
    match = _CONDA_RE.match(entry)
    if match is None:
        return entry
    name, operator, version = match.groups()
    if name.lower() in CONDA_ONLY or name.lower().startswith(("lib", "_")):
        return None
    if not version:
        return name
    if operator == "=":
        # conda's `=1.26` means 1.26.*; pip's closest is a prefix match.
        return f"{name}=={version}" if version.count(".") >= 2 else f"{name}=={version}.*"
    return f"{name}{operator}{version}"


def _yaml_requirements(path: Path, text: str) -> list[str]:
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
            requirement = _conda_requirement(entry)
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


def task_requirements(root: Path) -> list[str]:
    """The pip requirements a task folder's environment file names (empty: none)."""
    for relative in mlrc.ENVIRONMENT_FILES:
        path = root / relative
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EnvironmentInvalid([f"{relative}: cannot be read ({exc})"]) from exc
        if relative.endswith(".txt"):
            found = _requirements_txt(path, text)
        else:
            found = _yaml_requirements(path, text)
        # The same list in any order is the same environment.
        return sorted(dict.fromkeys(found))
    return []


def spec_hash(requirements: list[str], base_python: str) -> str:
    payload = json.dumps({"python": base_python, "requirements": sorted(requirements)})
    return hashlib.sha256(payload.encode()).hexdigest()


def version_requirements(objective: ObjectiveTask, version: int) -> list[str]:
    """The requirements recorded in a version's folder at import."""
    if version == objective.version:
        return list(objective.environment_requirements or [])
    folder = Path(objective.dev_data_dir).parent.with_name(f"v{version}")
    raw = folder / mlrc.VERSION_ENVIRONMENT_FILE
    if not folder.is_dir():
        raise ExperimentRefused(f"{objective.task.slug} has no version {version}")
    try:
        return list(json.loads(raw.read_text(encoding="utf-8")).get("requirements") or [])
    except (OSError, ValueError):
        return []


# ---------------------------------------------------------------- building


def _root() -> Path:
    return Path(settings.TASK_ENV_ROOT)


def _base_python() -> str:
    return str(settings.TASK_ENV_PYTHON)


def environment_for(requirements: list[str]) -> TaskEnvironment | None:
    """The environment row for these requirements (None: none is needed or none recorded)."""
    if not requirements:
        return None
    return TaskEnvironment.objects.filter(
        spec_sha256=spec_hash(requirements, _base_python())
    ).first()


def _claim(requirements: list[str]) -> TaskEnvironment | None:
    """Take the build of this spec (missing or failed -> building); None when it is
    ready or another build holds it."""
    digest = spec_hash(requirements, _base_python())
    environment, _ = TaskEnvironment.objects.get_or_create(
        spec_sha256=digest,
        defaults={
            "requirements": requirements,
            "base_python": _base_python(),
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


def _pip_failure(output: str, requirements: list[str]) -> str:
    """The spec entries pip names in its error, or its last lines."""
    named = [
        r
        for r in requirements
        if re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() in output.lower()
    ]
    tail = "\n".join(output.strip().splitlines()[-8:])
    if named and ("No matching distribution" in output or "Could not find" in output):
        return f"pip cannot install {', '.join(named)}:\n{tail}"
    return f"pip failed:\n{tail}"


def _run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603 - a fixed command, requirements as arguments
        command,
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_SECONDS,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"},
        check=False,
    )


def _build_into(staging: Path, requirements: list[str]) -> list[str]:
    """Create the virtual environment and install; returns `pip freeze`."""
    created = _run([_base_python(), "-m", "venv", str(staging)])
    if created.returncode != 0:
        raise EnvironmentInvalid([f"cannot create a virtual environment: {created.stderr[-500:]}"])
    pip = [str(staging / "bin" / "python"), "-m", "pip"]
    installed = _run([*pip, "install", "--no-input", "--only-binary=:all:", *requirements])
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


def environment_build(*, requirements: list[str]) -> TaskEnvironment | None:
    """Build the environment for `requirements` once (a ready one is reused as it is).

    The build goes to a staging folder renamed into place only when pip
    succeeded: a failed build leaves nothing behind, and its row says why,
    naming the spec entry pip could not install. Returns None when nothing is
    needed (no requirements: the host's Python)."""
    if not requirements:
        return None
    environment = _claim(requirements)
    if environment is None:
        current = environment_for(requirements)
        assert current is not None  # _claim created it
        if current.status == EnvironmentStatus.READY and Path(current.python).exists():
            return current
        if current.status == EnvironmentStatus.READY:
            # Its folder was removed: build again.
            TaskEnvironment.objects.filter(pk=current.pk).update(status=EnvironmentStatus.MISSING)
            return environment_build(requirements=requirements)
        raise ExperimentRefused(f"the environment {current.spec_sha256[:12]} is being built")
    return _build_claimed(environment, requirements)


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


def _build_claimed(environment: TaskEnvironment, requirements: list[str]) -> TaskEnvironment:
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
        packages = _build_into(target, requirements)
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


def objective_environment_build(*, objective: ObjectiveTask, version: int | None = None):
    """`objective_task env-build SLUG [--version N]`."""
    return environment_build(
        requirements=version_requirements(objective, version or objective.version)
    )


def environment_state(requirements: list[str]) -> dict:
    """The `environment` answer of a task version: status, packages, error."""
    if not requirements:
        return {
            "status": EnvironmentStatus.READY.value,
            "packages": [],
            "error": "",
            "requirements": [],
            "python": "host",
        }
    environment = environment_for(requirements)
    if environment is None:
        return {
            "status": EnvironmentStatus.MISSING.value,
            "packages": [],
            "error": "",
            "requirements": requirements,
            "python": "",
        }
    return {
        "status": environment.status,
        "packages": environment.packages,
        "error": environment.error,
        "requirements": requirements,
        "python": environment.python if environment.status == EnvironmentStatus.READY else "",
    }


def run_environment(objective: ObjectiveTask, version: int) -> TaskEnvironment | None:
    """The ready environment a run of this version uses (None: the host's Python).

    Raises ExperimentRefused, with the reason, when it is not built."""
    requirements = version_requirements(objective, version)
    if not requirements:
        return None
    environment = environment_for(requirements)
    status = environment.status if environment is not None else EnvironmentStatus.MISSING
    if environment is not None and status == EnvironmentStatus.READY:
        if Path(environment.python).exists():
            return environment
        status = EnvironmentStatus.MISSING
    detail = f": {environment.error}" if environment is not None and environment.error else ""
    raise ExperimentRefused(
        f"the environment of {objective.task.slug} version {version} is {status}{detail}; "
        f"build it with `objective_task env-build {objective.task.slug}`"
    )
