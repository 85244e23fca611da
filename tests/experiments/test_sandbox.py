"""Submitted code that tries to escape the sandbox is blocked or killed, the
run's status says which, and the next run on the same worker works."""

import os
import socket
import textwrap

import pytest
from django.conf import settings
from django.core.files.storage import default_storage

from experiments.models import ExperimentLimit, ExperimentStatus
from experiments.queue import experiment_queue
from experiments.runner import experiment_execute
from sandbox import processes_of_uid
from tests.experiments.factories import submission_with_files

pytestmark = pytest.mark.django_db


def run_code(code: str, **queue_options):
    """Queue a reproduction run of `code` (as attempt.py) and run it on this worker."""
    submission = submission_with_files(
        {"run.sh": "exec python3 attempt.py\n", "attempt.py": textwrap.dedent(code)}
    )
    run = experiment_queue(submission=submission, phase="repro", **queue_options)
    return experiment_execute(run_id=run.pk)


def log_of(run) -> str:
    with run.log.open("rb") as handle:
        return handle.read().decode(errors="replace")


def everything_written(run) -> str:
    """The log and every output the run left, as text."""
    text = log_of(run)
    for output in run.outputs:
        name = f"experiments/{run.pk}/outputs/{output['path']}"
        if default_storage.exists(name):
            with default_storage.open(name, "rb") as handle:
                text += handle.read().decode(errors="replace")
    return text


def assert_worker_healthy():
    """A plain run right after works, and nothing of the runs before is alive."""
    run = run_code("print('healthy', sum(range(10)))")
    assert run.status == ExperimentStatus.SUCCEEDED, log_of(run)
    assert "healthy 45" in log_of(run)
    for slot in range(settings.SANDBOX_MAX_JOBS):
        assert processes_of_uid(settings.SANDBOX_UID_BASE + slot) == []


@pytest.fixture(autouse=True)
def _settings(experiment_settings):
    return experiment_settings


def test_a_connection_to_the_sites_own_port_is_refused():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]

        run = run_code(
            f"""
            import socket
            connection = socket.create_connection(("127.0.0.1", {port}), timeout=5)
            connection.sendall(b"escaped")
            print("connected to the site")
            """
        )

        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever reached the site's port
    assert run.status == ExperimentStatus.FAILED
    assert "connected to the site" not in log_of(run)
    assert "ConnectionRefusedError" in log_of(run) or "unreachable" in log_of(run)
    assert_worker_healthy()


def test_files_outside_its_folder_cannot_be_read(experiment_root):
    secret = experiment_root / "worker-secret.txt"
    secret.write_text("the-worker-secret-4711")
    os.chmod(secret, 0o644)  # readable by anyone who could see it
    other = submission_with_files({"private.py": "OTHER_SUBMISSION_SECRET = 1\n"})
    # Where the artifact store keeps it on this host, when it is a local folder.
    stored = other.artifacts.get().file.name
    assert stored
    other_file = os.path.join(settings.MEDIA_ROOT, stored)

    run = run_code(
        f"""
        import os
        print("root holds", sorted(os.listdir("/")))
        for path in [{str(secret)!r}, {other_file!r}, "../../worker-secret.txt",
                     "/etc/shadow", {str(settings.BASE_DIR / "pyproject.toml")!r}]:
            try:
                print(open(path).read())
            except OSError as exc:
                print("blocked:", path, type(exc).__name__)
        open({str(secret)!r}).read()
        """
    )

    assert run.status == ExperimentStatus.FAILED
    seen = everything_written(run)
    assert "the-worker-secret-4711" not in seen
    assert "OTHER_SUBMISSION_SECRET" not in seen
    assert "mlrbench-site" not in seen  # the project's own files
    assert seen.count("blocked:") == 5
    assert_worker_healthy()


def test_files_outside_its_folder_cannot_be_written(experiment_root):
    drop = experiment_root / "drop"
    drop.mkdir()
    os.chmod(drop, 0o777)  # even a folder anyone may write to stays out of reach

    run = run_code(
        f"""
        for path in [{str(drop / "escaped.txt")!r}, "/usr/escaped.txt", "/escaped.txt"]:
            try:
                open(path, "w").write("escaped")
                print("wrote", path)
            except OSError as exc:
                print("blocked:", path, type(exc).__name__)
        open({str(drop / "escaped.txt")!r}, "w").write("escaped")
        """
    )

    assert run.status == ExperimentStatus.FAILED
    assert list(drop.iterdir()) == []
    assert not os.path.exists("/usr/escaped.txt") and not os.path.exists("/escaped.txt")
    assert log_of(run).count("blocked:") == 3
    assert_worker_healthy()


def test_a_fork_bomb_is_killed_at_the_process_limit():
    run = run_code(
        """
        import os, time
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
        """
    )

    assert run.status == ExperimentStatus.FAILED
    assert run.limit_hit == ExperimentLimit.PROCESSES
    assert "processes" in run.reason
    assert_worker_healthy()


def test_a_huge_file_stops_at_the_bytes_written_limit():
    run = run_code(
        """
        with open("huge.bin", "wb") as handle:
            while True:
                handle.write(b"x" * (1 << 20))
        """
    )

    assert run.status == ExperimentStatus.FAILED
    assert run.limit_hit == ExperimentLimit.DISK
    huge = next(output for output in run.outputs if output["path"] == "huge.bin")
    assert huge["size"] <= settings.SANDBOX_DISK_BYTES
    assert_worker_healthy()


def test_the_workers_secret_environment_is_not_visible(monkeypatch):
    monkeypatch.setenv("MLRBENCH_WORKER_API_KEY", "sk-worker-secret-0815")

    run = run_code(
        """
        import glob, os
        print("environ:", dict(os.environ))
        for path in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):
            try:
                print(path, open(path, "rb").read().replace(b"\\0", b" ").decode())
            except OSError as exc:
                print("blocked:", path, type(exc).__name__)
        """
    )

    assert run.status == ExperimentStatus.SUCCEEDED
    seen = everything_written(run)
    assert "environ:" in seen and "/proc/1/environ" in seen
    assert "sk-worker-secret-0815" not in seen
    assert os.environ["SECRET_KEY"] not in seen
    assert os.environ["DATABASE_URL"] not in seen
    assert "CUDA_VISIBLE_DEVICES" in seen  # the allow-listed variables are there
    assert_worker_healthy()


def test_an_infinite_loop_is_killed_at_the_time_limit():
    run = run_code("while True:\n    pass\n", time_limit_seconds=2)

    assert run.status == ExperimentStatus.TIMED_OUT
    assert run.limit_hit == ExperimentLimit.WALL_TIME
    assert 2 <= run.wall_seconds < 30
    assert_worker_healthy()


@pytest.mark.parametrize("cgroups", ["auto", "off"])
def test_a_memory_hog_is_stopped_at_the_memory_limit(settings, cgroups):
    # "off" is what a host without writable cgroups gets: RLIMIT_DATA and a watchdog.
    settings.SANDBOX_CGROUPS = cgroups
    run = run_code(
        """
        import time
        hoard = []
        while True:
            hoard.append(bytearray(8 << 20))
            hoard[-1][::4096] = b"x" * len(hoard[-1][::4096])
            time.sleep(0.01)
        """
    )

    assert run.status == ExperimentStatus.FAILED
    assert run.limit_hit == ExperimentLimit.MEMORY, (run.reason, log_of(run)[-500:])
    assert_worker_healthy()


def test_background_processes_do_not_outlive_the_run():
    run = run_code(
        """
        import subprocess
        subprocess.Popen(["sleep", "600"], start_new_session=True)
        subprocess.Popen(["sh", "-c", "nohup sleep 600 &"])
        print("left two sleepers behind")
        """
    )

    assert run.status == ExperimentStatus.SUCCEEDED
    assert "left two sleepers behind" in log_of(run)
    assert_worker_healthy()  # checks that no process of any slot's uid is alive
