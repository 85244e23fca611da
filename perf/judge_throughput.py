"""Judging throughput at realistic answer times: the Celery judge queue against
its ideal, under a provider's rate limit, and against a plain loop.

Everything runs in one invocation, on a fresh test database, through the real
queue (Redis) and real Celery worker processes on a thread pool with call
slots, as docs/operations.md recommends (four processes of 32 calls in flight and 36
threads: 128 calls in all), against the loopback OpenAI-compatible server of
the test suite (tests/support/fake_llm.py) in a process of its own.

(a) Latency spread. The server answers each request after a delay drawn from a
    lognormal distribution with median 8 s and p95 40 s (seeded; capped at
    10 x p95), times `--time-scale`. 1,000 judgments (two judges on 500
    end-to-end submissions). The ideal is the sum of the delays the server
    drew divided by the calls in flight (`sum of latencies / concurrency`),
    printed with the queue's ratio to it. That is a lower bound no queue can
    reach here: a lognormal tail puts single answers near it (1,000 draws
    with p95 40 s give a longest answer of about 160 s against an ideal of
    about 100 s), and the last answers of a run leave slots idle. So the goal,
    the queue within 1.05x, is measured against the time a zero-overhead
    machine takes with the same answers in the order they came (128 slots,
    each next judgment to the first free one): what remains between that and
    the queue is the site's own overhead.
(b) Rate limit. One judge with `requests_per_minute = R` (`--rpm`), shared by
    every worker through Redis (judging/ratelimit.py), and a server that
    answers 429 past R requests in any window: 4R judgments. The achieved rate
    is the requests over their span plus one window (a limiter that sends R at
    once and R more each window scores exactly R): goal, at least 95% of R;
    and the most requests the server received in any window, goal never above
    R (the server's refusals are printed too).
(c) The worker processes' CPU per judgment in (a): no goal; it is what bounds
    the queue when answers come fast.
And the plain loop: the same judgments one after another in this process with
the same client (as the published MLR-Judge scripts do), measured on
`--sample` judgments and extrapolated.

Time scale: every duration scales by `--time-scale` together, the server's
delays, the rate-limit window (`JUDGE_RATE_WINDOW_SECONDS` = 60 s x scale, in
the workers and at the server, so R requests per scaled minute), the judges'
timeout and the retry backoff; the ratios do not change, only the run's
length. The printed seconds are real (scaled) seconds; the rate is per
(scaled) window. At scale 1 (a) takes about two minutes and (b) four.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python perf/judge_throughput.py --time-scale 0.1

Options: --judgments 1000 --concurrency 128 --processes 4 --spare-threads 4
--time-scale 1 --rpm 120 --sample 20 --seed 1 --parts queue,rpm,loop --unpriced
(PERF_PREFETCH sets the workers' --prefetch-multiplier). `--smoke` runs tiny
sizes in a few seconds and fails only if the script breaks, not on a goal.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
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
# The key policy (common/llm_policy.py): this key may go to the loopback model server.
os.environ["LLM_KEY_ENV_ALLOW"] = "PERF_JUDGE_KEY"
os.environ["LLM_KEY_HOSTS"] = "PERF_JUDGE_KEY=127.0.0.1"
# The scoring pass alone: the loopback server answers the score schema, and the
# hallucination pass would only double every figure.
os.environ["JUDGE_HALLUCINATION_REVIEWS"] = "0"
MEDIA = tempfile.mkdtemp(prefix="mlrbench-perf-media-")
os.environ["MEDIA_ROOT"] = MEDIA

from tests.support import workers as worker_processes  # noqa: E402 - after the path above

PREFETCH = int(os.environ.get("PERF_PREFETCH", "1"))
MEDIAN, P95 = 8.0, 40.0  # seconds, before the time scale
Z95 = 1.6448536269514722  # the standard normal's 95th percentile
WINDOW = 60.0  # a provider's rate-limit window, before the time scale
PARTS = ("queue", "rpm", "loop")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=128, help="calls in flight, in all")
    parser.add_argument("--processes", type=int, default=4, help="worker processes")
    parser.add_argument(
        "--spare-threads", type=int, default=4, help="threads per process beyond its calls"
    )
    parser.add_argument("--time-scale", type=float, default=1.0, help="every duration x this")
    parser.add_argument("--rpm", type=int, default=120, help="the rate-limited judge's limit R")
    parser.add_argument("--sample", type=int, default=20, help="judgments the loop runs")
    parser.add_argument("--seed", type=int, default=1, help="of the server's answer times")
    parser.add_argument("--parts", default=",".join(PARTS), help="which of queue,rpm,loop")
    parser.add_argument("--unpriced", action="store_true", help="judges without their own price")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    args = parser.parse_args()
    if args.smoke:
        args.judgments, args.concurrency, args.processes, args.spare_threads = 16, 8, 2, 2
        args.time_scale, args.rpm, args.sample = min(args.time_scale, 0.005), 4, 2
    args.parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    if set(args.parts) - set(PARTS):
        parser.error(f"--parts takes {', '.join(PARTS)}")
    if not 1 <= args.processes <= args.concurrency:
        parser.error("--processes must be between 1 and --concurrency")
    if args.spare_threads < 1:
        parser.error("--spare-threads must be at least 1 (the call slots need them)")
    if args.time_scale <= 0 or args.rpm < 1 or args.judgments < 2:
        parser.error("--time-scale, --rpm and --judgments must be positive")
    if not os.environ.get("REDIS_URL") and not os.environ.get("CELERY_BROKER_URL"):
        sys.exit("set REDIS_URL (the queue needs a broker) and DATABASE_URL (PostgreSQL)")
    return args


def main() -> None:
    args = _arguments()
    scale = args.time_scale
    # The workers inherit these; this process (the loop) reads them at django.setup().
    os.environ["JUDGE_RATE_WINDOW_SECONDS"] = repr(WINDOW * scale)
    os.environ["LLM_RETRY_BASE_SECONDS"] = repr(2.0 * scale)
    os.environ["LLM_RETRY_MAX_SECONDS"] = repr(60.0 * scale)

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    # A name of its own: `test_<NAME>` is the test suite's, which may be running.
    connection.settings_dict["TEST"]["NAME"] = f"{connection.settings_dict['NAME']}_perf_judges"
    print(f"creating a test database next to {connection.settings_dict['NAME']} ...", flush=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    server = None
    workers: list[subprocess.Popen] = []
    try:
        server = _ServerProcess(scale=scale, seed=args.seed)
        submissions, judges = _data(args.judgments, server.url, args)
        workers = _start_workers(args.processes, args.concurrency, args.spare_threads)
        results: dict[str, object] = {}
        if "queue" in args.parts:
            results["queue"] = _spread_round(workers, server, submissions, judges, args)
        if "rpm" in args.parts:
            results["rpm"] = _rate_round(server, submissions, judges[0], args)
        _stop(workers)
        workers = []
        if "loop" in args.parts:
            results["loop"] = _run_loop(server, submissions, judges, args.sample)
        _report(args, results)
    finally:
        _stop(workers)
        if server is not None:
            server.close()
        connection.close()
        teardown_databases(old_config, verbosity=0)


# ---------------------------------------------------------------- the loopback server

_SERVER_CODE = """
import json, math, random, sys
from tests.support.fake_llm import FakeLLMServer, answer
from tests.judging.helpers import review_answer

scale, seed, median, p95, z95 = (float(v) for v in sys.argv[1:6])
sigma = math.log(p95 / median) / z95
cap = 10 * p95
rng = random.Random(int(seed))
text = review_answer("end2end")
delays = []

def behaviour(body):
    # Drawn in arrival order from a seeded generator: every run sees the same answers.
    delay = min(cap, rng.lognormvariate(math.log(median), sigma)) * scale
    delays.append(delay)
    return answer(text, delay=delay)

server = FakeLLMServer(default=behaviour)
print(server.url, flush=True)
# One command a line, one JSON answer a line; the loop ends when the parent closes stdin.
for line in sys.stdin:
    command, *values = line.split()
    if command == "limit":
        server.rate_limit(int(values[0]) if values[0] != "none" else None, float(values[1]))
    stats = {
        "most_in_flight": server.most_in_flight,
        "most_in_window": server.most_in_window,
        "refused": server.refused,
        "delays": delays[:] if command == "stats" else [],
        "arrivals": [r.at for r in server.requests] if command == "stats" else [],
    }
    if command in ("stats", "reset"):
        delays.clear()
        server.requests.clear()
        server.most_in_flight = server.in_flight
    print(json.dumps(stats), flush=True)
server.close()
"""


class _ServerProcess:
    """The loopback LLM server in a process of its own, as a provider would be: its
    event loop does not take turns with this process's queueing and polling."""

    def __init__(self, *, scale: float, seed: int):
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVER_CODE, *map(str, (scale, seed, MEDIAN, P95, Z95))],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin, self._stdout = self._process.stdin, self._process.stdout
        self.url = self._stdout.readline().strip()
        if not self.url:
            raise SystemExit("the loopback LLM server did not start")

    def _ask(self, line: str) -> dict:
        self._stdin.write(line + "\n")
        self._stdin.flush()
        answer: dict = json.loads(self._stdout.readline())
        return answer

    def reset(self) -> None:
        """Forget the requests, delays and the most calls in flight so far."""
        self._ask("reset")

    def stats(self) -> dict:
        """Since the last reset: the delays drawn (arrival order), the requests'
        arrival times, the most calls in flight, the rate-limit counts; then reset."""
        return self._ask("stats")

    def rate_limit(self, limit: int | None, window: float) -> None:
        self._ask(f"limit {'none' if limit is None else limit} {window!r}")

    def cpu_seconds(self) -> float:
        return _process_cpu(self._process.pid)

    def close(self) -> None:
        self._stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()


# ---------------------------------------------------------------- data and workers


def _data(n: int, api_base: str, args: argparse.Namespace):
    """n / 2 end-to-end submissions (paper, code, log) and two judges: n judgments."""
    from benchmark.models import Agent, Task, Team
    from judging.models import Judge
    from judging.services.rubrics import ensure_default_rubrics
    from submissions.models import ArtifactKind, Stage, Submission
    from tests.judging.factories import artifact_add

    ensure_default_rubrics()
    Judge.objects.all().delete()
    judges = [
        Judge.objects.create(
            name=f"perf-judge-{i}",
            model=f"openai/perf-judge-{i}",
            api_base=api_base,
            api_key_env="PERF_JUDGE_KEY",
            requests_per_minute=1_000_000,
            # Longer than the longest answer the server draws (10 x p95).
            timeout_seconds=max(5.0, 12 * P95 * args.time_scale),
            # What an organiser gives a self-hosted model (`judges add --input-price
            # --output-price`); --unpriced leaves it to litellm's table, which lacks it.
            input_usd_per_mtok=None if args.unpriced else Decimal("0.15"),
            output_usd_per_mtok=None if args.unpriced else Decimal("0.6"),
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


def _start_workers(processes: int, concurrency: int, spare: int) -> list[subprocess.Popen]:
    from django.conf import settings
    from django.db import connection

    from mlrbench_site.celery import app

    worker_processes.queues_purge(app, [settings.JUDGE_QUEUE])
    # The calls split as evenly as they go: 128 over 3 processes is 43, 43, 42.
    calls = [concurrency // processes + (i < concurrency % processes) for i in range(processes)]
    threads = [n + spare for n in calls]
    env = {
        **os.environ,
        "DATABASE_URL": worker_processes.database_url(connection.settings_dict),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        # A pool of connections per process, as docs/operations.md's worker command has: a
        # judge run gives its connection back while it waits on the judge.
        "DATABASE_POOL_SIZE": os.environ.get("DATABASE_POOL_SIZE", "8"),
    }
    workers, nodes = [], []
    for i in range(processes):
        env["JUDGE_CALLS_PER_PROCESS"] = str(calls[i])
        node = f"perf{i}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
        command = worker_processes.worker_command(
            "judge",
            node=node,
            pool="threads",
            concurrency=threads[i],
            loglevel="WARNING",
            extra_args=["--prefetch-multiplier", str(PREFETCH)],
        )
        workers.append(worker_processes.worker_start(command, env))
        nodes.append(node)
    print(f"workers: {processes} process(es), calls {calls}, threads {threads}", flush=True)
    try:
        worker_processes.workers_wait_ready(app, workers, nodes, timeout=120, ping_timeout=1.0)
    except worker_processes.WorkerStartError as error:
        raise SystemExit(f"the workers did not start: {error}") from None
    return workers


def _process_cpu(pid: int) -> float:
    """CPU time a process has used so far (Linux /proc); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _cpu_seconds(workers: list[subprocess.Popen]) -> float:
    return sum(_process_cpu(worker.pid) for worker in workers)


def _machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (all cores, /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _stop(workers: list[subprocess.Popen]) -> None:
    worker_processes.processes_stop(workers, timeout=30)


# ---------------------------------------------------------------- (a) the spread


@dataclass
class SpreadRound:
    n: int
    seconds: float  # from queueing to the last judgment's finish, as the workers stamped it
    finishes: list[float]  # every judgment's finish after queueing, sorted
    delays: list[float]  # the server's answer times, in arrival order
    worker_cpu: float
    machine_cpu: float
    server_cpu: float
    most_in_flight: int


def _queue_and_wait(submissions, judges, n: int, *, poll: float) -> list[float]:
    """Queue the judges' judgments of `submissions` (n at most), wait until every one
    is finished, and answer each one's finish in seconds after queueing, sorted."""
    from django.utils import timezone

    from judging.models import Judgment, JudgmentStatus
    from judging.services.queue import judgments_queue

    started = timezone.now()
    report = judgments_queue(submissions=submissions, judges=judges)
    ids = report.judgment_ids[:n]
    if len(ids) < len(report.judgment_ids):
        Judgment.objects.exclude(pk__in=ids).delete()  # an odd n: one judgment too many
    # Counted by judge a few times a second, so the poll costs the machine little.
    finished = Judgment.objects.filter(
        judge__in=judges, status__in=[JudgmentStatus.DONE, JudgmentStatus.FAILED]
    )
    while finished.count() < len(ids):
        time.sleep(poll)
    stamps = Judgment.objects.filter(pk__in=ids).values_list("finished_at", flat=True)
    failed = Judgment.objects.filter(pk__in=ids, status=JudgmentStatus.FAILED)
    first_failed = failed.first()
    if first_failed is not None:
        raise SystemExit(f"{failed.count()} judgments failed: {first_failed.error}")
    return sorted((stamp - started).total_seconds() for stamp in stamps if stamp is not None)


def _spread_round(workers, server, submissions, judges, args) -> SpreadRound:
    from judging.models import Judgment

    Judgment.objects.filter(judge__in=judges).delete()
    server.rate_limit(None, WINDOW * args.time_scale)
    server.reset()
    workers_before, server_before = _cpu_seconds(workers), server.cpu_seconds()
    machine_before = _machine_cpu()
    poll = min(0.25, max(0.02, 2 * MEDIAN * args.time_scale / 100))
    finishes = _queue_and_wait(submissions, judges, args.judgments, poll=poll)
    seconds = finishes[-1]
    stats = server.stats()
    print(f"(a) the queue: {seconds:.2f} s for {args.judgments} judgments", flush=True)
    return SpreadRound(
        n=args.judgments,
        seconds=seconds,
        finishes=finishes,
        delays=stats["delays"],
        worker_cpu=_cpu_seconds(workers) - workers_before,
        machine_cpu=_machine_cpu() - machine_before,
        server_cpu=server.cpu_seconds() - server_before,
        most_in_flight=stats["most_in_flight"],
    )


def _zero_overhead(delays: list[float], slots: int) -> list[float]:
    """When each of `delays` (in arrival order) finishes with `slots` calls in flight
    and no cost of their own (each next judgment to the first free slot), sorted."""
    free = [0.0] * slots
    finishes = []
    for delay in delays:
        finish = heapq.heappop(free) + delay
        finishes.append(finish)
        heapq.heappush(free, finish)
    return sorted(finishes)


def _at_share(finishes: list[float], share: float) -> float:
    """When `share` of the judgments had finished."""
    return finishes[max(0, math.ceil(share * len(finishes)) - 1)] if finishes else 0.0


# ---------------------------------------------------------------- (b) the rate limit


@dataclass
class RateRound:
    limit: int
    window: float
    requests: int
    span: float  # from the first request the server received to the last
    most_in_window: int
    refused: int
    seconds: float


def _rate_round(server, submissions, judge, args) -> RateRound:
    from judging.models import Judgment
    from judging.ratelimit import window

    limit, seconds_per_window = args.rpm, WINDOW * args.time_scale
    n = min(4 * limit, len(submissions))
    Judgment.objects.filter(judge=judge).delete()
    type(judge).objects.filter(pk=judge.pk).update(requests_per_minute=limit)
    window().reset(str(judge.pk))  # a window left in Redis by an earlier run
    server.rate_limit(limit, seconds_per_window)
    server.reset()
    poll = min(0.25, max(0.02, seconds_per_window / 50))
    seconds = _queue_and_wait(submissions[:n], [judge], n, poll=poll)[-1]
    stats = server.stats()
    arrivals = stats["arrivals"]
    server.rate_limit(None, seconds_per_window)
    print(f"(b) the rate limit: {n} judgments in {seconds:.2f} s", flush=True)
    return RateRound(
        limit=limit,
        window=seconds_per_window,
        requests=len(arrivals),
        span=max(arrivals) - min(arrivals) if arrivals else 0.0,
        most_in_window=stats["most_in_window"],
        refused=stats["refused"],
        seconds=seconds,
    )


# ---------------------------------------------------------------- the plain loop


def _run_loop(server, submissions, judges, sample: int) -> tuple[float, float]:
    """The same judgments one after another in this process: queue them again
    without sending anything and run each directly with the same client. Answers
    the seconds per judgment and the server's mean answer time meanwhile."""
    from judging.models import DimensionScore, Judgment, JudgmentStatus
    from judging.services.run import judgment_run

    ids = list(
        Judgment.objects.filter(judge=judges[-1])
        .order_by("pk")
        .values_list("pk", flat=True)[:sample]
    )
    if len(ids) < sample:  # (a) did not run: make the judge's judgments
        Judgment.objects.filter(judge=judges[-1]).delete()
        ids = [
            Judgment.objects.create(
                submission=s, judge=judges[-1], rubric_id=_rubric_id(), status="queued"
            ).pk
            for s in submissions[:sample]
        ]
    DimensionScore.objects.filter(judgment_id__in=ids).delete()
    Judgment.objects.filter(pk__in=ids).update(status=JudgmentStatus.QUEUED, run_token=None)
    server.reset()
    started = time.perf_counter()
    for judgment_id in ids:
        judgment_run(judgment_id=judgment_id)
    seconds = time.perf_counter() - started
    delays = server.stats()["delays"]
    assert Judgment.objects.filter(pk__in=ids, status=JudgmentStatus.DONE).count() == len(ids)
    return seconds / len(ids), sum(delays) / max(1, len(delays))


def _rubric_id() -> int:
    from judging.services.rubrics import rubric_current

    rubric = rubric_current(stage="end2end")
    if rubric is None:
        raise SystemExit("no active end2end rubric: run the migrations first")
    return rubric.pk


# ---------------------------------------------------------------- the report


def _report(args, results: dict) -> None:
    print()
    spread: SpreadRound | None = results.get("queue")
    rate: RateRound | None = results.get("rpm")
    loop = results.get("loop")
    scale, conc = args.time_scale, args.concurrency
    print(
        f"answer times                  lognormal, median {MEDIAN * scale:.3g} s, "
        f"p95 {P95 * scale:.3g} s (8 s and 40 s x time scale {scale:g})"
    )
    if spread is not None:
        delays = spread.delays
        ideal = sum(delays) / conc
        schedule = _zero_overhead(delays, conc)
        fifo = schedule[-1] if schedule else 0.0
        n = spread.n
        print(f"(a) judgments                 {n}, {conc} calls in flight")
        print(
            f"    queue                     {spread.seconds:.2f} s "
            f"({n / spread.seconds:.1f} judgments/s); at most {spread.most_in_flight} calls "
            "at the server at once"
        )
        print(
            f"    ideal (sum / concurrency) {ideal:.2f} s "
            f"(the server answered {len(delays)} calls, mean {_mean(delays):.3g} s)"
        )
        print(
            f"    queue / ideal             {spread.seconds / ideal:.3f}x   (a bound no queue "
            f"reaches when its longest answer, {max(delays, default=0):.2f} s, is near it)"
        )
        print(
            f"    zero-overhead schedule    {fifo:.2f} s, the same answers in {conc}-slot FIFO "
            f"order: queue / that {spread.seconds / fifo:.3f}x   (goal <= 1.05x)"
            if fifo
            else "    zero-overhead schedule    -"
        )
        if schedule:
            # The last answers decide the end; the bulk shows the site's own cost.
            queue90, ideal90 = _at_share(spread.finishes, 0.9), _at_share(schedule, 0.9)
            print(
                f"    90% of judgments done     queue {queue90:.2f} s, zero-overhead "
                f"{ideal90:.2f} s: {queue90 / ideal90:.3f}x"
            )
        cores = os.cpu_count() or 1
        print(
            f"(c) worker CPU                {spread.worker_cpu:.1f} s, "
            f"{1000 * spread.worker_cpu / n:.1f} ms per judgment (LLM server "
            f"{spread.server_cpu:.1f} s; machine {spread.machine_cpu:.1f} s of "
            f"{cores * spread.seconds:.1f} s on {cores} cores, load average "
            f"{os.getloadavg()[0]:.1f})"
        )
    if rate is not None:
        achieved = rate.requests / (rate.span + rate.window) * rate.window
        print(
            f"(b) rate limit R              {rate.limit} requests per window of "
            f"{rate.window:.3g} s (60 s x {scale:g}); {rate.requests} requests in "
            f"{rate.seconds:.2f} s"
        )
        print(
            f"    achieved rate             {achieved:.1f} per window, "
            f"{100 * achieved / rate.limit:.1f}% of R   (goal >= 95%)"
        )
        print(
            f"    most in any window        {rate.most_in_window} requests, "
            f"{rate.refused} answered 429   (goal <= {rate.limit}, none refused)"
        )
    if loop is not None:
        per_judgment, mean_delay = loop
        line = (
            f"plain loop                    {per_judgment:.3f} s per judgment on {args.sample} "
            f"(mean answer {mean_delay:.3f} s)"
        )
        if spread is not None:
            extrapolated = per_judgment * spread.n
            line += (
                f"; {extrapolated:.1f} s for {spread.n} (extrapolated), "
                f"{extrapolated / spread.seconds:.1f}x slower than the queue"
            )
        print(line)


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


if __name__ == "__main__":
    main()
