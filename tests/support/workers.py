"""Real Celery worker processes on the configured broker: started, waited for
until they answer a ping, and stopped (the whole process group). Used by the
`celery_worker_process` fixture (tests/conftest.py), the judging fault drill
and perf/judge_throughput.py; nothing here needs pytest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.waiting import WaitTimeout, wait_until

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent


class WorkerStartError(RuntimeError):
    """A worker exited, or did not answer in time, while starting."""


def database_url(db: Mapping[str, Any]) -> str:
    """The URL of the database a Django connection's settings name (what a
    worker process is given as DATABASE_URL, so it uses the same database)."""
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def worker_command(
    queues: str,
    *,
    node: str,
    pool: str = "prefork",
    concurrency: int = 1,
    loglevel: str = "INFO",
    extra_args: Sequence[str] = (),
) -> list[str]:
    """`celery worker` for this project's app on `queues`, named `node`."""
    return [
        sys.executable, "-m", "celery", "-A", "mlrbench_site", "worker", "-Q", queues,
        "--pool", pool, "--concurrency", str(concurrency), "-n", node,
        "--without-mingle", "--without-gossip", "--loglevel", loglevel, *extra_args,
    ]  # fmt: skip


def worker_start(command: list[str], env: Mapping[str, str], **popen: Any) -> subprocess.Popen:
    """The worker process, in a session of its own (so that stopping it stops
    its pool's children too), run from the project root."""
    return subprocess.Popen(
        command, cwd=PROJECT_ROOT, env=dict(env), start_new_session=True, **popen
    )


def queues_purge(app, names: Iterable[str] | None = None) -> None:
    """Empty the named queues (all the app's queues by default), so that leftover
    messages never reach a new worker; each declared first: RabbitMQ refuses to
    purge a queue it does not have yet."""
    queues = app.amqp.queues
    with app.connection_for_write() as conn:
        for queue in [queues[name] for name in names] if names is not None else queues.values():
            queue(conn.default_channel).declare()
            queue(conn.default_channel).purge()


def workers_wait_ready(
    app,
    workers: Sequence[subprocess.Popen],
    nodes: Sequence[str],
    *,
    timeout: float,
    ping_timeout: float,
) -> None:
    """Return once every node answers a ping; raise WorkerStartError as soon as a
    worker exits, or after `timeout` seconds."""

    def all_answer() -> bool:
        for worker in workers:
            if worker.poll() is not None:
                raise WorkerStartError(f"the Celery worker exited with {worker.returncode}")
        return len(app.control.ping(destination=list(nodes), timeout=ping_timeout)) == len(nodes)

    try:
        # The ping itself waits `ping_timeout` for the answers: no pause between.
        wait_until(all_answer, timeout=timeout, interval=0, message="the Celery workers")
    except WaitTimeout as timed_out:
        raise WorkerStartError(
            f"the Celery worker did not answer within {timeout:g} s"
        ) from timed_out


def processes_stop(processes: Iterable[subprocess.Popen | None], *, timeout: float) -> None:
    """SIGTERM to each process's group, then SIGKILL to any still running after
    `timeout` seconds (a warm shutdown first: tasks finish or are given back)."""
    started = [process for process in processes if process is not None]
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in started:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
