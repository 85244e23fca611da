"""The judge queue under faults, end to end (issue 20): judgments in flight
through real Celery worker processes (thread pool) and beat, on a Redis of
the drill's own, against the loopback server answering a share of 429, 500
and garbage; then a worker killed with SIGKILL, the Redis restarted (down for
two seconds) and the workers' PostgreSQL connections terminated. Nothing is
done by hand afterwards: the reaper (beat) must bring every judgment to
`done`, exactly once.

Used by tests/judging/test_faults.py and perf/faults.py, in a process whose
Django database is a test database the workers can reach.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connection

from tests.support.workers import database_url, processes_stop, worker_command, worker_start

ROOT = Path(__file__).resolve().parents[2]
TEST_KEY = "sk-test-judge-key"


@dataclass(frozen=True)
class DrillOptions:
    judgments: int = 300
    workers: int = 2
    threads: int = 8
    answer_seconds: float = 0.2
    error_share: float = 0.3  # of answers: 429, 500 and garbage in equal parts
    reap_interval: int = 2
    # How long a silent run keeps its judgment (JUDGE_LEASE_STALE_SECONDS) and how
    # often a live one says so (JUDGE_HEARTBEAT_SECONDS). The hard limit and the
    # resend interval stay the site's defaults unless given: recovery must come
    # from the lease and the broker's return, not from a limit shortened for the
    # drill (with the defaults, 12 and 15 minutes).
    stale_seconds: int = 12
    heartbeat_seconds: int = 2
    # A run gives up at its soft limit: under a loaded CI machine and a Redis
    # outage (the rate limiter waits a second a try), 10 s failed honest runs.
    soft_limit: int = 30
    hard_limit: int | None = None
    resend_after: int | None = None
    deadline_seconds: float = 240.0
    seed: int = 1
    # Which faults, in which order; faults in one tuple happen at once.
    faults: tuple[tuple[str, ...], ...] = (("kill",), ("redis",), ("connections",))


@dataclass
class DrillResult:
    seconds: float  # from the first message to the last judgment done
    statuses: dict[str, int]
    scores_per_judgment: set[int]
    llm_requests: int
    faults: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Judgments whose judge served a usable review more than once (one was paid
    # for nothing: its run was given up, or its worker died, before recording it).
    reviews_paid_twice: int = 0
    # Judgments with more scores than the rubric's five dimensions.
    scored_twice: int = 0

    @property
    def all_done_once(self) -> bool:
        return set(self.statuses) == {"done"} and len(self.scores_per_judgment) == 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Redis:
    """A redis-server of the drill's own, restarted on the same port."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server") or "redis-server"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("the drill's Redis did not start")

    def stop(self, *, gracefully: bool = False) -> None:
        """SIGKILL, or SIGTERM (what `docker restart` and systemd send: Redis closes
        its clients' connections before it exits)."""
        if self.process is not None and self.process.poll() is None:
            if gracefully:
                self.process.terminate()
            else:
                self.process.kill()
            self.process.wait()


class FaultDrill:
    def __init__(self, options: DrillOptions, *, media_root: str, keep_logs_in: Path | None = None):
        from tests.support.fake_llm import FakeLLMServer

        self.options = options
        self.media_root = media_root
        self.keep_logs_in = keep_logs_in
        self.redis = _Redis()
        self.server = FakeLLMServer(default=self._behaviour)
        self._random = random.Random(options.seed)  # noqa: S311 - a test's answers
        self._lock = threading.Lock()
        self.reviews_served: Counter[tuple[str, str]] = Counter()
        self.workers: list[subprocess.Popen[bytes]] = []
        self.killed: list[subprocess.Popen[bytes]] = []
        self._own_pid = 0
        self.beat: subprocess.Popen[bytes] | None = None
        self._scratch = Path(tempfile.mkdtemp(prefix="mlrbench-drill-"))

    # -------------------------------------------------------------- the model
    def _behaviour(self, body: dict):
        from tests.support.fake_llm import answer, error

        from .helpers import review_answer

        delay = self.options.answer_seconds
        with self._lock:
            roll = self._random.random()
        share = self.options.error_share / 3
        if roll < share:
            return error(429, "slow down", delay=delay)
        if roll < 2 * share:
            return error(500, "upstream failed", delay=delay)
        if roll < 3 * share:
            return answer("I think the paper is fine.", delay=delay)
        # A usable review: what a judgment pays for once. Which judgment asked is
        # in its prompt (the task's marker) and the judge's model.
        marker = re.search(r"drill-marker-(\w+)", json.dumps(body.get("messages", "")))
        with self._lock:
            self.reviews_served[(str(body.get("model")), marker.group(1) if marker else "")] += 1
        return answer(review_answer("end2end"), delay=delay)

    # ---------------------------------------------------------------- set-up
    def _env(self) -> dict[str, str]:
        o = self.options
        return {
            **os.environ,
            "DATABASE_URL": database_url(connection.settings_dict),
            "REDIS_URL": self.redis.url,
            "CELERY_BROKER_URL": self.redis.url,
            "MEDIA_ROOT": self.media_root,
            "TEST_JUDGE_KEY": TEST_KEY,
            "SECRET_KEY": "test-only-secret-key",
            "DEBUG": "0",
            # Connections reused across tasks: the case that used to block recovery.
            "CONN_MAX_AGE": "60",
            "LLM_RETRY_ATTEMPTS": "10",
            "LLM_RETRY_BASE_SECONDS": "0.05",
            "LLM_RETRY_MAX_SECONDS": "0.3",
            "JUDGE_MAX_REASKS": "6",
            "JUDGE_TASK_SOFT_TIME_LIMIT": str(o.soft_limit),
            "JUDGE_REAP_INTERVAL_SECONDS": str(o.reap_interval),
            "JUDGE_LEASE_STALE_SECONDS": str(o.stale_seconds),
            "JUDGE_HEARTBEAT_SECONDS": str(o.heartbeat_seconds),
            **({"JUDGE_TASK_TIME_LIMIT": str(o.hard_limit)} if o.hard_limit else {}),
            **({"JUDGE_RESEND_QUEUED_SECONDS": str(o.resend_after)} if o.resend_after else {}),
        }

    def _log(self, name: str):
        return open(self._scratch / f"{name}.log", "ab")  # noqa: SIM115 - the child's

    def _start_worker(self) -> subprocess.Popen[bytes]:
        node = f"drill-{uuid.uuid4().hex[:8]}@%h"
        command = worker_command(
            "judge", node=node, pool="threads", concurrency=self.options.threads, loglevel="WARNING"
        )
        with self._log(f"worker-{len(self.workers) + len(self.killed)}") as log:
            worker = worker_start(command, self._env(), stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(worker)
        return worker

    def _start_beat(self) -> None:
        with self._log("beat") as log:
            self.beat = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "mlrbench_site", "beat", "--loglevel",
                 "WARNING", "-s", str(self._scratch / "beat-schedule")],
                cwd=ROOT, env=self._env(), start_new_session=True,
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def problems(self) -> list[str]:
        """What the workers and beat logged that must never happen: a worker that
        stopped on its own, an unrecoverable error, a scheduling error."""
        found = [
            f"worker {worker.pid} exited on its own ({worker.returncode})"
            for worker in self.workers
            if worker.poll() is not None
        ]
        for log in sorted(self._scratch.glob("*.log")):
            for line in log.read_text(errors="replace").splitlines():
                # Beat cannot send while the broker is down: that is the outage, not
                # a fault of the schedule; any other reason is.
                unsendable = "Couldn't apply scheduled task" in line and not any(
                    outage in line for outage in ("Connection refused", "ConnectionError")
                )
                if unsendable or "Unrecoverable error" in line:
                    found.append(f"{log.stem}: {line.strip()[:300]}")
        return found

    def _data(self) -> list[int]:
        from judging.models import Judgment
        from judging.services.rubrics import ensure_default_rubrics, rubric_current

        from .conftest import TASK_TEXT, end2end_submission
        from .factories import JudgeFactory

        ensure_default_rubrics()
        rubric = rubric_current(stage="end2end")  # the score rubric
        run = uuid.uuid4().hex[:6]
        judges = [
            JudgeFactory(
                name=f"drill-{run}-{n}", model=f"openai/drill-{n}", api_base=self.server.url
            )
            for n in range(2)
        ]
        ids = []
        for n in range((self.options.judgments + 1) // 2):
            slug = f"iclr2025_drill{run}{n}"
            submission = end2end_submission(
                task_slug=slug, task_description=f"{TASK_TEXT}\n\ndrill-marker-{slug}"
            )
            for judge in judges:
                if len(ids) < self.options.judgments:
                    ids.append(
                        Judgment.objects.create(
                            submission=submission, judge=judge, rubric=rubric
                        ).pk
                    )
        return ids

    def _send(self, ids: list[int]) -> None:
        from judging.tasks import judgment_run_task

        app = judgment_run_task.app
        with app.connection_for_write(self.redis.url) as conn:
            for judgment_id in ids:
                judgment_run_task.apply_async((judgment_id,), connection=conn)

    # ---------------------------------------------------------------- faults
    def _done_share(self, ids: list[int]) -> float:
        from judging.models import Judgment

        done = Judgment.objects.filter(pk__in=ids, status="done").count()
        return done / max(len(ids), 1)

    def _kill_a_worker(self) -> str:
        victim = self.workers[0]
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        self.workers.remove(victim)
        self.killed.append(victim)
        self._start_worker()
        return "a worker killed with SIGKILL (and a new one started)"

    def _restart_redis(self) -> str:
        self.redis.stop(gracefully=True)
        time.sleep(2.0)
        self.redis.start()
        return "Redis restarted (down 2 s, its queue lost)"

    def _terminate_connections(self) -> str:
        # Every connection of the database but the drill's own (its main thread's;
        # this may run in a thread beside another fault, on a connection of its own).
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND pid <> %s",
                    [self._own_pid],
                )
                (count,) = cursor.fetchone()
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()
        return f"{count} PostgreSQL connection(s) of the workers terminated"

    def _wait(self, ids: list[int], until, started: float) -> None:
        while not until():
            if time.monotonic() - started > self.options.deadline_seconds:
                return
            time.sleep(0.25)

    # ---------------------------------------------------------------- the run
    def run(self, *, faults: bool) -> DrillResult:
        from django.db.models import Count

        from judging.models import Judgment

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (self._own_pid,) = cursor.fetchone()
        self.redis.start()
        for _ in range(self.options.workers):
            self._start_worker()
        self._start_beat()
        ids = self._data()
        time.sleep(3.0)  # the workers connect to the broker
        started = time.monotonic()
        self._send(ids)
        done_faults: list[str] = []
        if faults:
            doers = {
                "kill": self._kill_a_worker,
                "redis": self._restart_redis,
                "connections": self._terminate_connections,
            }
            steps = self.options.faults
            for n, names in enumerate(steps):
                share = 0.2 + 0.3 * n / max(len(steps) - 1, 1)
                self._wait(ids, lambda s=share: self._done_share(ids) >= s, started)
                # Faults of one step at once: each in its own thread.
                with ThreadPoolExecutor(max_workers=len(names)) as pool:
                    done_faults.extend(pool.map(lambda name: doers[name](), names))

        def finished() -> bool:
            return not Judgment.objects.filter(pk__in=ids).exclude(status="done").exists()

        self._wait(ids, finished, started)
        seconds = time.monotonic() - started
        statuses = dict(
            Judgment.objects.filter(pk__in=ids)
            .values_list("status")
            .annotate(n=Count("id"))
            .values_list("status", "n")
        )
        counts = list(
            Judgment.objects.filter(pk__in=ids)
            .annotate(n=Count("scores"))
            .values_list("n", flat=True)
        )
        per_judgment = set(counts)
        return DrillResult(
            seconds=seconds,
            statuses=statuses,
            scores_per_judgment=per_judgment,
            llm_requests=len(self.server.requests),
            faults=done_faults,
            problems=self.problems(),
            reviews_paid_twice=sum(1 for n in self.reviews_served.values() if n > 1),
            scored_twice=sum(1 for n in counts if n > 5),
        )

    def close(self) -> None:
        processes_stop([*self.workers, self.beat], timeout=15)
        if self.keep_logs_in is not None:
            for log in self._scratch.glob("*.log"):
                shutil.copy(log, self.keep_logs_in / log.name)
        self.redis.stop()
        self.server.close()
        shutil.rmtree(self._scratch, ignore_errors=True)
