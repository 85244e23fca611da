"""The README's quick start, for real: scripts/quickstart.sh on a bare
environment (SQLite, no broker, no API key) serves the site with all 201
tasks, and a second run works too."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT, free_port


def start_quickstart(tmp_path: Path, port: int, mlrbench_data: Path) -> subprocess.Popen:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
        # Reuse the suite's environment instead of installing a second one.
        "VENV": str(Path(sys.executable).parent.parent),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'quickstart.sqlite3'}",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "MLRBENCH_DATA": str(mlrbench_data),
        "PORT": str(port),
    }
    return subprocess.Popen(
        ["bash", str(PROJECT_ROOT / "scripts/quickstart.sh")],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def fetch(url: str, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def stop(process: subprocess.Popen) -> str:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    return output


@pytest.fixture
def venv_is_installed():
    stamp = Path(sys.prefix) / ".mlrbench-installed"
    if not stamp.exists():
        pytest.fail(f"run the suite through scripts/test.sh so that {stamp} exists")


def test_quickstart_serves_real_tasks_on_sqlite_and_runs_twice(
    tmp_path, mlrbench_data, venv_is_installed
):
    for run in ("first", "second"):
        port = free_port()
        process = start_quickstart(tmp_path, port, mlrbench_data)
        try:
            deadline = time.monotonic() + 180
            home = fetch(f"http://127.0.0.1:{port}/", deadline)
            task = fetch(f"http://127.0.0.1:{port}/tasks/iclr2025_bi_align/", deadline)
            api = fetch(f"http://127.0.0.1:{port}/api/tasks/?year=2023", deadline)
            health = fetch(f"http://127.0.0.1:{port}/healthz", deadline)
            objective = fetch(
                f"http://127.0.0.1:{port}/tasks/neurips2025_objective_curve_fitting/", deadline
            )
        finally:
            output = stop(process)
        # The 201 MLR-Bench tasks and the site's own objective example task.
        # The 201 MLR-Bench tasks; the site's objective task is counted apart.
        assert 'data-testid="task-count">201<' in home, (run, output)
        assert 'data-testid="objective-task-count"' in home, (run, output)
        # Its example methods ran in the sandbox: a real objective leaderboard.
        assert objective.count('data-testid="objective-result"') == 2, output
        assert "90.6%" in objective and "0.0%" in objective
        assert "Bidirectional Human-AI Alignment" in task
        assert json.loads(api)["count"] == 73
        assert json.loads(health)["checks"]["broker"]["mode"] == "eager"
        expected = "tasks: 201 created" if run == "first" else "done: nothing new"
        assert expected in output, output
        # The imported judges are inactive: the last lines say so, with the commands.
        assert json.loads(health)["active_judges"] == 0
        hint = output[output.index("No judge is active") :]
        assert "--api-key-env ANTHROPIC_API_KEY" in hint and "--api-base" in hint, output
        assert hint.index("--api-base") < hint.index("==> serving on")
