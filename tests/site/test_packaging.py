"""One list of the site's packages: INSTALLED_APPS, pyproject.toml's
`packages.find` and the Dockerfile's copies before it installs the site agree,
and a non-editable install (a built wheel) holds every one of them. The locked
build (issue 37, docs/build.md): uv.lock answers pyproject.toml, the image is
built from it in two stages and runs unprivileged, and .dockerignore keeps
secrets and local state out of it."""

import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from django.conf import settings

from tests.conftest import PROJECT_ROOT

# Packages that are not Django apps but ship with the site (never in INSTALLED_APPS).
NOT_APPS = {"mlrbench_site", "common", "sandbox"}


def _site_packages() -> set[str]:
    return set(settings.PROJECT_APPS) | NOT_APPS


def test_the_packages_that_are_not_apps_are_not_installed_as_apps():
    assert NOT_APPS.isdisjoint(settings.INSTALLED_APPS)


def test_pyproject_packages_are_the_site_packages():
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {pattern.removesuffix("*") for pattern in include} == _site_packages()


def _dockerfile_stages() -> dict[str, str]:
    """The Dockerfile's stages by name (`FROM image AS name`), each its own lines."""
    text = (PROJECT_ROOT / "Dockerfile").read_text()
    stages = {}
    for part in re.split(r"^FROM ", text, flags=re.MULTILINE)[1:]:
        first = part.splitlines()[0]
        match = re.search(r"\bAS (\w+)", first, flags=re.IGNORECASE)
        assert match, f"an unnamed stage: FROM {first}"
        stages[match.group(1)] = part
    return stages


def test_the_dockerfile_copies_every_site_package_before_installing():
    builder = _dockerfile_stages()["builder"]
    before_install = builder.split("uv sync --locked --no-editable", 1)[0]
    assert before_install != builder, "the builder installs the site with uv sync --locked"
    copied = set(re.findall(r"^COPY (\w+) \./\1$", before_install, flags=re.MULTILINE))
    assert copied == _site_packages()


def _locked_version(name: str) -> str:
    lock = tomllib.loads((PROJECT_ROOT / "uv.lock").read_text())
    (version,) = [package["version"] for package in lock["package"] if package["name"] == name]
    return version


def test_the_image_installs_the_lock_in_a_builder_and_runs_unprivileged():
    """Issue 37: the builder installs exactly the lock (no dev extra) into a
    virtual environment; the runtime copies it, installs nothing from an index,
    and runs as a user of its own."""
    stages = _dockerfile_stages()
    assert list(stages) == ["builder", "runtime"]
    builder, runtime = stages["builder"], stages["runtime"]
    assert "COPY pyproject.toml uv.lock" in builder
    syncs = re.findall(r"uv sync ([^\n]*)", builder)
    assert syncs and all("--locked" in args and "--extra" not in args for args in syncs)
    assert "UV_PROJECT_ENVIRONMENT=/opt/venv" in builder
    assert "COPY --from=builder /opt/venv /opt/venv" in runtime
    assert "PATH=/opt/venv/bin:$PATH" in runtime
    assert not re.search(r"\b(pip|uv) (install|sync)\b", runtime), "the runtime installs nothing"
    users = re.findall(r"^USER (\S+)", runtime, flags=re.MULTILINE)
    assert users and users[-1] not in {"root", "0"}
    # The uv that builds the image is the lock's own.
    uv_arg = re.search(r"^ARG UV_VERSION=(\S+)$", (PROJECT_ROOT / "Dockerfile").read_text(), re.M)
    assert uv_arg and uv_arg.group(1) == _locked_version("uv")


def test_the_lock_is_current():
    """uv.lock answers pyproject.toml (issue 37): after changing a dependency, run
    `uv lock` (docs/build.md). Checked offline: what the lock records is enough."""
    uv = Path(sys.executable).with_name("uv")
    done = subprocess.run(
        [str(uv), "lock", "--check", "--offline"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
    )
    assert done.returncode == 0, f"uv.lock is out of date: run `uv lock`\n{done.stderr}"


# What an image built in a working checkout must never carry (issue 37).
LOCAL_STATE = [
    ".env",
    ".env.local",
    "db.sqlite3",
    "db.sqlite3-wal",
    ".venv/bin/python",
    "media/submissions/1/paper.pdf",
    "var/objective/run/log.txt",
    "staticfiles/site.css",
    ".git/HEAD",
    "mlrbench_site/__pycache__/settings.cpython-312.pyc",
    ".pytest_cache/README.md",
    ".mypy_cache/3.11/cache.db",
    ".ruff_cache/CACHEDIR.TAG",
    "tests/e2e/axe/node_modules/axe-core/axe.js",
    "perf/out/report.txt",
    "build/lib/common/__init__.py",
    "mlrbench_site.egg-info/PKG-INFO",
]


def test_the_build_context_leaves_out_secrets_and_local_state(tmp_path: Path):
    """The context Docker sends for `COPY . .`, computed from .dockerignore with
    docker's own rules, in a checkout that has every kind of local state."""
    from docker.utils.build import exclude_paths

    project = [str(path.relative_to(PROJECT_ROOT)) for path in _tracked_files()]
    for name in [*project, "uv.lock", *LOCAL_STATE]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    patterns = (PROJECT_ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line for line in patterns if line.strip() and not line.startswith("#")]
    sent = set(exclude_paths(str(tmp_path), patterns))
    leaked = sorted(name for name in LOCAL_STATE if name in sent)
    assert not leaked, f".dockerignore lets these into the image: {leaked}"
    # What the builder and the runtime copy is all there.
    needed = ["pyproject.toml", "uv.lock", "README.md", "manage.py", "templates", "static"]
    needed += sorted(_site_packages())
    assert not [name for name in needed if name not in sent]


def test_the_repository_tracks_no_local_state_and_no_link_out_of_it():
    """A worktree's links to the main checkout's `.venv` and axe's `node_modules`
    once went in with a `git add -A` (.gitignore's `.venv/` matched only a folder):
    a clean clone then had a `.venv` that was a link to nowhere."""
    listed = subprocess.run(
        ["git", "ls-files", "-s", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True
    ).stdout.decode()
    entries = [line.split("\t", 1) for line in listed.split("\0") if line]
    links = [path for meta, path in entries if meta.startswith("120000 ")]
    outside = [
        path for path in links if not (PROJECT_ROOT / path).resolve().is_relative_to(PROJECT_ROOT)
    ]
    assert outside == [], f"tracked links that point out of the checkout: {outside}"
    local = {".venv", "node_modules", ".env", "db.sqlite3", "media", "staticfiles"}
    tracked_local = [path for _meta, path in entries if local & set(Path(path).parts)]
    assert tracked_local == [], f"local state tracked: {tracked_local}"


def _tracked_files() -> list[Path]:
    done = subprocess.run(
        ["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True
    )
    return [PROJECT_ROOT / name for name in done.stdout.decode().split("\0") if name]


def test_a_wheel_holds_every_site_package(tmp_path: Path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), "."],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert _site_packages() <= {name.split("/")[0] for name in names}
    for app in settings.PROJECT_APPS:
        assert any(name.startswith((f"{app}/models.py", f"{app}/models/")) for name in names), app


def test_the_environment_writes_bytecode_whatever_the_calling_shell_says():
    """scripts/venv.sh (sourced by the quick start, the test command and CI) lets
    Python write each module's bytecode as it is first imported: with
    PYTHONDONTWRITEBYTECODE from the machine, every worker, command and perf
    script compiled Django, Celery and litellm from source again."""
    environment = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        # The suite's own environment, current (its stamp): sourcing installs nothing.
        "VENV": str(Path(sys.prefix)),
    }
    shown = subprocess.run(
        ["bash", "-c", '. scripts/venv.sh && echo "${PYTHONDONTWRITEBYTECODE-unset}"'],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert shown.stdout.strip().splitlines()[-1] == "unset"
