"""The README's quick start, for real: scripts/quickstart.sh on a bare
environment (SQLite, no broker, no API key) serves the site with all 201
tasks, and a second run works too."""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_ROOT, free_port
from tests.support.waiting import wait_until


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
        # The local settings file the quick start writes (`.env.local` in a user's clone).
        "MLRBENCH_ENV_FILE": str(tmp_path / ".env.local"),
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
    """The page's text, asked again while the server is still starting (until `deadline`)."""

    def page() -> str:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()

    return wait_until(
        page,
        timeout=max(deadline - time.monotonic(), 0),
        interval=0.5,
        message=url,
        ignoring=(OSError,),
    )


def stop(process: subprocess.Popen) -> str:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    return output


@pytest.fixture
def venv_is_installed():
    """The quick start must find the suite's environment current (scripts/venv.sh's
    stamp: the checksum of pyproject.toml and uv.lock), or it would sync it mid-test."""
    stamp = Path(sys.prefix) / ".mlrbench-installed"
    locked = (PROJECT_ROOT / "pyproject.toml").read_bytes() + (
        PROJECT_ROOT / "uv.lock"
    ).read_bytes()
    if not stamp.exists() or stamp.read_text().strip() != hashlib.sha256(locked).hexdigest():
        pytest.fail(f"run the suite through scripts/test.sh so that {stamp} is uv.lock's")


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
    assert_hints_run_in_a_new_shell(tmp_path, hint[: hint.index("==> serving on")])


def hint_commands(hint: str) -> list[str]:
    commands = []
    for line in hint.splitlines():
        line = line.strip().removeprefix("then: ")
        if "manage.py" in line and line.startswith("/"):
            commands.append(line)
    return commands


def in_a_new_shell(tmp_path: Path, command: str) -> subprocess.CompletedProcess:
    """What a user types in a new terminal: no DEBUG, SECRET_KEY or DATABASE_URL."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "MLRBENCH_ENV_FILE": str(tmp_path / ".env.local"),
    }
    return subprocess.run(
        ["bash", "-c", command],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def assert_hints_run_in_a_new_shell(tmp_path: Path, hint: str) -> None:
    from tests.support.fake_llm import FakeLLMServer, answer

    settings_file = (tmp_path / ".env.local").read_text()
    assert "DEBUG=1" in settings_file and "SECRET_KEY=" in settings_file
    assert f"DATABASE_URL=sqlite:///{tmp_path / 'quickstart.sqlite3'}" in settings_file
    hosted, local, pending = hint_commands(hint)
    # No key and no local server here: each says so and adds nothing.
    for command, says in ((hosted, "did not answer"), (local, "could not connect")):
        result = in_a_new_shell(tmp_path, command)
        output = result.stdout + result.stderr
        assert "ImproperlyConfigured" not in output, output
        assert result.returncode != 0 and says in output, output
    result = in_a_new_shell(tmp_path, pending)
    # No judge yet: one clear refusal that says how to add one, nothing queued
    # (issue 39: it used to say "skipped", then "2 submission(s) to judge", and exit 0).
    assert result.returncode != 0, result.stdout + result.stderr
    assert "no judge is active" in result.stderr and "judges add" in result.stderr
    # The local recipe against a running OpenAI-compatible server: checked and added.
    server = FakeLLMServer(default=answer("ok"))
    try:
        result = in_a_new_shell(tmp_path, local.replace("http://127.0.0.1:8081/v1", server.url))
    finally:
        server.close()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checked: " in result.stdout and "added judge local-qwen" in result.stdout
    assert server.requests and server.requests[0].headers["authorization"] == "Bearer no-key-needed"


def test_the_settings_read_the_quick_starts_own_file_before_a_deployments(tmp_path):
    """Issue 37: the quick start writes `.env.local` (DEBUG on, a development
    key); `.env` is docker-compose's env_file, made from .env.example. With both
    present the quick start's wins; MLRBENCH_ENV_FILE names another file."""
    from mlrbench_site.settings.base import env_file_path

    assert env_file_path(tmp_path, None) == tmp_path / ".env"
    (tmp_path / ".env").write_text("DEBUG=0\n")
    assert env_file_path(tmp_path, None) == tmp_path / ".env"
    (tmp_path / ".env.local").write_text("DEBUG=1\n")
    assert env_file_path(tmp_path, None) == tmp_path / ".env.local"
    assert env_file_path(tmp_path, "") == tmp_path / ".env.local"
    named = tmp_path / "elsewhere.env"
    assert env_file_path(tmp_path, str(named)) == named


def _run_the_move(clone: Path, script: str) -> subprocess.CompletedProcess:
    """The quick start's choice of its settings file, as the script makes it."""
    move = script[
        script.index("ENV_FILE=${MLRBENCH_ENV_FILE") : script.index('if [ ! -f "$ENV_FILE" ]')
    ]
    (clone / "move.sh").write_text("set -euo pipefail\n" + move + 'echo "file=$ENV_FILE"\n')
    return subprocess.run(
        ["bash", "move.sh"],
        cwd=clone,
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_quick_starts_file_is_not_docker_composes(tmp_path):
    """The quick start's file (DEBUG=1, a development SECRET_KEY) is neither
    docker-compose's env_file nor in git or an image; an earlier quick start's
    `.env` moves to it, a deployment's `.env` stays."""
    script = (PROJECT_ROOT / "scripts/quickstart.sh").read_text()
    default = re.search(r"^ENV_FILE=\$\{MLRBENCH_ENV_FILE:-([^}]+)\}$", script, re.M)
    assert default and default.group(1) == ".env.local"
    compose = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())
    assert {entry["path"] for entry in compose["x-app"]["env_file"]} == {".env"}
    assert "/.env.local" in (PROJECT_ROOT / ".gitignore").read_text().splitlines()
    assert ".env.*" in (PROJECT_ROOT / ".dockerignore").read_text().splitlines()

    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".env").write_text("# Written by scripts/quickstart.sh: ...\nDEBUG=1\n")
    done = _run_the_move(clone, script)
    assert done.returncode == 0, done.stderr
    assert "file=.env.local" in done.stdout
    assert not (clone / ".env").exists() and "DEBUG=1" in (clone / ".env.local").read_text()

    (clone / ".env.local").unlink()
    (clone / ".env").write_text("# PRODUCTION settings: ...\nDEBUG=0\n")
    done = _run_the_move(clone, script)
    assert done.returncode == 0, done.stderr
    assert (clone / ".env").exists() and not (clone / ".env.local").exists()
