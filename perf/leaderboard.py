"""Leaderboard and export latency at full MLR-Bench scale, against /healthz.

Fills a fresh PostgreSQL database with a synthetic benchmark (201 tasks x 100
agents x 5 stages x 2 judges = 201,000 judgments, about 1.1 million dimension
scores) with COPY, serves the site with gunicorn on a loopback port beside
one judge worker (which recomputes the boards after a write), and measures in
the same run, over HTTP:

- the median latency of `/healthz` (the reference);
- for each stage, the leaderboard page, `/api/leaderboard/` (the tie-aware
  ranking), the judges' leaderboard and its page: the first request ever,
  after the refresh that ends an import (`import_mlrbench` computes every
  stage's boards; goal within 1 s), and the median of repeated requests
  (cached until a judgment lands); goals: within 10x of /healthz, the ranking
  and the judges' board within 5x;
- after a write (what a landing judgment does): the first request to each of
  them (the board as it was, while the worker recomputes; goal within 1 s) and
  the seconds until the answer is fresh;
- the full export as CSV files against the same export as JSON Lines; goal:
  CSV within 2x of JSON;
- a release against the CSV of the same rows (the leaderboards, computed
  afresh, and the export's judgments, scores and reviews); goal within 3x.

Usage (the database server from DATABASE_URL; the script creates and drops
its own database in it):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
    REDIS_URL=redis://127.0.0.1:6379/4 .venv/bin/python perf/leaderboard.py

Options: `--agents`, `--tasks`, `--repeat`, `--export-repeat`, `--keep` (leave the
database), `--reuse NAME` (measure a database kept earlier), `--smoke` (3 agents x 4
tasks, a few requests, static files from the finders: checks that the script still
runs, in seconds; exits non-zero on any error).

The scores are given on the dimensions of the stages' own rubrics, the ones
the site's migrations create, so the script follows the rubrics as they change.
"""

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from decimal import Decimal
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
STAGES = ["idea", "proposal", "experiment", "paper", "end2end"]
FAMILIES = ["anthropic", "openai", "google", "deepseek", "qwen", "other"]
CONFERENCES = ["iclr", "icml", "neurips"]
TOPICS = ["llm_vlm", "ai_for_science", "ml_theory", "trustworthy_ai", "computer_vision"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def admin_conninfo(url: str) -> tuple[str, str]:
    """(conninfo of the server's `postgres` database, name for the perf database)."""
    parts = urllib.parse.urlsplit(url)
    admin = parts._replace(path="/postgres").geturl().replace("postgres://", "postgresql://", 1)
    return admin, f"mlrbench_perf_leaderboard_{os.getpid()}"


def template_clause() -> str:
    """Copy a migrated database when CI made one (TEST_DATABASE_TEMPLATE): the
    migrations then have nothing left to do."""
    template = os.environ.get("TEST_DATABASE_TEMPLATE")
    return f' TEMPLATE "{template}"' if template else ""


def database_url(url: str, name: str) -> str:
    return urllib.parse.urlsplit(url)._replace(path=f"/{name}").geturl()


# --- filling ------------------------------------------------------------------


def copy_rows(cursor, model, rows, *, with_id: bool = True) -> int:
    """COPY dicts of attribute values into the model's table; missing
    attributes take the field's default (Django defaults live in Python).
    Without `with_id` the database numbers the rows."""
    from django.db.models import JSONField

    now = dt.datetime.now(tz=dt.UTC)
    fields = [f for f in model._meta.concrete_fields if with_id or not f.primary_key]
    columns = ", ".join(f'"{f.column}"' for f in fields)
    defaults = {}
    for f in fields:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            defaults[f.attname] = now
        else:
            # "" for text columns, None for nullable ones, the declared default otherwise.
            defaults[f.attname] = f.get_default()
    json_fields = {f.attname for f in fields if isinstance(f, JSONField)}
    n = 0
    with cursor.copy(f'COPY "{model._meta.db_table}" ({columns}) FROM STDIN') as copy:
        for row in rows:
            values = []
            for f in fields:
                value = row.get(f.attname, defaults[f.attname])
                if f.attname in json_fields and value is not None:
                    value = json.dumps(value)
                values.append(value)
            copy.write_row(values)
            n += 1
    return n


def stage_rubrics() -> dict[str, tuple[int, list[str]]]:
    """`{stage: (rubric id, dimension keys)}` of each stage's newest rubric: the
    site's own, which its migrations create (inserting them again would clash)."""
    from judging.models import Rubric

    rubrics: dict[str, tuple[int, list[str]]] = {}
    for rubric in Rubric.objects.filter(stage__in=STAGES, kind="score").order_by(
        "stage", "-is_active", "-version"
    ):
        rubrics.setdefault(rubric.stage, (rubric.id, [d["key"] for d in rubric.dimensions]))
    missing = sorted(set(STAGES) - set(rubrics))
    if missing:
        raise SystemExit(f"no rubric for {', '.join(missing)}: did the migrations run?")
    return rubrics


def fill(n_agents: int, n_tasks: int, seed: int = 7) -> dict[str, int]:
    from django.db import connection

    from benchmark.models import Agent, Task, Team
    from judging.models import DimensionScore, Judge, Judgment
    from submissions.models import Submission

    rnd = random.Random(seed)
    counts: dict[str, int] = {}
    rubrics = stage_rubrics()
    connection.ensure_connection()
    with connection.connection.cursor() as cur:
        counts["tasks"] = copy_rows(
            cur,
            Task,
            (
                {
                    "id": t + 1,
                    "slug": f"{CONFERENCES[t % 3]}{2023 + t % 3}_workshop{t}",
                    "title": f"Workshop {t}",
                    "conference": CONFERENCES[t % 3],
                    "year": 2023 + t % 3,
                    "topic": TOPICS[t % len(TOPICS)],
                    "description": f"# Workshop {t}\n\nA synthetic task.",
                }
                for t in range(n_tasks)
            ),
        )
        copy_rows(cur, Team, [{"id": 1, "name": "Synthetic", "slug": "synthetic"}])
        counts["agents"] = copy_rows(
            cur,
            Agent,
            (
                {
                    "id": a + 1,
                    "team_id": 1,
                    "name": f"agent-{a}",
                    "display_name": f"Agent {a}",
                    "base_model": f"model-{a}",
                    "scaffold": "MLR-Agent",
                    "model_family": FAMILIES[a % len(FAMILIES)],
                }
                for a in range(n_agents)
            ),
        )
        copy_rows(
            cur,
            Judge,
            [
                {
                    "id": 1,
                    "name": "claude-judge",
                    "model": "anthropic/claude-3-7-sonnet",
                    "model_family": "anthropic",
                },
                {
                    "id": 2,
                    "name": "gemini-judge",
                    "model": "gemini/gemini-2.5-pro",
                    "model_family": "google",
                },
            ],
        )
        submissions = []
        sid = 0
        for s_index, stage in enumerate(STAGES):
            for a in range(n_agents):
                for t in range(n_tasks):
                    sid += 1
                    submissions.append((sid, a, t, stage, s_index))
        counts["submissions"] = copy_rows(
            cur,
            Submission,
            (
                {
                    "id": sid,
                    "agent_id": a + 1,
                    "task_id": t + 1,
                    "stage": stage,
                    "version": 1,
                    "source": "import",
                    "archive_sha256": hashlib.sha256(f"{sid}".encode()).hexdigest(),
                    # Intake's status: a submission counts once all its judgments are done.
                    "status": "ready",
                    "llm_cost_usd": Decimal(f"{rnd.uniform(0.2, 4):.6f}"),
                    "agent_cost_usd": (
                        Decimal(f"{rnd.uniform(0.5, 9):.6f}") if stage == "experiment" else None
                    ),
                }
                for sid, a, t, stage, _ in submissions
            ),
        )
        judgments = []
        jid = 0
        for sid, a, _t, stage, s_index in submissions:
            skill = 3 + (a % 10) * 0.5
            for judge in (1, 2):
                jid += 1
                judgments.append((jid, sid, judge, s_index, stage, skill))
        counts["judgments"] = copy_rows(
            cur,
            Judgment,
            (
                {
                    "id": jid,
                    "submission_id": sid,
                    "judge_id": judge,
                    "rubric_id": rubrics[stage][0],
                    "condition": "with_code",
                    "status": "done",
                    "strengths": ["synthetic strength"],
                    "weaknesses": ["synthetic weakness"],
                    "has_hallucination": (rnd.random() < 0.3) if stage == "experiment" else None,
                    "input_tokens": 12000,
                    "output_tokens": 900,
                    "cost_usd": Decimal("0.050000"),
                    "imported": True,
                }
                for jid, sid, judge, s_index, stage, skill in judgments
            ),
        )
        counts["scores"] = copy_rows(
            cur,
            DimensionScore,
            (
                {
                    "judgment_id": jid,
                    "dimension": dimension,
                    "score": Decimal(max(1, min(10, round(skill + rnd.uniform(-3, 3))))),
                    "justification": f"Synthetic justification of {dimension}.",
                }
                for jid, sid, judge, s_index, stage, skill in judgments
                for dimension in rubrics[stage][1]
            ),
            with_id=False,
        )
        for model in (Task, Team, Agent, Judge, Submission, Judgment, DimensionScore):
            table = model._meta.db_table
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('\"{table}\"', 'id'), "  # noqa: S608
                f'(SELECT COALESCE(MAX(id), 1) FROM "{table}"))'
            )
    connection.connection.commit()
    connection.connection.autocommit = True
    with connection.connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    return counts


# --- measuring ----------------------------------------------------------------


def fetch(base: str, path: str) -> tuple[float, int, int, bool]:
    """(seconds, status, bytes, whether the answer says it is stale)."""
    started = time.perf_counter()
    with urllib.request.urlopen(base + path, timeout=600) as response:
        size = 0
        while chunk := response.read(1 << 20):
            size += len(chunk)
        status = response.status
        stale = response.headers.get("X-Data-Stale") == "true"
    return time.perf_counter() - started, status, size, stale


def median_of(base: str, path: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        elapsed, status, _, _ = fetch(base, path)
        assert status == 200, (path, status)
        times.append(elapsed)
    return statistics.median(times)


def bump_cache(*, refresh: bool = True) -> None:
    """Invalidate the cached leaderboards as a landing judgment would (which
    also queues the worker's recompute); without `refresh`, only invalidate.
    This process has the server's settings (the same Redis and key prefix)."""
    from common.results import results_changed
    from leaderboard.caching import generations_bump

    if refresh:
        results_changed(None)  # outside a transaction: at once
    else:
        generations_bump()


def wait_fresh(base: str, path: str, *, limit: float = 900) -> None:
    """Return once `path` answers without X-Data-Stale (the worker's recompute)."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        _elapsed, status, _size, stale = fetch(base, path)
        assert status == 200, (path, status)
        if not stale:
            return
        time.sleep(0.2)
    raise SystemExit(f"{path} still stale after {limit:.0f} s: is the worker running?")


def wait_until_up(base: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("gunicorn exited")
        try:
            fetch(base, "/healthz")
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("the server did not answer within 60 s")


def board_paths(stage: str) -> tuple[tuple[str, str], ...]:
    return (
        ("page", f"/leaderboard/?stage={stage}"),
        ("ranks api", f"/api/leaderboard/?stage={stage}"),
        ("judges api", f"/api/judges/leaderboard/?stage={stage}"),
        ("judges page", f"/judges/?stage={stage}"),
    )


def measure(base: str, *, repeat: int, export_repeat: int) -> None:
    """The measurements, printed: pages and API against /healthz, CSV against JSON Lines."""
    healthz = median_of(base, "/healthz", repeat)
    print(f"\n/healthz median: {healthz * 1000:.1f} ms ({repeat} requests)\n")
    print(
        "first: the first request ever, after the import's refresh computed the boards "
        "(goal: within 1 s); median: the next ones"
    )
    print(f"{'stage':<11} {'what':<12} {'first ms':>9} {'median ms':>10} {'x healthz':>10}")
    worst = {"leaderboard": 0.0, "ranks and judges": 0.0}
    worst_first = 0.0
    for stage in STAGES:
        for what, path in board_paths(stage):
            cold, status, _, _ = fetch(base, path)
            assert status == 200, (path, status)
            worst_first = max(worst_first, cold)
            median = median_of(base, path, repeat)
            # The API answer is the tie-aware ranking; the pages are held to 10x.
            for kind in ("leaderboard",) if what == "page" else ("leaderboard", "ranks and judges"):
                worst[kind] = max(worst[kind], median / healthz)
            print(
                f"{stage:<11} {what:<12} {cold * 1000:>9.0f} {median * 1000:>10.1f} "
                f"{median / healthz:>10.1f}"
            )
    print(f"worst first request after an import: {worst_first:.2f} s (goal: within 1 s)")
    variant = "/api/leaderboard/?stage=end2end&judge=gemini-judge&exclude_same_family=1"
    first, _, _, _ = fetch(base, variant + "&common_tasks=1&conference=iclr")
    print(f"\nend2end, one judge, same family out, common tasks, cold: {first * 1000:.0f} ms")
    print(
        f"worst cached median: pages and API {worst['leaderboard']:.1f}x /healthz (goal: "
        f"within 10x), tie-aware ranks and judges {worst['ranks and judges']:.1f}x "
        f"(goal: within 5x)\n"
    )

    measure_after_write(base, healthz=healthz)

    sizes = {}
    times: dict[str, list[float]] = {"csv": [], "jsonl": []}
    for _ in range(export_repeat):
        for fmt in ("csv", "jsonl"):
            elapsed, status, size, _ = fetch(base, f"/api/export/?formats={fmt}")
            assert status == 200
            times[fmt].append(elapsed)
            sizes[fmt] = size
    csv_time, json_time = (statistics.median(times[f]) for f in ("csv", "jsonl"))
    print(
        f"export CSV: {csv_time:.1f} s ({sizes['csv'] / 1e6:.0f} MB zip), "
        f"JSON Lines: {json_time:.1f} s ({sizes['jsonl'] / 1e6:.0f} MB zip), "
        f"CSV/JSON = {csv_time / json_time:.2f} (goal: within 2x)\n"
    )
    measure_release(export_csv=csv_time)


def measure_after_write(base: str, *, healthz: float) -> None:
    """The first request after a write (a judgment landing) for the tie-aware
    ranking and the judges' leaderboard, goal within 1 s; and how long until
    the worker's recompute of every board makes the answer fresh."""
    print("after a write: the first request (stale: the board as it was), and the seconds")
    print("until the worker's recompute of every stage makes the answer fresh")
    heading = f"{'first ms':>9} {'x healthz':>10} {'stale':>6} {'fresh s':>8}"
    print(f"{'stage':<11} {'what':<12} {heading}")
    worst_first, worst_fresh = 0.0, 0.0
    for stage in STAGES:
        bump_cache()
        written = time.perf_counter()
        firsts = []
        for what, path in board_paths(stage):
            first, status, _, stale = fetch(base, path)
            assert status == 200, (path, status)
            firsts.append((what, path, first, stale))
        for what, path, first, stale in firsts:
            worst_first = max(worst_first, first)
            wait_fresh(base, path)
            fresh = time.perf_counter() - written
            worst_fresh = max(worst_fresh, fresh)
            print(
                f"{stage:<11} {what:<12} {first * 1000:>9.0f} {first / healthz:>10.1f} "
                f"{'yes' if stale else 'no':>6} {fresh:>8.1f}"
            )
    print(
        f"worst first request after a write: {worst_first:.2f} s (goal: within 1 s); "
        f"worst until fresh: {worst_fresh:.1f} s\n"
    )


def measure_release(*, export_csv: float) -> None:
    """Making a release against the CSV of the same rows: each stage's
    leaderboard (computed afresh in this process, as the release computes
    them) and the export's CSV of the judgments, scores and reviews it also
    freezes (`export_csv`, measured over HTTP just before). Goal within 3x."""
    from common.cache_generation import fresh_reads
    from leaderboard.apis import LeaderboardCSVRenderer
    from leaderboard.models import Release, ReleaseFile
    from leaderboard.payloads import leaderboard_payload
    from leaderboard.releases import release_create
    from leaderboard.selectors.board import LeaderboardQuery

    bump_cache(refresh=False)  # no worker recompute competing for the cores
    started = time.perf_counter()
    with fresh_reads():
        for stage in STAGES:
            LeaderboardCSVRenderer().render(leaderboard_payload(LeaderboardQuery(stage=stage)))
    boards_csv = time.perf_counter() - started
    bump_cache(refresh=False)
    name = f"perf-{os.getpid()}-{int(time.time())}"
    started = time.perf_counter()
    release = release_create(name=name)
    release_time = time.perf_counter() - started
    size = len(bytes(release.content))
    files_size = sum(release.files.values_list("size", flat=True))
    ReleaseFile.objects.filter(release=release).delete()
    Release.objects.filter(pk=release.pk).delete()
    same_rows = boards_csv + export_csv
    print(
        f"release: {release_time:.2f} s ({size / 1e6:.1f} MB JSON, {files_size / 1e6:.1f} MB "
        "Parquet, card and Croissant); the same rows as CSV: "
        f"leaderboards {boards_csv:.2f} s + export {export_csv:.2f} s; release/CSV = "
        f"{release_time / same_rows:.1f} (goal: within 3x; against the leaderboards' CSV "
        f"alone {release_time / boards_csv:.1f})\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=201)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--export-repeat", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="leave the database")
    parser.add_argument("--reuse", metavar="NAME", help="measure a database kept earlier")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: check that the script runs, in seconds"
    )
    args = parser.parse_args()
    if args.smoke:
        args.agents, args.tasks, args.repeat, args.export_repeat = 3, 4, 3, 1

    if not os.environ.get("REDIS_URL"):
        raise SystemExit("set REDIS_URL: the server's workers must share one cache (Redis)")
    base_url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/mlrbench")
    admin, name = admin_conninfo(base_url)
    if args.reuse:
        name, args.keep = args.reuse, True
    else:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"' + template_clause())
    static_root = tempfile.mkdtemp(prefix="mlrbench-perf-static-")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(base_url, name),
        "DEBUG": "0",
        "SECRET_KEY": "perf-only-secret",
        "STATIC_ROOT": static_root,
        "CACHE_KEY_PREFIX": f"perf-leaderboard-{os.getpid()}",
        # The measurement sends hundreds of requests a minute from one address.
        "API_ANON_RATE": "1000000/minute",
        "EXPORT_ANON_RATE": "1000000/minute",
        "PAGE_ANON_RATE": "1000000/minute",
        "LOG_LEVEL": "WARNING",
    }
    if args.smoke:
        # Static files from the finders, as in the test suite: no collectstatic.
        env["STATIC_MANIFEST"] = "0"
    os.environ.update(env)
    # Before anything can fail: the clean-up below reads the settings too.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
    sys.path.insert(0, str(ROOT))
    server = worker = None
    try:
        python = sys.executable
        manage = [python, "manage.py"]
        if not args.reuse:
            subprocess.run(
                [*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
            )
        if not args.smoke:
            subprocess.run(
                [*manage, "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
            )
        import django

        django.setup()
        if not args.reuse:
            started = time.perf_counter()
            counts = fill(args.agents, args.tasks)
            print(
                "filled in {:.0f} s: {}".format(
                    time.perf_counter() - started,
                    ", ".join(f"{v:,} {k}" for k, v in counts.items()),
                )
            )
        # What `import_mlrbench` ends with: the boards computed for the new data.
        from leaderboard.refresh import boards_after_import

        started = time.perf_counter()
        stages = boards_after_import()
        print(
            f"the import's refresh: {stages} stages' boards computed in "
            f"{time.perf_counter() - started:.1f} s"
        )
        from django.db import connection

        connection.close()

        port = free_port()
        server = subprocess.Popen(
            [
                str(Path(python).with_name("gunicorn")),
                "mlrbench_site.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--timeout",
                "600",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
        )
        # The judge worker that recomputes the boards after a write (one
        # process: one recompute runs at a time).
        worker = subprocess.Popen(
            [python, "-m", "celery", "-A", "mlrbench_site", "worker", "-Q", "judge",
             "--concurrency", "1", "--without-mingle", "--without-gossip",
             "--loglevel", "WARNING", "-n", f"perf-leaderboard-{os.getpid()}@%h"],
            cwd=ROOT,
            env=env,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base, server)
        median_of(base, "/healthz", 5)  # warm up the workers

        measure(base, repeat=args.repeat, export_repeat=args.export_repeat)
    finally:
        for process in (server, worker):
            if process is None:
                continue
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # still busy on a loaded machine
                process.kill()
                process.wait(timeout=30)
        if not args.keep:
            from django.db import connections

            connections.close_all()
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        else:
            print(f"kept database {name}")


if __name__ == "__main__":
    main()
