"""Objective task environments, side by side in one run:

(a) the environment build (`objective_task env-build`): once from nothing (pip
    from the package registries, its cache and wheels as configured), then
    again with the same requirements (a reuse: goal under 2 s), and once more
    for a database that has no row for it yet (the built folder is adopted);
(b) the sandbox's overhead on a run in that environment: MLRC-Bench's
    product-recommendation baseline (`python main.py -m my_method -p dev`, the
    published task folder) run directly with the environment's Python and
    inside the sandbox with the environment mounted read-only, alternating
    (goal: under 20%).

    DEBUG=1 .venv/bin/python perf/mlrc_environments.py [--repeats 3] [--loops 1] [--smoke]

`--loops N` runs the command N times in a row in one run (a longer run, so
the sandbox's fixed start and stop cost is spread over more work).

Uses a throwaway database (DATABASE_URL's server, or SQLite without it).
`--smoke` builds a one-package environment (tqdm) and runs a 0.2-second job
once each way: it checks the script still works, it measures little.
"""

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("DEBUG", "1")

PUBLISHED = Path(os.environ.get("MLRC_DATA", "/work/shared/mlrc")) / "product-recommendation"
FULL = ["numpy", "pandas", "tqdm"]
SMOKE = ["tqdm"]
SMOKE_JOB = "import sys, time\nt = time.time()\nwhile time.time() - t < 0.2:\n    pass\n"


def _build_times(requirements: list[str]) -> tuple[float, float, float]:
    from experiments.environments import environment_build
    from experiments.models import TaskEnvironment

    started = time.perf_counter()
    environment_build(requirements=requirements)
    first = time.perf_counter() - started
    started = time.perf_counter()
    environment_build(requirements=requirements)
    again = time.perf_counter() - started
    TaskEnvironment.objects.all().delete()  # a database that never saw this build
    started = time.perf_counter()
    environment_build(requirements=requirements)
    adopted = time.perf_counter() - started
    return first, again, adopted


def _work(root: Path, smoke: bool) -> tuple[Path, str]:
    work = root / "work"
    if smoke or not (PUBLISHED / "env" / "main.py").is_file():
        work.mkdir()
        (work / "job.py").write_text(SMOKE_JOB)
        return work, "python job.py"
    shutil.copytree(PUBLISHED / "env", work)
    return work, "python main.py -m my_method -p dev"


def _env(python_bin: str, shim: Path) -> dict[str, str]:
    return {"PATH": f"{python_bin}:/usr/bin:/bin", "PYTHONPATH": str(shim), "MLRC_TASK": "perf"}


def _direct(work: Path, command: str, environment, shim: Path) -> float:
    started = time.perf_counter()
    subprocess.run(  # noqa: S603 - the script's own command
        ["/bin/sh", "-c", command],
        cwd=work,
        env=_env(f"{environment.path}/bin", shim),
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def _sandboxed(work: Path, command: str, environment, shim: Path, scratch: Path) -> float:
    from experiments import mlrc
    from sandbox import Limits, Mount, SandboxSpec, sandbox_run

    uid = 61998 if os.geteuid() == 0 else None
    if uid is not None:
        for current, _, files in os.walk(work):
            os.chown(current, uid, uid)
            for name in files:
                os.chown(os.path.join(current, name), uid, uid)
    spec = SandboxSpec(
        command=command,
        workdir=work,
        limits=Limits(
            wall_seconds=600, memory_bytes=4 * 1024**3, processes=256, disk_bytes=512 * 1024**2
        ),
        mounts=[
            Mount(Path(environment.path), environment.path),
            Mount(shim, mlrc.SHIM_INSIDE),
        ],
        env={
            "PATH": f"{environment.path}/bin:/usr/bin:/bin",
            "PYTHONPATH": mlrc.SHIM_INSIDE,
            "MLRC_TASK": "perf",
        },
        uid=uid,
        scratch=scratch,
    )
    started = time.perf_counter()
    result = sandbox_run(spec, log=io.BytesIO())
    elapsed = time.perf_counter() - started
    if result.outcome != "succeeded":
        raise SystemExit(f"the sandboxed run {result.outcome}: {result.reason}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loops", type=int, default=1, help="the command N times per run")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mlrbench-perf-envs-", dir="/tmp"))
    os.chmod(root, 0o755)  # noqa: S103 - the sandbox user enters it
    os.environ["TASK_ENV_ROOT"] = str(root / "envs")
    os.environ["EXPERIMENT_WORK_ROOT"] = str(root / "exp")
    import django

    django.setup()
    from django.test.utils import setup_databases, teardown_databases

    from experiments import mlrc
    from experiments.environments import environment_for
    from sandbox import sandbox_problem

    problem = sandbox_problem()
    if problem:
        raise SystemExit(f"the sandbox cannot run here: {problem}")
    requirements = SMOKE if args.smoke else FULL
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        first, again, adopted = _build_times(requirements)
        print(f"(a) environment {', '.join(requirements)}: first build {first:.1f} s")
        print(f"    again, same requirements (reuse): {again:.3f} s (goal < 2 s)")
        print(f"    a database without its row (the folder adopted): {adopted:.3f} s")
        environment = environment_for(requirements)
        shim = root / "shim"
        shutil.copytree(mlrc.SHIM_ROOT, shim)
        for current, _, _files in os.walk(shim):
            os.chmod(current, 0o755)  # noqa: S103 - the sandbox user reads it
        work, command = _work(root, args.smoke)
        command = " && ".join([command] * max(args.loops, 1))
        repeats = 1 if args.smoke else args.repeats
        direct_times, sandbox_times = [], []
        for index in range(repeats):
            scratch = root / f"scratch-{index}"
            scratch.mkdir()
            direct_times.append(_direct(work, command, environment, shim))
            sandbox_times.append(_sandboxed(work, command, environment, shim, scratch))
        direct, boxed = min(direct_times), min(sandbox_times)
        print(f"(b) `{command}` in the environment, best of {repeats}:")
        print(f"    directly {direct:.2f} s, in the sandbox {boxed:.2f} s")
        print(f"    overhead {100 * (boxed - direct) / direct:+.1f}% (goal < 20%)")
    finally:
        teardown_databases(old_config, verbosity=0)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
