"""Adversarial inputs, each side by side with its reference in the same run.

(a) The pathological paper: a 392-byte zip whose `paper.md` is 40,000 `[`
    (quadratic for Python-Markdown's inline patterns, which took every page
    view past 120 s). Its submission page, served from the HTML stored at
    intake, against `/healthz`, both through Django's test client: mean of
    `--requests` GETs each. Goal: at most 10x. The intake's own render time
    is printed too (once, under the renderer's budget).
(b) The tar.gz bomb: 1 GiB of zeros (`--bomb-mib`) under `__MACOSX/` (junk
    the intake skips but must count) in about a megabyte. The time and the
    peak of Python's allocations (tracemalloc) to refuse it, against
    `gzip -t` reading the same bytes. Goals: at most 3x the time, at most
    64 MiB of memory.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench .venv/bin/python perf/adversarial.py

`--smoke` uses a 16 MiB bomb and a few requests, and fails only if the script breaks.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost")
os.environ.setdefault("STATIC_MANIFEST", "0")  # served from the finders, no collectstatic
MEDIA = tempfile.mkdtemp(prefix="mlrbench-perf-media-")
os.environ["MEDIA_ROOT"] = MEDIA
MIB = 1024 * 1024


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--bomb-mib", type=int, default=1024)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.bomb_mib = 3, 16
    return args


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _bomb(path: Path, size: int) -> None:
    with tarfile.open(path, "w:gz", compresslevel=9) as archive:
        paper = b"# A paper\n\nWith a result.\n"
        info = tarfile.TarInfo("results/paper.md")
        info.size = len(paper)
        archive.addfile(info, io.BytesIO(paper))
        junk = tarfile.TarInfo("__MACOSX/results/._zeros.bin")
        junk.size = size
        archive.addfile(junk, io.BufferedReader(_Zeros(size), buffer_size=MIB))


def _mean_get(client, url: str, n: int) -> float:
    client.get(url)  # warm
    started = time.perf_counter()
    for _ in range(n):
        response = client.get(url)
        assert response.status_code in (200, 503), (url, response.status_code)
    return (time.perf_counter() - started) / n


def _paper_part(args: argparse.Namespace, scratch: Path) -> tuple[float, float, float]:
    from django.test import Client

    from benchmark.intake import submission_intake
    from benchmark.models import Agent, Task, Team

    archive = scratch / "paper.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as handle:
        handle.writestr("results/paper.md", b"[" * 40_000)
    team = Team.objects.create(name="perf", slug="perf")
    agent = Agent.objects.create(team=team, name="perf-agent", display_name="Perf")
    task = Task.objects.create(
        slug="iclr2025_perf", title="Perf", conference="iclr", year=2025, description="# Perf"
    )
    started = time.perf_counter()
    submission = submission_intake(
        agent=agent, task=task, stage="paper", archive=archive, archive_name="paper.zip",
        uploader=None, source="upload",
    )  # fmt: skip
    intake = time.perf_counter() - started
    client = Client()
    page = _mean_get(client, f"/submissions/{submission.pk}/", args.requests)
    health = _mean_get(client, "/healthz", args.requests)
    print(f"    (the archive is {archive.stat().st_size} bytes)")
    return intake, page, health


def _bomb_part(args: argparse.Namespace, scratch: Path) -> tuple[int, float, int, float]:
    from benchmark.archives import ArchiveRefused, IntakeLimits, archive_unpack

    bomb = scratch / "bomb.tar.gz"
    _bomb(bomb, args.bomb_mib * MIB)
    refused = False
    out = scratch / "out"
    out.mkdir()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        archive_unpack(source=bomb, dest=out, limits=IntakeLimits.from_settings())
    except ArchiveRefused:
        refused = True
    ours = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert refused, "the bomb was accepted"
    started = time.perf_counter()
    subprocess.run(["gzip", "-t", str(bomb)], check=True)
    gzip_seconds = time.perf_counter() - started
    return bomb.stat().st_size, ours, peak, gzip_seconds


def main() -> None:
    args = _arguments()
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    scratch = Path(tempfile.mkdtemp(prefix="mlrbench-perf-adversarial-"))
    print(f"creating a test database next to {connection.settings_dict['NAME']} ...", flush=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        print("(a) the pathological paper (40,000 '[')")
        intake, page, health = _paper_part(args, scratch)
        print(f"    intake, rendering once:   {intake * 1000:8.1f} ms")
        print(f"    its page, mean of {args.requests}:     {page * 1000:8.1f} ms")
        print(f"    /healthz, mean of {args.requests}:     {health * 1000:8.1f} ms")
        print(f"    page / healthz:           {page / health:8.1f}x   (goal: at most 10x)")
        print(f"(b) the tar.gz bomb ({args.bomb_mib} MiB of zeros under __MACOSX/)")
        size, ours, peak, gzip_seconds = _bomb_part(args, scratch)
        print(f"    the archive:              {size / 1024:8.1f} KiB")
        print(f"    refusing it:              {ours * 1000:8.1f} ms, peak {peak / MIB:.1f} MiB")
        print(f"    gzip -t on the same bytes:{gzip_seconds * 1000:8.1f} ms")
        print(
            f"    refusal / gzip -t:        {ours / gzip_seconds:8.2f}x   "
            f"(goal: at most 3x, at most 64 MiB: {'met' if peak <= 64 * MIB else 'NOT met'})"
        )
    finally:
        connection.close()
        teardown_databases(old_config, verbosity=0)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(MEDIA, ignore_errors=True)


if __name__ == "__main__":
    main()
