"""How long the site's processes take to start, side by side in one run, against
`python -c "import django; django.setup()"` with the same settings:

- a management command that loads the apps (`manage.py objective_task list`:
  the apps, the system checks with every URL module, one query);
- a Celery worker (thread pool, a queue of its own) until it logs `ready.` and
  until it answers a ping;
- gunicorn and the dev server (`runserver --noreload`) until the first answer
  of `/healthz`.

Goals (issue 28): each within 3x of django.setup() and at most 1.5 s on an
idle machine (the load average is printed beside the figures: on a busy
machine the seconds are not comparable, the ratios still are). Every figure is
the median of `--repeats` starts, taken in turns.

    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python perf/startup.py [--repeats 5]

Needs `REDIS_URL` (or `CELERY_BROKER_URL`) for the worker; the database is a
SQLite file of the script's own whose tables are created from the models (no
migrations to run, no data). `--smoke` starts each process once: it checks the
script still works (CI runs it), its figures are one sample each.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
SETTINGS = "mlrbench_site.settings"
WAIT_SECONDS = 120  # a start that takes longer is broken, not slow

TABLES_FROM_MODELS = """
import django
from django.conf import settings
django.setup()
from django.apps import apps
from django.core.management import call_command
settings.MIGRATION_MODULES = {app.label: None for app in apps.get_app_configs()}
call_command("migrate", run_syncdb=True, verbosity=0)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(folder: Path) -> dict[str, str]:
    broker = os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL", "")
    if not broker:
        sys.exit("set REDIS_URL (or CELERY_BROKER_URL): the worker needs a broker")
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "DATABASE_URL": f"sqlite:///{folder / 'startup.sqlite3'}",
        "CELERY_BROKER_URL": broker,
        "MEDIA_ROOT": str(folder / "media"),
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "perf-only-secret-key",
        "DEBUG": "0",
        "STATIC_MANIFEST": "0",  # no collectstatic in a scratch folder
        "PYTHONUNBUFFERED": "1",
    }


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _start(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _run_to_end(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")
    return elapsed


def django_setup(env: dict[str, str]) -> float:
    return _run_to_end([PYTHON, "-c", "import django; django.setup()"], env)


def command(env: dict[str, str]) -> float:
    return _run_to_end([PYTHON, "manage.py", "objective_task", "list"], env)


class _Log:
    """A process's output, read as it comes; the time each wanted line first appeared."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.seen: dict[str, float] = {}
        self._wanted: tuple[str, ...] = ()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)

    def watch(self, *wanted: str) -> _Log:
        self._wanted = wanted
        self._thread.start()
        return self

    def _read(self, process: subprocess.Popen) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line)
            for text in self._wanted:
                if text in line and text not in self.seen:
                    self.seen[text] = time.perf_counter()

    def tail(self) -> str:
        return "".join(self.lines[-30:])


def _until(done: Callable[[], bool], process: subprocess.Popen, log: _Log, what: str) -> float:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if done():
            return time.perf_counter()
        if process.poll() is not None:
            sys.exit(f"{what} exited with {process.returncode}:\n{log.tail()}")
        time.sleep(0.01)
    sys.exit(f"{what} did not start within {WAIT_SECONDS} s:\n{log.tail()}")


def worker(env: dict[str, str]) -> tuple[float, float]:
    """Seconds until the worker logs `ready.` and until it answers a ping."""
    from celery import Celery

    node = f"startup-{os.getpid()}-{time.monotonic_ns()}@{socket.gethostname()}"
    # A queue of its own: a message left on the site's queues is not this run's to take.
    queue = f"startup-{os.getpid()}"
    control = Celery(broker=env["CELERY_BROKER_URL"])
    started = time.perf_counter()
    process = _start(
        [
            PYTHON,
            "-m",
            "celery",
            "-A",
            "mlrbench_site",
            "worker",
            "-Q",
            queue,
            "-n",
            node,
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "INFO",
        ],
        env,
    )
    log = _Log(process).watch(" ready.")
    try:
        _until(lambda: " ready." in log.seen, process, log, "the worker")
        ready = log.seen[" ready."]
        answered = _until(
            lambda: bool(control.control.ping(destination=[node], timeout=0.05)),
            process,
            log,
            "the worker's ping",
        )
    finally:
        _stop(process)
        control.close()
    return ready - started, answered - started


def _first_answer(url: str) -> Callable[[], bool]:
    def answered() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status == 200
        except urllib.error.HTTPError as exc:
            sys.exit(f"{url} answered {exc.code}: {exc.read()[:500]!r}")
        except OSError:  # not listening yet
            return False

    return answered


def server(env: dict[str, str], *, dev: bool) -> float:
    """Seconds until gunicorn (or the dev server) answers /healthz with 200."""
    port = _free_port()
    if dev:
        argv = [PYTHON, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    else:
        argv = [PYTHON, "-m", "gunicorn", "mlrbench_site.wsgi:application",
                "--bind", f"127.0.0.1:{port}", "--workers", "1"]  # fmt: skip
    started = time.perf_counter()
    process = _start(argv, env)
    log = _Log(process).watch()
    try:
        answered = _until(_first_answer(f"http://127.0.0.1:{port}/healthz"), process, log, argv[2])
    finally:
        _stop(process)
    return answered - started


def _row(name: str, seconds: float, reference: float) -> str:
    return f"  {name:<46} {seconds:6.2f} s  {seconds / reference:5.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one start each: does it run?")
    args = parser.parse_args()
    repeats = 1 if args.smoke else max(1, args.repeats)
    with tempfile.TemporaryDirectory(prefix="mlrbench-perf-startup-") as scratch:
        folder = Path(scratch)
        env = _environment(folder)
        _run_to_end([PYTHON, "-c", TABLES_FROM_MODELS], env)
        samples: dict[str, list[float]] = {}
        load_before = os.getloadavg()[0]
        for _ in range(repeats):
            # In turns, so a busy minute weighs on every figure alike.
            samples.setdefault("setup", []).append(django_setup(env))
            samples.setdefault("command", []).append(command(env))
            ready, ping = worker(env)
            samples.setdefault("ready", []).append(ready)
            samples.setdefault("ping", []).append(ping)
            samples.setdefault("gunicorn", []).append(server(env, dev=False))
            samples.setdefault("runserver", []).append(server(env, dev=True))
        load_after = os.getloadavg()[0]
    median = {name: statistics.median(values) for name, values in samples.items()}
    reference = median["setup"]
    print(
        f"process start, median of {repeats} (load average {load_before:.1f} before, "
        f"{load_after:.1f} after, {os.cpu_count()} cores)"
    )
    print(f"  {'django.setup() (the reference)':<46} {reference:6.2f} s  1.00x")
    print(_row("manage.py objective_task list", median["command"], reference))
    print(_row("celery worker: logs ready", median["ready"], reference))
    print(_row("celery worker: first ping answered", median["ping"], reference))
    print(_row("gunicorn: first /healthz answered", median["gunicorn"], reference))
    print(_row("runserver --noreload: first /healthz answered", median["runserver"], reference))
    slowest = max(median[name] for name in ("command", "ping", "gunicorn", "runserver"))
    print(
        f"goal: each within 3x of django.setup() (slowest {slowest / reference:.2f}x) "
        f"and at most 1.5 s on an idle machine (slowest {slowest:.2f} s)"
    )


if __name__ == "__main__":
    main()
