"""How much the sandbox adds to a CPU-bound job: the same ~10-second job run
directly and inside the sandbox (bubblewrap, cgroup, rlimits, watchdog),
alternating, in the same run. Goal: under 20%.

    .venv/bin/python perf/sandbox_overhead.py [--seconds 10] [--repeats 3] [--smoke]

`--smoke` runs a 0.2-second job once each way: it checks the script still
works (CI runs it), it measures nothing worth reading.

Run it as root to measure what a worker does (a dedicated uid per job).
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

from sandbox import Limits, SandboxSpec, sandbox_problem, sandbox_run  # noqa: E402

JOB = """import sys
total = 0
for i in range(int(sys.argv[1])):
    total += i * i % 7
print(total)
"""
PYTHON = "/usr/bin/python3"  # the interpreter the sandbox sees too


def direct(iterations: int, folder: Path) -> float:
    started = time.perf_counter()
    subprocess.run([PYTHON, "job.py", str(iterations)], cwd=folder, check=True, capture_output=True)
    return time.perf_counter() - started


def sandboxed(iterations: int, folder: Path, scratch: Path) -> float:
    uid = 61999 if os.geteuid() == 0 else None
    if uid is not None:
        os.chown(folder, uid, uid)
    spec = SandboxSpec(
        command=f"exec python3 job.py {iterations}",
        workdir=folder,
        limits=Limits(
            wall_seconds=600,
            memory_bytes=2 * 1024**3,
            processes=256,
            disk_bytes=256 * 1024**2,
        ),
        uid=uid,
        scratch=scratch,
    )
    started = time.perf_counter()
    result = sandbox_run(spec, log=io.BytesIO())
    elapsed = time.perf_counter() - started
    if result.outcome != "succeeded":
        raise SystemExit(f"the sandboxed job {result.outcome}: {result.reason}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.repeats = 0.2, 1
    problem = sandbox_problem()
    if problem:
        raise SystemExit(f"the sandbox cannot run here: {problem}")
    root = Path(tempfile.mkdtemp(prefix="mlrbench-perf-", dir="/tmp"))
    os.chmod(root, 0o755)  # noqa: S103 - the sandbox user enters it
    try:
        work = root / "work"
        work.mkdir()
        os.chmod(work, 0o755)  # noqa: S103
        (work / "job.py").write_text(JOB)
        os.chmod(work / "job.py", 0o644)
        # Calibrate the job to about --seconds when run directly.
        probe = 2_000_000
        iterations = int(probe * args.seconds / direct(probe, work))
        plain, boxed = [], []
        for _ in range(args.repeats):
            plain.append(direct(iterations, work))
            boxed.append(sandboxed(iterations, work, root))
        best_plain, best_boxed = min(plain), min(boxed)
        overhead = (best_boxed - best_plain) / best_plain * 100
        print(f"job: {iterations} iterations, {args.repeats} runs each, alternating")
        print(f"direct:    best {best_plain:.2f} s  (all: {', '.join(f'{t:.2f}' for t in plain)})")
        print(f"sandboxed: best {best_boxed:.2f} s  (all: {', '.join(f'{t:.2f}' for t in boxed)})")
        print(f"sandbox overhead: {overhead:+.1f}% (goal: under 20%)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
