"""Judging throughput: the Celery judge queue against a plain loop.

500 judgments against the loopback OpenAI-compatible server answering after
300 ms, through the real queue (Redis) and real worker processes on a thread
pool, against a plain loop that runs the same judgments one after another with
the same client in one process (as the published MLR-Judge scripts do). Both
run in the same invocation, on a fresh test database. The loop is measured on
a sample (--sample judgments) and extrapolated to the full count: it is
printed as such. The ideal for the queue is N x 0.3 s / concurrency.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python perf/judge_throughput.py

Options: --judgments 500 --delay 0.3 --concurrency 32 --processes 4
--spare-threads 4 --sample 20 --rounds 5 --unpriced (PERF_PREFETCH sets the
workers' --prefetch-multiplier). The concurrency is the number of calls in
flight, split across the worker processes: by default four processes of 8
calls (JUDGE_CALLS_PER_PROCESS) and 12 threads, two processes per core of a
2-core machine, as the README recommends. The 4 spare threads of a process
prepare prompts and record answers while its 8 calls wait; `--spare-threads 0`
runs one thread per call (4 x 8 threads), the set-up before call slots. The
server counts the calls it has in hand at once, and each round prints the most
it saw: never more than the concurrency. Each round queues 500 new judgments;
the median round is reported.
It also prints the CPU the workers used per judgment and where the machine's
CPU went: with 300 ms answers the queue is bound by the CPU of 2 cores
(litellm, Django, Celery, PostgreSQL: ~15 ms per judgment in all), so the
threads wait on each other; with realistic answer times (--delay 3) it is not.
A round's time runs from queueing to the last judgment's finish as the workers
stamped it. The server answers exactly its delay after a request arrived. The
perf judges have their own price, as an organiser gives a self-hosted model:
with `--unpriced` litellm searches its price table for near names on every
call, about 1 ms of CPU more per judgment and 2 to 3 points less of the ideal.
Goal: at least 20x the loop and at least 80% of the ideal at concurrency 32.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")
os.environ["PERF_JUDGE_KEY"] = "sk-perf"
MEDIA = tempfile.mkdtemp(prefix="mlrbench-perf-media-")
os.environ["MEDIA_ROOT"] = MEDIA
# The loop and the workers must do the same work: keep retries out of the way.
os.environ.setdefault("JUDGE_RETRY_ATTEMPTS", "1")


PREFETCH = int(os.environ.get("PERF_PREFETCH", "1"))
SPARE_THREADS = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.3, help="server answer time, seconds")
    parser.add_argument("--concurrency", type=int, default=32, help="calls in flight, in all")
    parser.add_argument("--processes", type=int, default=4, help="worker processes")
    parser.add_argument(
        "--spare-threads",
        type=int,
        default=SPARE_THREADS,
        help="threads per process beyond its calls (JUDGE_CALLS_PER_PROCESS); 0: the threads "
        "are the calls",
    )
    parser.add_argument("--sample", type=int, default=20, help="judgments the loop runs")
    parser.add_argument("--rounds", type=int, default=5, help="queue runs; the median is reported")
    parser.add_argument(
        "--unpriced",
        action="store_true",
        help="judges without their own price: litellm then searches its table on every call",
    )
    args = parser.parse_args()
    if not 1 <= args.processes <= args.concurrency:
        parser.error("--processes must be between 1 and --concurrency")
    if args.spare_threads < 0:
        parser.error("--spare-threads cannot be negative")
    if not os.environ.get("REDIS_URL") and not os.environ.get("CELERY_BROKER_URL"):
        sys.exit("set REDIS_URL (the queue needs a broker) and DATABASE_URL (PostgreSQL)")

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    print(f"creating a test database next to {connection.settings_dict['NAME']} ...", flush=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    server = None
    workers: list[subprocess.Popen] = []
    try:
        server = _fake_server(args.delay)
        submissions, judge = _data(args.judgments, server.url, unpriced=args.unpriced)
        workers = _start_workers(args.processes, args.concurrency, args.spare_threads)
        rounds = []
        for number in range(args.rounds):
            rounds.append(_round(workers, server, submissions, judge, args.judgments))
            print(
                f"round {number + 1}: {rounds[-1].seconds:.2f} s, at most "
                f"{rounds[-1].most_in_flight} calls in flight",
                flush=True,
            )
        _stop(workers)
        workers = []
        loop_per_judgment, loop_n = _run_loop(submissions, judge, args.sample)
        median = sorted(rounds, key=lambda r: r.seconds)[len(rounds) // 2]
        _report(args, rounds, median, loop_per_judgment, loop_n)
        _report_machine(median)
    finally:
        _stop(workers)
        if server is not None:
            server.close()
        connection.close()
        teardown_databases(old_config, verbosity=0)


class _ServerProcess:
    """The loopback LLM server in a process of its own, as a provider would be: its
    event loop does not take turns with this process's queueing and polling."""

    def __init__(self, delay: float):
        code = (
            "import sys, time\n"
            "from tests.judging.fake_llm import FakeLLMServer, answer\n"
            "from tests.judging.helpers import review_answer\n"
            f"server = FakeLLMServer(default=answer(review_answer('end2end'), delay={delay!r}))\n"
            "print(server.url, flush=True)\n"
            # Each line asks for the most calls in flight at once since the last one;
            # the loop ends when the parent closes stdin (or dies).
            "for _ in sys.stdin:\n"
            "    print(server.most_in_flight, flush=True)\n"
            "    server.most_in_flight = server.in_flight\n"
            "server.close()\n"
        )
        self._process = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self._process.stdout.readline().strip()
        if not self.url:
            raise SystemExit("the loopback LLM server did not start")

    def cpu_seconds(self) -> float:
        return _process_cpu(self._process.pid)

    def most_in_flight(self) -> int:
        """The most calls the server had in hand at once since the last time asked."""
        self._process.stdin.write("\n")
        self._process.stdin.flush()
        return int(self._process.stdout.readline())

    def close(self) -> None:
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()


def _fake_server(delay: float) -> _ServerProcess:
    return _ServerProcess(delay)


def _data(n: int, api_base: str, *, unpriced: bool = False):
    """n / 2 end-to-end submissions (paper, code, log) and two judges: n judgments."""
    from benchmark.models import Agent, ArtifactKind, Stage, Submission, Task, Team
    from judging.models import Judge
    from judging.services import ensure_default_rubrics
    from tests.judging.factories import artifact_add

    ensure_default_rubrics()
    Judge.objects.all().delete()
    judges = [
        Judge.objects.create(
            name=f"perf-judge-{i}",
            model="openai/perf-judge",
            api_base=api_base,
            api_key_env="PERF_JUDGE_KEY",
            requests_per_minute=1_000_000,
            timeout_seconds=30,
            # What an organiser gives a self-hosted model (`judges add --input-price
            # --output-price`); --unpriced leaves it to litellm's table, which lacks it.
            input_usd_per_mtok=None if unpriced else Decimal("0.15"),
            output_usd_per_mtok=None if unpriced else Decimal("0.6"),
        )
        for i in (1, 2)
    ]
    team = Team.objects.create(name="perf", slug="perf")
    agent = Agent.objects.create(team=team, name="perf-agent", display_name="perf")
    submissions = []
    for i in range((n + 1) // 2):
        task = Task.objects.create(
            slug=f"iclr2025_perf{i}",
            title=f"Perf {i}",
            description="# Perf\n\nA task.",
            conference="iclr",
            year=2025,
        )
        submission = Submission.objects.create(
            agent=agent,
            task=task,
            stage=Stage.END2END,
            source="import",
            archive_sha256=uuid.uuid4().hex,
            status="ready",
        )
        artifact_add(submission, "results/paper.md", ArtifactKind.PAPER, "# Paper\n\n" + "x" * 3000)
        artifact_add(submission, "code/run.py", ArtifactKind.CODE, "print(1)\n" * 200)
        artifact_add(submission, "results/log.txt", ArtifactKind.LOG, "step ok\n" * 500)
        submissions.append(submission)
    return submissions, judges


def _database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return (
        f"postgres://{s.get('USER') or ''}{password}@{s.get('HOST') or '127.0.0.1'}:"
        f"{s.get('PORT') or 5432}/{s['NAME']}"
    )


def _start_workers(processes: int, concurrency: int, spare: int) -> list[subprocess.Popen]:
    from django.conf import settings

    from mlrbench_site.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("judge")
    # The calls split as evenly as they go: 32 over 3 processes is 11, 11, 10.
    calls = [concurrency // processes + (i < concurrency % processes) for i in range(processes)]
    threads = [n + spare for n in calls]
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        # Each worker thread keeps its database connection between judgments, as the
        # README's worker command does.
        "CONN_MAX_AGE": os.environ.get("CONN_MAX_AGE", "60"),
    }
    workers, nodes = [], []
    for i in range(processes):
        # Without spare threads the threads are the calls: no slots of their own.
        env["JUDGE_CALLS_PER_PROCESS"] = str(calls[i]) if spare else "0"
        node = f"perf{i}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "mlrbench_site",
            "worker",
            "-Q",
            "judge",
            "--pool",
            "threads",
            "--concurrency",
            str(threads[i]),
            "-n",
            node,
            "--prefetch-multiplier",
            str(PREFETCH),
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "WARNING",
        ]
        workers.append(subprocess.Popen(command, cwd=ROOT, env=dict(env), start_new_session=True))
        nodes.append(node)
    print(
        f"workers: {processes} process(es), calls {calls}, threads {threads}: "
        f"{' '.join(command[3:9])}"
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if len(app.control.ping(destination=nodes, timeout=1.0)) == len(nodes):
            return workers
    raise SystemExit("the workers did not start")


def _process_cpu(pid: int) -> float:
    """CPU time a process has used so far (Linux /proc); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _cpu_seconds(workers: list[subprocess.Popen]) -> float:
    """CPU time the worker processes have used so far."""
    return sum(_process_cpu(worker.pid) for worker in workers)


def _machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (all cores, /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def _report_machine(median: Round) -> None:
    """Where the machine's CPU went while the queue ran: the bound on 2 cores."""
    seconds, machine = median.seconds, median.machine_cpu
    workers, own, server = median.worker_cpu, median.own_cpu, median.server_cpu
    cores = os.cpu_count() or 1
    print(
        f"machine CPU during the queue  {machine:.1f} s of {cores * seconds:.1f} s "
        f"({100 * machine / (cores * seconds):.0f}% busy): workers {workers:.1f} s, LLM "
        f"server {server:.1f} s, this process (queueing, polling) {own:.1f} s, the rest "
        f"(PostgreSQL, Redis) {max(0.0, machine - workers - own - server):.1f} s"
    )


def _stop(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)


@dataclass
class Round:
    seconds: float
    worker_cpu: float  # CPU seconds of the worker processes
    machine_cpu: float  # CPU seconds the whole machine was busy
    own_cpu: float  # this process: queueing and polling
    server_cpu: float  # the loopback LLM server's process
    most_in_flight: int  # the most calls the server had in hand at once


def _round(workers, server, submissions, judges, n: int) -> Round:
    from judging.models import Judgment

    # Every round queues n new judgments: the last round's go first (not timed).
    Judgment.objects.filter(judge__in=judges).delete()
    workers_before, server_before = _cpu_seconds(workers), server.cpu_seconds()
    machine_before, own_before = _machine_cpu(), _own_cpu()
    server.most_in_flight()  # from here on
    seconds = _run_queue(submissions, judges, n)
    return Round(
        seconds=seconds,
        worker_cpu=_cpu_seconds(workers) - workers_before,
        machine_cpu=_machine_cpu() - machine_before,
        own_cpu=_own_cpu() - own_before,
        server_cpu=server.cpu_seconds() - server_before,
        most_in_flight=server.most_in_flight(),
    )


def _run_queue(submissions, judges, n: int) -> float:
    from django.db.models import Max
    from django.utils import timezone

    from judging.models import Judgment, JudgmentStatus
    from judging.services import judgments_queue

    started = timezone.now()
    report = judgments_queue(submissions=submissions, judges=judges)
    ids = report.judgment_ids[:n]
    if len(ids) < len(report.judgment_ids):
        Judgment.objects.exclude(pk__in=ids).delete()  # an odd n: one judgment too many
    # The perf judges' judgments are exactly `ids` now; counting them by judge, four
    # times a second, keeps this poll from costing the machine what it measures.
    finished_query = Judgment.objects.filter(
        judge__in=judges, status__in=[JudgmentStatus.DONE, JudgmentStatus.FAILED]
    )
    while True:
        finished = finished_query.count()
        if finished >= len(ids):
            break
        time.sleep(0.25)
    # The queue's time ends when its last judgment finished, as the workers stamped
    # it, not when this poll happened to notice.
    last = Judgment.objects.filter(pk__in=ids).aggregate(last=Max("finished_at"))["last"]
    seconds = (last - started).total_seconds()
    failed = Judgment.objects.filter(pk__in=ids, status=JudgmentStatus.FAILED)
    if failed.exists():
        raise SystemExit(f"{failed.count()} judgments failed: {failed.first().error}")
    return seconds


def _run_loop(submissions, judges, sample: int) -> tuple[float, int]:
    """The same judgments, one after another, in this process: queue them again
    without sending anything and run each directly with the same client."""
    from judging.models import DimensionScore, Judgment, JudgmentStatus
    from judging.services import judgment_run

    ids = list(
        Judgment.objects.filter(judge=judges[0])
        .order_by("pk")
        .values_list("pk", flat=True)[:sample]
    )
    DimensionScore.objects.filter(judgment_id__in=ids).delete()
    Judgment.objects.filter(pk__in=ids).update(status=JudgmentStatus.QUEUED, run_token=None)
    started = time.perf_counter()
    for judgment_id in ids:
        judgment_run(judgment_id=judgment_id)
    seconds = time.perf_counter() - started
    assert Judgment.objects.filter(pk__in=ids, status=JudgmentStatus.DONE).count() == len(ids)
    return seconds / len(ids), len(ids)


def _report(args, rounds: list[Round], median: Round, loop_per_judgment: float, loop_n: int):
    n = args.judgments
    loop_seconds = loop_per_judgment * n
    ideal = n * args.delay / args.concurrency
    queue_seconds = median.seconds
    print()
    print(f"judgments                     {n} (server answers after {args.delay * 1000:.0f} ms)")
    print(
        f"plain loop                    {loop_per_judgment * 1000:.0f} ms per judgment, "
        f"measured on {loop_n}; {loop_seconds:.1f} s for {n} (extrapolated)"
    )
    print(
        f"queue, concurrency {args.concurrency:<10} {queue_seconds:.2f} s "
        f"({n / queue_seconds:.0f} judgments/s), the median of "
        f"{', '.join(f'{r.seconds:.2f}' for r in rounds)} s"
    )
    most = max(r.most_in_flight for r in rounds)
    threads = (
        f"{args.processes} processes of {args.spare_threads} threads beyond their calls"
        if args.spare_threads
        else f"{args.processes} processes, one thread per call"
    )
    print(f"calls in flight               at most {most} at the server ({threads})")
    if most > args.concurrency:
        print(f"  (more than {args.concurrency}: the ideal below does not bound this run)")
    print(f"ideal (N x delay / conc.)     {ideal:.2f} s")
    print(
        f"worker CPU                    {median.worker_cpu:.1f} s "
        f"({1000 * median.worker_cpu / n:.1f} ms per judgment; {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    print(f"speed-up over the loop        {loop_seconds / queue_seconds:.1f}x   (goal >= 20x)")
    print(f"share of the ideal            {100 * ideal / queue_seconds:.1f}%   (goal >= 80%)")


if __name__ == "__main__":
    main()
