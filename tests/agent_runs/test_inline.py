"""Runs inline (Celery eager, as on the embedded defaults without a broker),
with the real sandbox and the loopback model: the whole pipeline in one
process, the coding loop's tools and its limits."""

import json
import os
import threading

import pytest

from agent_runs.coding import Commands, tool_execute
from agent_runs.models import AgentRun, RunStatus, StageStatus
from agent_runs.services import agent_run_create
from common.llm import ToolCall
from experiments.slots import slots_acquire
from mlrbench_site.celery import app
from submissions.models import ArtifactKind, Submission
from tests.support.fake_llm import answer, tool_call

from .conftest import run_options
from .scripted_agent import PRINTED, coding_steps, scripted_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager(agent_settings):
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    agent_settings.CELERY_TASK_ALWAYS_EAGER = True
    yield agent_settings
    app.conf.task_always_eager = previous


def run_inline(server, **options) -> AgentRun:
    (run,) = agent_run_create(**run_options(server, **options))
    run.refresh_from_db()
    return run


def test_an_inline_end2end_run_stores_a_submission_in_mlr_benchs_layout(eager, task, fake_llm):
    fake_llm.default = scripted_agent()

    run = run_inline(fake_llm)

    assert run.status == RunStatus.FINISHED, run.reason
    submission = run.submission
    assert submission.stage == "end2end" and submission.agent.name == "mlr-agent-scripted"
    kinds = {a.path: a.kind for a in submission.artifacts.all()}
    assert kinds["results/paper.md"] == ArtifactKind.PAPER
    assert kinds["code/experiment.py"] == ArtifactKind.CODE
    assert kinds["results/log.txt"] == ArtifactKind.LOG
    assert kinds["mlr-agent_output.json"] == ArtifactKind.TRACE
    for step in ("idea", "lit", "proposal", "experiment", "paper"):
        assert kinds[f"{step}_token_usage.json"] == ArtifactKind.TOKEN_USAGE
    for name in ("task.md", "idea.md", "related_work.md", "proposal.md", "run.sh"):
        assert name in kinds
    files = {a.path: a.file.read().decode() for a in submission.artifacts.all()}
    assert files["run.sh"].splitlines()[-1] == "python3 code/experiment.py"
    assert f"$ python3 code/experiment.py\naccuracy: {PRINTED}\n" in files["results/log.txt"]
    assert f"| Ours | {PRINTED} |" in files["results/paper.md"]
    usage = json.loads(files["experiment_token_usage.json"])
    assert usage == {
        "model": "scripted-model",
        "prompt_tokens": 3 * 1200,
        "completion_tokens": 3 * 300,
        "total_tokens": 4500,
    }
    trace = json.loads(files["mlr-agent_output.json"])
    assert trace["format"] == "mlr-agent-trace" and trace["version"] == 1
    assert [s["stage"] for s in trace["steps"]] == [
        "idea", "lit", "proposal", "experiment", "experiment", "experiment", "paper"
    ]  # fmt: skip
    run_step = trace["steps"][4]
    assert run_step["message"]["tool_calls"][0]["function"]["name"] == "run"
    assert f"accuracy: {PRINTED}" in run_step["tool_results"][0]["content"]
    assert trace["ended"] == {
        "reason": "finish",
        "summary": "ran the experiment: accuracy printed in the log",
    }
    assert run.tokens == 7 * 1500
    assert all(s.status == StageStatus.FINISHED for s in run.stages.all())


def test_without_a_literature_review_the_stage_is_skipped_and_says_so(eager, task, fake_llm):
    fake_llm.default = scripted_agent()

    run = run_inline(fake_llm, lit_review=False)

    assert run.status == RunStatus.FINISHED, run.reason
    lit = run.stages.get(name="lit")
    assert lit.status == StageStatus.SKIPPED and "no literature review" in lit.note
    paths = set(run.submission.artifacts.values_list("path", flat=True))
    assert "related_work.md" not in paths and "lit_token_usage.json" not in paths
    assert not any("Search the literature" in str(r.messages) for r in fake_llm.requests)


def test_answers_without_tool_calls_are_bounded_then_the_stage_fails_with_the_reason(
    eager, task, fake_llm
):
    fake_llm.default = scripted_agent(coding=[answer("I would write some code.")])

    run = run_inline(fake_llm)

    assert run.status == RunStatus.FAILED and run.failed_stage == "experiment"
    assert "answered 3 times without a tool call" in run.reason
    coding_requests = [r for r in fake_llm.requests if r.body.get("tools")]
    assert len(coding_requests) == 3  # told twice to use a tool, then given up
    assert coding_requests[-1].messages[-1]["content"].startswith("Answer with a tool call")
    assert run.submission is None and Submission.objects.count() == 0


def test_the_step_budget_ends_the_loop_and_says_why(eager, task, fake_llm):
    fake_llm.default = scripted_agent(coding=[tool_call("list_files", {"path": "."})])

    run = run_inline(fake_llm, max_steps=2)

    experiment = run.stages.get(name="experiment")
    assert "ended by max_steps" in experiment.note
    # Nothing ran, so there is no log to write a paper from: the run fails there.
    assert run.status == RunStatus.FAILED and run.failed_stage == "paper"
    assert "no execution log" in run.reason
    assert Submission.objects.count() == 0


def test_the_cost_cap_ends_the_loop(eager, task, fake_llm):
    # gpt-4o is in litellm's price table: 1500 tokens a call cost about $0.006.
    fake_llm.default = scripted_agent()

    run = run_inline(fake_llm, model="openai/gpt-4o", max_cost_usd="0.02")

    assert run.stages.get(name="experiment").note.startswith("ended by max_cost")
    assert run.status == RunStatus.FAILED  # and the paper stage could not be paid for
    assert "cost cap" in run.reason


@pytest.fixture
def commands(agent_settings, tmp_path):
    work = agent_settings.EXPERIMENT_WORK_ROOT / "tools-test" / "work"
    work.mkdir(parents=True)
    os.chmod(work.parent, 0o755)
    os.chmod(work, 0o777)
    with slots_acquire(gpus=0, wait_seconds=5) as slots:
        yield Commands(folder=work, run_dir=work.parent, slots=slots)


def call(name: str, arguments) -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id="c1", name=name, arguments=text)


def test_path_escapes_are_tool_errors_the_model_sees(commands, tmp_path):
    work = commands.folder
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")

    for path in ("/etc/passwd", "../outside.txt", "code/../../x", str(secret)):
        outcome = tool_execute(call("read_file", {"path": path}), work=work, commands=commands)
        assert outcome.content.startswith("error:"), path
        outcome = tool_execute(
            call("write_file", {"path": path, "content": "x"}), work=work, commands=commands
        )
        assert outcome.content.startswith("error:"), path
    assert not (work.parent / "outside.txt").exists()

    # A link the sandboxed code made is never followed by the tools.
    outcome = tool_execute(
        call("run", {"command": f"ln -s {secret} leak.txt && ln -s / root"}),
        work=work,
        commands=commands,
    )
    assert outcome.content.startswith("exit code: 0")
    for path in ("leak.txt", "root/etc/passwd"):
        read = tool_execute(call("read_file", {"path": path}), work=work, commands=commands)
        assert "symbolic link" in read.content and "host secret" not in read.content
    listing = tool_execute(call("list_files", {"path": "root"}), work=work, commands=commands)
    assert "symbolic link" in listing.content
    written = tool_execute(
        call("write_file", {"path": "leak.txt", "content": "overwrite"}),
        work=work,
        commands=commands,
    )
    assert "symbolic link" in written.content and secret.read_text() == "host secret"
    # The site's own record cannot be written over by the model.
    refused = tool_execute(
        call("write_file", {"path": "run.sh", "content": "echo 0.99"}), work=work, commands=commands
    )
    assert "written by the site" in refused.content


def test_bad_tool_arguments_are_errors_never_a_crash(commands):
    work = commands.folder
    cases = [
        (call("write_file", "{not json"), "not valid JSON"),
        (call("write_file", {"path": "a.txt"}), "needs the string argument(s) content"),
        (call("run", "[1, 2]"), "must be a JSON object"),
        (call("run", {"command": 7}), "needs the string argument(s) command"),
        (call("delete_everything", {}), "unknown tool 'delete_everything'"),
        (call("read_file", {"path": "missing.txt"}), "no such file"),
    ]
    for tool, expected in cases:
        assert expected in tool_execute(tool, work=work, commands=commands).content
    ran = tool_execute(
        call("run", {"command": "echo out; echo err >&2; exit 3"}), work=work, commands=commands
    )
    assert ran.content.startswith("exit code: 3") and "out" in ran.content and "err" in ran.content
    assert commands.executed == ["echo out; echo err >&2; exit 3"]


def test_python_is_on_the_sandboxs_path_not_only_python3(commands):
    """Code and run.sh files written for `python main.py` ran into exit code 127."""
    ran = tool_execute(
        call("run", {"command": "python -c 'print(6 * 7)'"}),
        work=commands.folder,
        commands=commands,
    )
    assert ran.content.startswith("exit code: 0"), ran.content
    assert "42" in ran.content
    assert commands.succeeded == 1


def test_an_experiment_whose_every_command_failed_fails_the_run_and_says_so(eager, task, fake_llm):
    fake_llm.default = scripted_agent(
        coding=[
            tool_call("write_file", {"path": "code/main.py", "content": "raise SystemExit(3)\n"}),
            tool_call("run", {"command": "python3 code/main.py"}),
            tool_call("run", {"command": "python3 code/missing.py"}),
            tool_call("finish", {"summary": "ran the experiment"}),
        ]
    )

    run = run_inline(fake_llm)

    # Not "Finished" with a green experiment stage: the stage failed, and why.
    assert run.status == RunStatus.FAILED and run.failed_stage == "experiment"
    assert run.stages.get(name="experiment").status == StageStatus.FAILED
    assert "every command the experiment ran failed (2 of 2" in run.reason
    assert run.submission is None


def test_coding_steps_script_the_reference_answers():
    # The scripted model's loop: write, run, finish (used by every end-to-end test).
    assert [b.tool_calls[0][0] for b in coding_steps()] == ["write_file", "run", "finish"]


def test_the_loops_files_are_kept_wherever_they_are_within_the_runs_limits(tmp_path, settings):
    """What the coding loop leaves in its folder goes back to the workspace, all of it
    but the site's own files; past the run's size limit a file is named, not kept."""
    from agent_runs.coding import _results_keep

    settings.INTAKE_MAX_UNPACKED_BYTES = 16 * 1024 * 1024 + 4096
    workspace, work = tmp_path / "workspace", tmp_path / "work"
    for folder in (workspace, work):
        (folder / "idea.md").parent.mkdir(parents=True, exist_ok=True)
    (workspace / "idea.md").write_text("# The site's idea\n")
    files = {
        "main.py": "print(1)\n",
        "lib/deep/util.py": "X = 1\n",
        "notes.txt": "kept\n",
        "idea.md": "# rewritten by the model\n",  # a document of an earlier stage
        "run.sh": "echo forged\n",  # the site's own record
        "paper_token_usage.json": "{}",
    }
    for relative, text in files.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_text(text)
    (work / "big.bin").write_bytes(b"x" * 8192)  # over what the limit leaves
    commands = Commands(folder=work, run_dir=tmp_path, slots=None)  # type: ignore[arg-type]
    commands.executed.append("python3 main.py")

    left_out = _results_keep(workspace, work, commands, tmp_path / "staging")

    assert (workspace / "main.py").read_text() == "print(1)\n"
    assert (workspace / "lib/deep/util.py").is_file() and (workspace / "notes.txt").is_file()
    assert (workspace / "idea.md").read_text() == "# The site's idea\n"
    assert (workspace / "run.sh").read_text().endswith("python3 main.py\n")
    assert not (workspace / "paper_token_usage.json").exists()
    assert not (workspace / "big.bin").exists()
    assert left_out == ["big.bin (8192 bytes): over the run's size limit"]


def _in_thread(function, *args):
    """`function(*args)` in a thread, its outcome or None if still blocked after
    a generous wait (the test then fails instead of hanging)."""
    import threading

    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(function(*args)), daemon=True)
    thread.start()
    thread.join(timeout=60)
    return outcome[0] if outcome else None


def test_the_tools_refuse_fifos_sockets_and_devices_without_blocking(commands):
    """Issue 32, finding 9: `mkfifo code/fifo` then `write_file code/fifo` held
    the gpu worker in open() until its time limit."""
    import socket

    work = commands.folder
    (work / "code").mkdir(exist_ok=True)
    os.mkfifo(work / "code" / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(work / "code" / "sock"))
    try:
        for path in ("code/fifo", "code/sock"):
            for tool in (
                call("write_file", {"path": path, "content": "x"}),
                call("read_file", {"path": path}),
            ):
                outcome = _in_thread(lambda t: tool_execute(t, work=work, commands=commands), tool)
                if outcome is None:  # unblock the stuck open() before failing
                    with open(work / "code" / "fifo", "rb" if tool.name == "write_file" else "wb"):
                        pass
                assert outcome is not None, f"{tool.name} {path} blocked"
                assert outcome.content.startswith("error:"), outcome.content
                assert "not a regular file" in outcome.content, outcome.content
    finally:
        server.close()


def test_cancel_stops_a_stage_blocked_in_a_model_call_within_seconds(eager, task, fake_llm):
    """Cancel was only seen between calls: a model call that takes minutes (or
    a file that blocks) kept the stage running. The stage is interrupted."""
    import threading

    from agent_runs.services import agent_run_cancel

    eager.AGENT_RUN_CALL_TIMEOUT_SECONDS = 30
    eager.AGENT_RUN_CANCEL_POLL_SECONDS = 0.2
    fake_llm.default = answer("a slow idea", delay=45)

    def cancel_once_the_call_is_made() -> None:
        fake_llm.wait_for_requests(1, timeout=30)
        run = AgentRun.objects.get()
        agent_run_cancel(run=run, reason="stopped by the test")

    canceller = threading.Thread(target=cancel_once_the_call_is_made, daemon=True)
    canceller.start()
    run = run_inline(fake_llm)
    canceller.join(timeout=60)

    assert run.status == RunStatus.CANCELLED, run.reason
    assert "while the stage was running" in run.reason
    assert run.failed_stage == "idea" and run.submission is None


def test_without_a_broker_a_run_is_created_at_once_and_runs_after_the_answer(eager, task, fake_llm):
    """`POST /api/agent-runs/` (agent_run_create) once waited for every stage,
    a model's retries included; now the stages run in the background threads."""
    from common.tasks import background_wait

    eager.BACKGROUND_THREADS = 2
    gate = threading.Event()
    agent = scripted_agent()

    def held(body):
        gate.wait(60)  # without background threads the caller waits here
        return agent(body)

    fake_llm.default = held
    try:
        (run,) = agent_run_create(**run_options(fake_llm))
        run.refresh_from_db()
        assert run.status in (RunStatus.QUEUED, RunStatus.RUNNING)
        assert not run.is_final
    finally:
        gate.set()
        assert background_wait(timeout=300)

    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED, run.reason
    assert run.submission is not None
