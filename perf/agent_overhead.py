"""MLR-Agent's own time per step against the model's answer time, side by side
in one run: a whole end-to-end run inline (idea, literature review, proposal,
the coding loop with its sandboxed commands, paper, the intake), against the
loopback server answering every call after `--answer-seconds` (2 s). The
site's own time is the run's wall time less the answers' waits: prompt
building, the trace and the checkpoints, the sandbox's start for each `run`,
the workspace copies and the intake. Goal: under 5% of the answer time.

    .venv/bin/python perf/agent_overhead.py [--answer-seconds 2] [--steps 8] [--smoke]

`--smoke` answers after 0.05 s with the shortest loop: it checks the script
still works (CI runs it), it measures nothing worth reading. Needs bubblewrap,
PostgreSQL (DATABASE_URL; a test database is created and dropped) and Redis.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("PERF_AGENT_API_KEY", "sk-perf")
# The key policy (common/llm_policy.py): this key may go to the loopback model server.
os.environ["LLM_KEY_HOSTS"] = "PERF_AGENT_API_KEY=127.0.0.1"
GOAL = 0.05


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answer-seconds", type=float, default=2.0)
    parser.add_argument("--steps", type=int, default=8, help="coding-loop steps (4 or more)")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.answer_seconds, args.steps = 0.05, 4
    args.steps = max(args.steps, 4)
    return args


def _coding(steps: int):
    from tests.agent_runs.scripted_agent import SCRIPT
    from tests.support.fake_llm import tool_call

    # write, then alternate run and read, then finish: each `run` starts a sandbox.
    middle = [
        tool_call("run", {"command": "python3 code/experiment.py"})
        if n % 2 == 0
        else tool_call("read_file", {"path": "code/experiment.py"})
        for n in range(steps - 2)
    ]
    return [
        tool_call("write_file", {"path": "code/experiment.py", "content": SCRIPT}),
        *middle,
        tool_call("finish", {"summary": "done"}),
    ]


def _run(server_url: str) -> int:
    from agent_runs.services import agent_run_create

    (run,) = agent_run_create(
        tasks=["iclr2025_perf"],
        agent_name="mlr-agent-perf",
        model="openai/perf-model",
        api_base=server_url,
        api_key_env="PERF_AGENT_API_KEY",
    )
    return run.pk


def main() -> None:
    args = _arguments()
    root = Path(tempfile.mkdtemp(prefix="mlrbench-perf-agent-", dir="/tmp"))
    os.chmod(root, 0o755)  # noqa: S103 - the sandbox user walks through it
    os.environ["EXPERIMENT_WORK_ROOT"] = str(root / "work")
    os.environ["MEDIA_ROOT"] = str(root / "media")
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    from agent_runs.models import AgentRun
    from benchmark.models import Task
    from mlrbench_site.celery import app
    from sandbox import sandbox_problem
    from tests.agent_runs.scripted_agent import scripted_agent
    from tests.support.fake_llm import FakeLLMServer

    problem = sandbox_problem()
    if problem:
        sys.exit(f"the sandbox cannot run here: {problem}")
    app.conf.task_always_eager = True
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from common.llm import warm_up

    warm_up()  # litellm's lazy imports: once per worker process, not per step
    old_config = setup_databases(verbosity=0, interactive=False)
    behave = scripted_agent(coding=_coding(args.steps))
    server = FakeLLMServer(default=lambda body: _delayed(behave(body), args.answer_seconds))
    try:
        Task.objects.create(
            slug="iclr2025_perf", title="Perf", conference="iclr", year=2025, description="# Perf\n"
        )
        started = time.perf_counter()
        run = AgentRun.objects.get(pk=_run(server.url))
        wall = time.perf_counter() - started
        _report(args, run, wall, len(server.requests))
    finally:
        server.close()
        connection.close()
        teardown_databases(old_config, verbosity=0)


def _delayed(behaviour, seconds: float):
    behaviour.delay = seconds
    return behaviour


def _seconds(stage) -> float:
    return (stage.finished_at - stage.started_at).total_seconds()


def _report(args: argparse.Namespace, run, wall: float, calls: int) -> None:
    if run.status != "finished":
        sys.exit(f"the run did not finish: {run.failed_stage}: {run.reason}")
    answer, steps = args.answer_seconds, args.steps
    stages = {stage.name: stage for stage in run.stages.all()}
    # The agent's steps: every model call of the stages, the store (the intake) apart.
    stepped = sum(_seconds(stage) for name, stage in stages.items() if name != "store")
    own = stepped - calls * answer
    loop_own = _seconds(stages["experiment"]) - steps * answer
    per_step = own / calls
    print(f"model calls: {calls} ({steps} in the coding loop), each answered after {answer:g} s")
    print(f"the stages' steps: {stepped:.2f} s, {calls * answer:.2f} s of it on answers")
    print(f"coding loop: {loop_own:.2f} s the site's own over {steps} steps (sandbox starts too)")
    print(f"the intake (store): {_seconds(stages['store']):.2f} s; whole run {wall:.2f} s wall")
    print(
        f"site's own time per step: {per_step * 1000:.0f} ms against {answer * 1000:.0f} ms answers"
    )
    print(f"ratio: {per_step / answer:.1%} (goal: under {GOAL:.0%} at 2 s answers)")
    if args.smoke:
        print("(--smoke: sizes too small to mean anything)")


if __name__ == "__main__":
    main()
