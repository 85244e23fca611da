"""Archive intake against `unzip -q` (and `tar -xzf`) on the same archive, in
the same run.

Builds archives of mixed files (incompressible binaries, compressible text
and CSV, PNG figures, many small code files), then for each:

- time: the best of five runs of the site's intake (hash the archive, unpack
  with every check, hash every file) against the best of five `unzip -q`,
  taking turns;
- memory: the peak RSS growth of a fresh process doing the intake, for a
  small and a large archive; it must not grow with the archive.

Goals (issue 3): at most 1.5x the time of unzip; memory growth under 64 MB
whatever the archive size.

    .venv/bin/python perf/intake.py [--mb 100]
    .venv/bin/python perf/intake.py --smoke   # tiny archives, one run: does it still work?
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()


def build_run(folder: Path, megabytes: int) -> None:
    """A run folder of about `megabytes` compressed: 60% random binaries,
    the rest text, CSV, figures and code."""
    rng = random.Random(42)
    words = [
        "alignment", "reward", "policy", "gradient", "baseline", "loss", "epoch",
        "the", "of", "and", "model", "human", "preference", "result", "table",
    ]  # fmt: skip
    target = megabytes * 1024 * 1024
    written = 0
    n = 0
    (folder / "results" / "figures").mkdir(parents=True)
    (folder / "claude_code" / "models").mkdir(parents=True)
    (folder / "data").mkdir()
    while written < target:
        n += 1
        kind = n % 10
        if kind < 3:  # incompressible binaries, ~1.5 MB
            data = os.urandom(1_500_000)
            (folder / "data" / f"weights_{n}.bin").write_bytes(data)
            written += len(data)
        elif kind < 5:  # compressible logs and CSV, ~2 MB each, ~5x
            lines = (
                ",".join(str(rng.random())[:6] for _ in range(8)) + "\n" for _ in range(30_000)
            )
            text = "".join(lines).encode()
            (folder / "results" / f"metrics_{n}.csv").write_bytes(text)
            written += len(text) // 4
        elif kind < 7:  # figures: a PNG header and noise
            data = b"\x89PNG\r\n\x1a\n" + os.urandom(200_000)
            (folder / "results" / "figures" / f"figure_{n}.png").write_bytes(data)
            written += len(data)
        else:  # many small code and text files
            for m in range(20):
                text = " ".join(rng.choice(words) for _ in range(600)).encode()
                (folder / "claude_code" / "models" / f"module_{n}_{m}.py").write_bytes(text)
                written += len(text) // 3
    (folder / "results" / "paper.md").write_text("# Paper\n\n![f](figures/figure_5.png)\n")
    (folder / "results" / "log.txt").write_text("done\n" * 1000)


def make_zip(folder: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())


def make_tar(folder: Path, target: Path) -> None:
    subprocess.run(["tar", "-czf", str(target), "-C", str(folder), "."], check=True)


def best_of_interleaved(runs: int, first, second) -> tuple[float, float]:
    """The best time of each, taking turns so that a busy machine slows both alike."""
    best = [float("inf"), float("inf")]
    for _ in range(runs):
        best[0] = min(best[0], first())
        best[1] = min(best[1], second())
    return best[0], best[1]


def time_reference(command: list[str], dest: Path) -> float:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=dest)
    return time.perf_counter() - start


def time_intake(archive: Path, dest: Path) -> float:
    from submissions.archives import IntakeLimits, archive_unpack, file_sha256

    limits = IntakeLimits.from_settings()
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    start = time.perf_counter()
    file_sha256(archive)  # the intake's duplicate check (the web upload hashes on the way in)
    archive_unpack(source=archive, dest=dest, limits=limits)
    return time.perf_counter() - start


def child_memory(archive: Path, dest: Path) -> dict:
    """Peak RSS growth (MB) of a fresh process doing one intake, sampled from
    /proc every 5 ms against the RSS just before it starts."""
    code = """
import sys, json, threading, time
sys.path.insert(0, sys.argv[3])
from perf.intake import django_setup
django_setup()
from submissions.archives import IntakeLimits, archive_unpack, file_sha256
from pathlib import Path

def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

before = rss_mb()
peak = [before]
done = threading.Event()

def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss_mb())
        time.sleep(0.005)

thread = threading.Thread(target=sample)
thread.start()
file_sha256(Path(sys.argv[1]))
limits = IntakeLimits.from_settings()
archive_unpack(source=Path(sys.argv[1]), dest=Path(sys.argv[2]), limits=limits)
done.set()
thread.join()
print(json.dumps({"before_mb": before, "growth_mb": peak[0] - before}))
"""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", code, str(archive), str(dest), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "mlrbench_site.settings", "DEBUG": "1"},
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100, help="size of the large archive")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1 and 2 MB archives, one timed run each: checks the script, not the goals",
    )
    args = parser.parse_args()
    sizes = (
        (("small", 1), ("large", 2))
        if args.smoke
        else (
            ("small", max(args.mb // 4, 5)),
            ("large", args.mb),
        )
    )
    runs = 1 if args.smoke else 5
    django_setup()
    from django.conf import settings

    settings.INTAKE_MAX_ARCHIVE_BYTES = 10 * 1024**3
    settings.INTAKE_MAX_UNPACKED_BYTES = 10 * 1024**3
    work = Path(tempfile.mkdtemp(prefix="mlrbench-perf-"))
    try:
        results = {}
        for label, megabytes in sizes:
            run = work / f"run-{label}"
            run.mkdir()
            build_run(run, megabytes)
            archive = work / f"{label}.zip"
            make_zip(run, archive)
            tarball = work / f"{label}.tar.gz"
            make_tar(run, tarball)
            shutil.rmtree(run)
            size = archive.stat().st_size / 1024**2
            files = len(zipfile.ZipFile(archive).infolist())
            memory = child_memory(archive, work / "out")
            results[label] = memory
            print(f"{label} archive: {size:.0f} MB zip, {files} files")
            if label != "large":
                continue
            ours, unzip = best_of_interleaved(
                runs,
                lambda archive=archive: time_intake(archive, work / "i"),
                lambda archive=archive: time_reference(["unzip", "-q", str(archive)], work / "u"),
            )
            print(
                f"  zip:    intake {ours:.2f} s, unzip -q {unzip:.2f} s, ratio {ours / unzip:.2f}x"
            )
            ours_tar, untar = best_of_interleaved(
                runs,
                lambda tarball=tarball: time_intake(tarball, work / "i"),
                lambda tarball=tarball: time_reference(["tar", "-xzf", str(tarball)], work / "t"),
            )
            print(
                f"  tar.gz: intake {ours_tar:.2f} s, tar -xzf {untar:.2f} s, "
                f"ratio {ours_tar / untar:.2f}x"
            )
        for label, memory in results.items():
            print(f"  peak memory growth, {label} archive: {memory['growth_mb']:.1f} MB")
        print("goal: ratio <= 1.5x unzip; memory growth < 64 MB at every size")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
