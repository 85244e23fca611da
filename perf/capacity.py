"""The figures the capacity plan (docs/operations.md) is made of, measured side by side in
one run on this machine:

(a) judges: judgments per second of one judge-worker process (thread pool,
    call slots) with `--concurrency` (128) calls in flight, through the real
    queue and the loopback OpenAI-compatible server answering at realistic
    times (perf/judge_throughput.py's server: lognormal, median 8 s, p95 40 s,
    times `--time-scale`; the rate printed is per real second, i.e. divided
    back by the scale), with the worker's CPU per judgment (what bounds a
    host once answers come fast) and the zero-overhead machine's rate on the
    same answers as the reference;
(b) intake: MB/s of `submission_intake` (unpack, hash, store every file,
    render the derived HTML) of one `--intake-mb` archive, to the local disk
    (FileSystemStorage) and to S3 (the loopback moto server of the test
    suite, tests/support/s3_server.py, over HTTP), each in a fresh process, taking
    turns (`--intake-rounds`, best of each);
(c) the leaderboard: the uncached latency (the first request after a judgment
    lands, median over the five stages, rendered in this process by Django's
    test client) at 201 tasks x 100 agents x 5 stages x 2 judges = 201,000
    judgments (perf/leaderboard.py's generator), against /healthz.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python perf/capacity.py

It creates and drops databases of its own (`mlrbench_perf_capacity_<pid>_*`)
on DATABASE_URL's server. Options: --judgments 1000 --concurrency 128
--processes 1 --time-scale 1 --intake-mb 50 --intake-rounds 3 --agents 100
--tasks 201 --repeat 5. `--smoke` runs tiny sizes in seconds and fails only if
the script breaks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")
os.environ["EXPERIMENT_AUTO_QUEUE"] = "0"  # an intake here queues no experiment run
# Static files by their plain names (no collectstatic): the same page work.
os.environ.setdefault("STATIC_MANIFEST", "0")
os.environ["CACHE_KEY_PREFIX"] = f"perf-capacity-{os.getpid()}"

from perf import intake as intake_perf  # noqa: E402
from perf import judge_throughput as judges_perf  # noqa: E402 - also sets the judges' env
from perf import leaderboard as board_perf  # noqa: E402


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=128, help="calls in flight, in all")
    parser.add_argument("--processes", type=int, default=1, help="judge worker processes")
    parser.add_argument("--time-scale", type=float, default=1.0, help="answer times x this")
    parser.add_argument("--intake-mb", type=int, default=50, help="the archive's size")
    parser.add_argument("--intake-rounds", type=int, default=3)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=201)
    parser.add_argument("--repeat", type=int, default=5, help="uncached requests per stage")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    parser.add_argument(
        "--parts",
        default="judges,intake,leaderboard",
        help="which figures to measure, comma-separated (default: all three)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.judgments, args.concurrency, args.time_scale = 16, 8, min(args.time_scale, 0.005)
        args.intake_mb, args.intake_rounds, args.agents, args.tasks, args.repeat = 1, 1, 3, 4, 1
    # What perf/judge_throughput.py's helpers read.
    args.spare_threads, args.unpriced = 4, False
    if not os.environ.get("REDIS_URL"):
        sys.exit("set REDIS_URL (the cache and the queue) and DATABASE_URL (PostgreSQL)")
    args.parts = {part.strip() for part in args.parts.split(",") if part.strip()}
    if not args.parts or not args.parts <= {"judges", "intake", "leaderboard"}:
        parser.error("--parts: a comma-separated subset of judges,intake,leaderboard")
    if args.judgments < 2 or not 1 <= args.processes <= args.concurrency:
        parser.error("--judgments must be 2 or more, --processes between 1 and --concurrency")
    return args


def main() -> None:
    args = _arguments()
    base_url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/mlrbench")
    admin, _ = board_perf.admin_conninfo(base_url)
    names = {part: f"mlrbench_perf_capacity_{os.getpid()}_{part}" for part in ("board", "work")}
    _databases_create(admin, base_url, list(names.values()))
    os.environ["DATABASE_URL"] = board_perf.database_url(base_url, names["board"])
    s3 = None
    try:
        import django

        django.setup()
        from tests.support.s3_server import S3Server

        s3 = S3Server(bucket="mlrbench-perf-capacity").start()
        board = _leaderboard_part(args) if "leaderboard" in args.parts else None
        _database_use(names["work"])
        work_url = board_perf.database_url(base_url, names["work"])
        intake = _intake_part(args, work_url, s3) if "intake" in args.parts else None
        judging = _judges_part(args) if "judges" in args.parts else None
        _report(args, judging, intake, board)
    finally:
        if s3 is not None:
            s3.stop()
        from django.db import connections

        connections.close_all()
        _databases_drop(admin, names.values())


def _databases_create(admin: str, base_url: str, names: list[str]) -> None:
    """The first migrated, the others copies of it (a template copy takes a
    second where the migrations take minutes on a busy machine)."""
    import psycopg

    first, *others = names
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{first}"' + board_perf.template_clause())
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": board_perf.database_url(base_url, first)},
        check=True,
    )
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in others:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{first}"')


def _databases_drop(admin: str, names: Iterable[str]) -> None:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _database_use(name: str) -> None:
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name


# ---------------------------------------------------------------- (c) the leaderboard


def _leaderboard_part(args) -> dict[str, float]:
    from django.conf import settings
    from django.test import Client

    started = time.perf_counter()
    counts = board_perf.fill(args.agents, args.tasks)
    print(f"(c) filled in {time.perf_counter() - started:.0f} s: {counts}", flush=True)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    client = Client()

    def seconds(path: str, *, uncached: bool) -> float:
        if uncached:
            board_perf.bump_cache()
        began = time.perf_counter()
        response = client.get(path)
        elapsed = time.perf_counter() - began
        if response.status_code != 200:
            raise SystemExit(f"{path} answered {response.status_code}")
        return elapsed

    seconds("/healthz", uncached=False)  # the first request imports the views
    healthz = statistics.median(seconds("/healthz", uncached=False) for _ in range(20))
    per_stage = {
        stage: statistics.median(
            seconds(f"/leaderboard/?stage={stage}", uncached=True) for _ in range(args.repeat)
        )
        for stage in board_perf.STAGES
    }
    return {
        "judgments": counts.get("judgments", 0),
        "healthz": healthz,
        "median": statistics.median(per_stage.values()),
        "worst": max(per_stage.values()),
    }


# ---------------------------------------------------------------- (b) intake

_INTAKE_CODE = """
import json, sys, time, uuid
sys.path.insert(0, sys.argv[1])
import django
django.setup()
from pathlib import Path
from django.core.files.storage import default_storage
from submissions.intake import submission_intake
from benchmark.models import Agent, Task, Team

team, _ = Team.objects.get_or_create(slug="perf-intake", defaults={"name": "perf intake"})
agent, _ = Agent.objects.get_or_create(team=team, name="perf-intake",
                                    defaults={"display_name": "p"})
task = Task.objects.create(slug=f"iclr2025_intake_{uuid.uuid4().hex[:8]}", title="Intake",
                           description="# Intake", conference="iclr", year=2025)
archive = Path(sys.argv[2])
began = time.perf_counter()
submission_intake(agent=agent, task=task, stage="end2end", archive=archive,
                  archive_name=archive.name, uploader=None, source="upload")
print(json.dumps({"seconds": time.perf_counter() - began,
                  "storage": type(default_storage._wrapped).__name__}))
"""


# The reference: a plain boto3 upload of the same files, one after another, to
# the same server, in a fresh process like the intake's (whose figure includes
# making its S3 client too).
_BOTO3_CODE = """
import json, os, sys, time, uuid
from pathlib import Path
import boto3
from botocore.config import Config
folder, bucket = Path(sys.argv[1]), sys.argv[2]
files = sorted(p for p in folder.rglob("*") if p.is_file())
began = time.perf_counter()  # the client's making counts, as the intake's does
client = boto3.client(
    "s3", endpoint_url=os.environ["AWS_S3_ENDPOINT_URL"],
    region_name=os.environ.get("AWS_S3_REGION_NAME", "us-east-1"),
    config=Config(s3={"addressing_style": "path"}),
)
prefix = f"reference/{uuid.uuid4().hex}"
for path in files:
    client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")
print(json.dumps({"seconds": time.perf_counter() - began, "files": len(files)}))
"""


def _intake_part(args, database_url: str, s3) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="mlrbench-perf-capacity-"))
    intake_perf.build_run(work / "run", args.intake_mb)
    archive = work / "run.zip"
    intake_perf.make_zip(work / "run", archive)
    megabytes = archive.stat().st_size / 1e6
    media = work / "media"
    media.mkdir()
    base = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "0", "MEDIA_ROOT": str(media)}
    targets = {"disk": {"STORAGE_BACKEND": "filesystem"}, "s3": s3.env(), "boto3": s3.env()}
    best = {target: float("inf") for target in targets}
    storage = {"boto3": "boto3 upload_file, one file after another"}
    for _ in range(args.intake_rounds):  # taking turns: a busy machine slows all alike
        for target, env in targets.items():
            code = (
                [_BOTO3_CODE, str(work / "run"), s3.bucket]
                if target == "boto3"
                else [_INTAKE_CODE, str(ROOT), str(archive)]
            )
            result = subprocess.run(
                [sys.executable, "-c", *code],
                cwd=ROOT,
                env={**base, **env},
                capture_output=True,
                text=True,
            )
            if result.returncode:
                raise SystemExit(f"intake to {target} failed:\n{result.stderr[-3000:]}")
            answer = json.loads(result.stdout.strip().splitlines()[-1])
            best[target] = min(best[target], answer["seconds"])
            storage.setdefault(target, answer.get("storage", ""))
    objects = len(s3.keys("submissions/"))
    if not objects:
        raise SystemExit("the S3 intake stored nothing in the bucket")
    print(f"(b) intake of {megabytes:.1f} MB: {best}, {objects} objects in S3", flush=True)
    return {"megabytes": megabytes, "best": best, "storage": storage, "objects": objects}


# ---------------------------------------------------------------- (a) judges


def _judges_part(args) -> dict[str, float]:
    server = judges_perf._ServerProcess(scale=args.time_scale, seed=1)
    workers: list[subprocess.Popen] = []
    try:
        submissions, judges = judges_perf._data(args.judgments, server.url, args)
        workers = judges_perf._start_workers(args.processes, args.concurrency, args.spare_threads)
        round_ = judges_perf._spread_round(workers, server, submissions, judges, args)
    finally:
        judges_perf._stop(workers)
        server.close()
    ideal = judges_perf._zero_overhead(round_.delays, args.concurrency)[-1]
    return {
        "rate": round_.n / round_.seconds * args.time_scale,
        "ideal": round_.n / ideal * args.time_scale,
        "cpu_ms": round_.worker_cpu / round_.n * 1000,
        "most_in_flight": round_.most_in_flight,
    }


# ---------------------------------------------------------------- the report


def _report(args, judging: dict | None, intake: dict | None, board: dict | None) -> None:
    print("\ncapacity figures (this machine:", os.cpu_count(), "cores)")
    if judging is not None:
        _judges_report(args, judging)
    if intake is not None:
        _intake_report(intake)
    if board is not None:
        _board_report(board)


def _judges_report(args, judging: dict) -> None:
    per_process = judging["rate"] / args.processes
    print(
        f"(a) judges: {per_process:.2f} judgments/s per worker process at "
        f"{args.concurrency // args.processes} calls in flight (zero-overhead machine: "
        f"{judging['ideal'] / args.processes:.2f}; {judging['most_in_flight']} in flight at most); "
        f"worker CPU {judging['cpu_ms']:.1f} ms per judgment "
        f"(one core: {1000 / max(judging['cpu_ms'], 1e-9):.0f} judgments/s)"
    )


def _intake_report(intake: dict) -> None:
    disk, s3, boto3 = (intake["megabytes"] / intake["best"][t] for t in ("disk", "s3", "boto3"))
    print(
        f"(b) intake of a {intake['megabytes']:.1f} MB archive: {disk:.1f} MB/s to the local disk "
        f"({intake['storage']['disk']}), {s3:.1f} MB/s to S3 ({intake['storage']['s3']}, "
        f"{intake['objects']} objects), S3/disk = {s3 / disk:.2f}; a plain boto3 upload of the "
        f"same files to the same server: {boto3:.1f} MB/s ({intake['storage']['boto3']}), "
        f"intake/boto3 = {s3 / boto3:.2f} (goal at least 0.5)"
    )


def _board_report(board: dict) -> None:
    print(
        f"(c) leaderboard at {board['judgments']:,} judgments, uncached: median "
        f"{board['median'] * 1000:.0f} ms, worst stage {board['worst'] * 1000:.0f} ms "
        f"(/healthz {board['healthz'] * 1000:.1f} ms: {board['median'] / board['healthz']:.0f}x)"
    )


if __name__ == "__main__":
    main()
