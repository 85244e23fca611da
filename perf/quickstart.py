"""The quick start's first run from a clean clone (issue 37): with uv, as
`scripts/quickstart.sh` installs (scripts/venv.sh: `uv sync --locked --extra
dev`, uv itself bootstrapped with pip from a bare python3), beside pip
installing the same lock, side by side in one run:

- uv: `scripts/quickstart.sh` in a fresh `git clone` of HEAD, with no uv on PATH;
- pip: the same in another clone, its virtual environment made first by
  `pip install --require-hashes --no-deps -r` the lock as `uv export` writes
  it, and the site with `pip install --no-deps -e .` (then the stamp, so that
  scripts/venv.sh finds it current and installs nothing).

Each run ends when the site answers `/`; its phases are read off the script's
`==>` lines (installing, migrating, importing, the objective task, the judges'
hint, serving). Both legs run with empty package caches (a new machine: the
downloads count) and again with the caches the first runs left (another clone on
the same machine). Goal: the first run with uv under 90 s on this 2-core
machine, most of it the import, not the install. The load average is printed:
on a busy machine the seconds are not comparable, the ratios still are.

Each leg has caches of its own in the script's temporary folder; pip and uv read
no configuration file (the machine's own find-links and local indexes stay out)
and both install from PyPI, as the lock records.

    .venv/bin/python perf/quickstart.py [--caches cold,warm]

Needs git, network access to PyPI and MLRBENCH_DATA (default ../shared/mlrbench).
`--smoke` (CI): both installers on a slice of the lock (a few small wheels), and
the quick start's steps after installing in a clean clone with this environment
(which must be the lock's: scripts/venv.sh's stamp) and no data; seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
UV = BIN / "uv"
WAIT_SECONDS = 1800  # a first run that takes longer is broken, not slow
GOAL_SECONDS = 90.0
# The quick start's `==>` lines, in order, and the phase each one starts.
PHASES = [
    ("installing", re.compile(r"==> installing (uv|the locked)")),
    ("settings", re.compile(r"==> (writing|using|moving) .*settings")),
    ("migrating", re.compile(r"==> migrating")),
    ("importing", re.compile(r"==> importing MLR-Bench data|!! MLRBENCH_DATA=")),
    ("objective task", re.compile(r"==> installing the site's own objective task")),
    ("judges", re.compile(r"==> \d+ active judge|!! No judge is active")),
    ("serving", re.compile(r"==> serving on")),
]


@dataclass
class Run:
    leg: str
    caches: str
    phases: dict[str, float] = field(default_factory=dict)
    total: float = 0.0

    def install(self) -> float:
        return self.phases.get("installing", 0.0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stamp(folder: Path) -> str:
    """What scripts/venv.sh writes in its stamp: the checksum of pyproject.toml and uv.lock."""
    data = (folder / "pyproject.toml").read_bytes() + (folder / "uv.lock").read_bytes()
    return hashlib.sha256(data).hexdigest()


def _clean_path() -> str:
    """PATH without uv and without this environment: a machine with only python3."""
    kept = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and Path(entry).resolve() != BIN.resolve() and not (Path(entry) / "uv").exists():
            kept.append(entry)
    return os.pathsep.join(kept)


def _environment(scratch: Path, caches: Path, port: int, data: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PIP_", "UV_", "VIRTUAL_ENV", "DJANGO_", "MLRBENCH_"))
        and name not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG"}
    }
    env.update(
        {
            "PATH": _clean_path(),
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_CACHE_DIR": str(caches / "pip"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "UV_CACHE_DIR": str(caches / "uv"),
            "UV_NO_CONFIG": "1",
            "DATABASE_URL": f"sqlite:///{scratch / 'quickstart.sqlite3'}",
            "MEDIA_ROOT": str(scratch / "media"),
            "MLRBENCH_DATA": str(data),
            "PORT": str(port),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _clone(scratch: Path) -> Path:
    clone = scratch / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", "--local", str(ROOT), str(clone)], check=True, timeout=300
    )
    return clone


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310
            return response.status == 200
    except OSError:
        return False


def _quickstart(run: Run, clone: Path, env: dict[str, str], started: float) -> Run:
    """scripts/quickstart.sh until the site answers `/`; the phases from its lines
    (what was timed before it, the pip leg's install, is already in `run`)."""
    launched = time.monotonic()
    process = subprocess.Popen(
        ["bash", "scripts/quickstart.sh"],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    marks: list[tuple[str, float]] = []
    output: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            for name, pattern in PHASES:
                if pattern.search(line) and name not in dict(marks):
                    marks.append((name, time.monotonic()))
            if "==> serving on" in line:
                break
        deadline = time.monotonic() + 120
        while not _answers(f"http://127.0.0.1:{env['PORT']}/"):
            if process.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"{run.leg}: the site never answered\n{''.join(output[-40:])}")
            time.sleep(0.2)
        ended = time.monotonic()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    if "serving" not in dict(marks):
        sys.exit(f"{run.leg}: the quick start stopped\n{''.join(output[-40:])}")
    # Before the first mark: starting (the Python check, a venv already made).
    bounds = [("starting", launched), *marks, ("", ended)]
    for (name, at), (_, until) in zip(bounds, bounds[1:], strict=False):
        run.phases[name] = run.phases.get(name, 0.0) + until - at
    run.total = ended - started
    return run


def _pip_environment(clone: Path, env: dict[str, str], requirements: Path) -> None:
    """The lock installed with pip into the clone's .venv, and scripts/venv.sh's stamp."""
    venv = clone / ".venv"
    subprocess.run(["python3", "-m", "venv", str(venv)], env=env, check=True)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--no-deps"]
    # The lock's pip first, as the pip-based quick start upgraded pip before installing.
    subprocess.run([*pip, f"pip=={_locked_version('pip')}"], env=env, check=True)
    subprocess.run([*pip, "--require-hashes", "-r", str(requirements)], env=env, check=True)
    subprocess.run([*pip, "-e", "."], cwd=clone, env=env, check=True)
    (venv / ".mlrbench-installed").write_text(_stamp(clone) + "\n")


def _locked_version(name: str) -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    (version,) = [package["version"] for package in lock["package"] if package["name"] == name]
    return str(version)


def _export(requirements: Path) -> None:
    subprocess.run(
        [str(UV), "export", "--quiet", "--frozen", "--extra", "dev", "--no-emit-project"]
        + ["--format", "requirements-txt", "-o", str(requirements)],
        cwd=ROOT,
        check=True,
        env={**os.environ, "UV_NO_CONFIG": "1"},
    )


def full(caches_wanted: list[str], data: Path) -> list[Run]:
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="perf-quickstart-") as tmp:
        base = Path(tmp)
        requirements = base / "requirements.txt"
        _export(requirements)
        for caches in caches_wanted:
            for leg in ("uv", "pip"):
                scratch = base / f"{leg}-{caches}"
                scratch.mkdir()
                clone = _clone(scratch)
                env = _environment(scratch, base / f"caches-{leg}", _free_port(), data)
                run = Run(leg, caches)
                started = time.monotonic()
                if leg == "pip":
                    _pip_environment(clone, env, requirements)
                    run.phases["installing"] = time.monotonic() - started
                print(f"--> {leg}, {caches} caches ...", flush=True)
                runs.append(_quickstart(run, clone, env, started))
                phases = ", ".join(f"{name} {seconds:.1f}" for name, seconds in run.phases.items())
                print(f"    {run.total:.1f} s: {phases}", flush=True)
                shutil.rmtree(scratch, ignore_errors=True)
    return runs


def _lock_slice(count: int, requirements: Path) -> str:
    """A few of the lock's smallest pure-Python wheels that every platform installs,
    as hashed requirements."""
    _export(requirements)
    everywhere = {
        line.split("==")[0]
        for line in requirements.read_text().splitlines()
        if "==" in line and not line.startswith(" ") and ";" not in line
    }
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    wheels = []
    for package in lock["package"]:
        if package["name"] not in everywhere:
            continue
        for wheel in package.get("wheels", []):
            if wheel["url"].endswith("-py3-none-any.whl"):
                wheels.append((wheel["size"], package["name"], package["version"], wheel["hash"]))
    chosen = sorted(wheels)[:count]
    return "".join(f"{name}=={version} --hash={digest}\n" for _, name, version, digest in chosen)


def _slice_install(leg: str, base: Path, requirements: Path) -> float:
    venv = base / f"{leg}-venv"
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("PIP_") or k == "PIP_CONFIG_FILE"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_CACHE_DIR"] = str(base / "pip-cache")
    env["UV_CACHE_DIR"] = str(base / "uv-cache")
    started = time.monotonic()
    if leg == "pip":
        subprocess.run(["python3", "-m", "venv", str(venv)], env=env, check=True)
        command = [str(venv / "bin/python"), "-m", "pip", "install", "--quiet"]
    else:
        subprocess.run(["python3", "-m", "venv", "--without-pip", str(venv)], env=env, check=True)
        command = [str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin/python")]
    subprocess.run(
        [*command, "--no-deps", "--require-hashes", "-r", str(requirements)], env=env, check=True
    )
    return time.monotonic() - started


def smoke() -> list[Run]:
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="perf-quickstart-") as tmp:
        base = Path(tmp)
        requirements = base / "slice.txt"
        requirements.write_text(_lock_slice(4, base / "requirements.txt"))
        for leg in ("uv", "pip"):
            run = Run(leg, "slice of the lock")
            run.phases["installing"] = _slice_install(leg, base, requirements)
            run.total = run.install()
            runs.append(run)
        # The steps after installing, in a clean clone, with this environment.
        scratch = base / "clone-run"
        scratch.mkdir()
        clone = _clone(scratch)
        stamp = Path(sys.prefix) / ".mlrbench-installed"
        if not stamp.is_file() or stamp.read_text().strip() != _stamp(clone):
            sys.exit(
                f"{sys.prefix} is not uv.lock's environment (its stamp differs from HEAD's "
                "pyproject.toml and uv.lock): run scripts/venv.sh first, or commit"
            )
        env = _environment(scratch, base / "caches", _free_port(), base / "no-data")
        env["VENV"] = sys.prefix
        runs.append(_quickstart(Run("uv", "no data, installed"), clone, env, time.monotonic()))
    return runs


def report(runs: list[Run]) -> None:
    names = ["starting"] + [name for name, _ in PHASES]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"{'leg':<5} {'caches':<20} " + " ".join(f"{n[:11]:>11}" for n in names) + "   total")
    for run in runs:
        cells = " ".join(f"{run.phases.get(n, 0.0):>11.1f}" for n in names)
        print(f"{run.leg:<5} {run.caches:<20} {cells} {run.total:>7.1f} s")
    by = {(run.leg, run.caches): run for run in runs}
    for caches in dict.fromkeys(run.caches for run in runs):
        uv, pip = by.get(("uv", caches)), by.get(("pip", caches))
        if not (uv and pip and uv.install() > 0):
            continue
        print(
            f"{caches}: pip/uv installing {pip.install() / uv.install():.1f}x "
            f"({pip.install():.1f} s / {uv.install():.1f} s), whole first run "
            f"{pip.total / uv.total:.2f}x ({pip.total:.1f} s / {uv.total:.1f} s)"
        )
        if "importing" in uv.phases:
            print(
                f"  uv's first run: installing {uv.install() / uv.total:.0%}, importing "
                f"{uv.phases['importing'] / uv.total:.0%}; {uv.total:.1f} s against the "
                f"{GOAL_SECONDS:.0f} s goal ({uv.total / GOAL_SECONDS:.2f}x)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a slice of the lock; seconds")
    parser.add_argument("--caches", default="cold,warm", help="cold, warm or cold,warm")
    args = parser.parse_args()
    if not UV.exists():
        sys.exit(f"{UV} is missing: run scripts/venv.sh (uv comes with the dev extra)")
    if args.smoke:
        runs = smoke()
    else:
        default = ROOT.parent / "shared" / "mlrbench"
        data = Path(os.environ.get("MLRBENCH_DATA") or default)
        caches = [c for c in args.caches.split(",") if c in {"cold", "warm"}]
        if caches == ["warm"]:
            caches = ["cold", "warm"]  # warm caches are the ones a cold run leaves
        head = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True)
        print(f"HEAD {head.strip()}, data {data}", flush=True)
        runs = full(caches, data)
    report(runs)


if __name__ == "__main__":
    main()
