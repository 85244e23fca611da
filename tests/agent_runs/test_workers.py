"""MLR-Agent runs through real Celery worker processes (a `judge` worker for the
LLM stages, a `gpu` worker for the coding loop and the reproduction run) and
the real sandbox, against the loopback model."""

import os
import signal
import time

import pytest

from agent_runs.models import AgentRun, RunStatus, StageStatus
from agent_runs.services import agent_run_cancel, agent_run_create, agent_runs_resume_stalled
from experiments.models import ReproductionCheck, ReproductionVerdict
from submissions.models import Submission
from tests.support.waiting import wait_until

from .conftest import run_options
from .scripted_agent import root_coding_steps, scripted_agent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backends]


def final(run: AgentRun, timeout=120) -> AgentRun:
    def done():
        run.refresh_from_db()
        return run.is_final

    wait_until(done, timeout=timeout, message=f"agent run {run.pk} to end")
    return run


def reproduction_of(submission: Submission, timeout=120):
    def checked():
        return ReproductionCheck.objects.filter(run__submission=submission).first()

    return wait_until(
        checked, timeout=timeout, message=f"the reproduction check of submission {submission.pk}"
    )


def workers(celery_worker_process, agent_settings):
    env = agent_settings.worker_env
    return celery_worker_process("judge", env=env), celery_worker_process("gpu", env=env)


def test_an_end2end_run_is_stored_and_reproduced_and_a_fabricating_twin_is_not(
    agent_settings, celery_worker_process, task, fake_llm
):
    workers(celery_worker_process, agent_settings)
    honest_server = fake_llm
    # The model writes at the workspace's top and in subfolders, not under code/.
    honest_server.default = scripted_agent(coding=root_coding_steps())
    from tests.support.fake_llm import FakeLLMServer

    twin_server = FakeLLMServer(default=scripted_agent(claim="0.9512", coding=root_coding_steps()))
    try:
        (honest,) = agent_run_create(**run_options(honest_server))
        (twin,) = agent_run_create(**run_options(twin_server, agent_name="mlr-agent-twin"))
        final(honest)
        final(twin)
    finally:
        twin_server.close()

    assert honest.status == RunStatus.FINISHED, honest.reason
    assert twin.status == RunStatus.FINISHED, twin.reason
    paths = set(honest.submission.artifacts.values_list("path", flat=True))
    assert {
        "results/paper.md",
        "main.py",
        "helpers/stats.py",
        "params.txt",
        "outputs/summary.txt",  # made by its command
        "run.sh",
        "results/log.txt",
        "mlr-agent_output.json",
        "experiment_token_usage.json",
        "paper_token_usage.json",
    } <= paths
    assert honest.submission.llm_unpriced_steps == 5  # a self-hosted model: no price known

    assert (
        honest.submission.artifacts.get(path="run.sh")
        .file.read()
        .decode()
        .endswith("python3 main.py\n")
    )
    assert honest.submission and twin.submission
    check = reproduction_of(honest.submission)
    assert check.verdict == ReproductionVerdict.REPRODUCED, check.summary
    twin_check = reproduction_of(twin.submission)
    assert twin_check.verdict == ReproductionVerdict.NOT_REPRODUCED, twin_check.summary
    assert "0.9512" in twin_check.summary


def test_a_worker_killed_mid_run_resumes_at_its_last_finished_stage(
    agent_settings, celery_worker_process, task, fake_llm
):
    judge, _ = workers(celery_worker_process, agent_settings)
    fake_llm.default = scripted_agent(slow={"proposal": 60})
    (run,) = agent_run_create(**run_options(fake_llm))
    proposal = run.stages.get(name="proposal")

    def proposal_running():
        proposal.refresh_from_db()
        return proposal.status == StageStatus.RUNNING

    wait_until(proposal_running, timeout=60, message="the proposal stage to start")
    assert fake_llm.wait_for_requests(3, timeout=30)  # idea, literature, proposal asked
    os.killpg(judge.pid, signal.SIGKILL)
    judge.wait()
    celery_worker_process("judge", env=agent_settings.worker_env)

    # The reaper (beat, every AGENT_RUN_REAP_INTERVAL_SECONDS) finds the stage without a
    # heartbeat; here it is called at once rather than after AGENT_RUN_STALE_SECONDS.
    # About time: the stage's last heartbeat must be older than the 1 s asked below.
    time.sleep(1.5)
    assert agent_runs_resume_stalled(older_than=1) == [run.pk]

    final(run)
    assert run.status == RunStatus.FINISHED, run.reason
    attempts = dict(run.stages.values_list("name", "attempts"))
    assert attempts == {
        "idea": 1, "lit": 1, "proposal": 2, "experiment": 1, "paper": 1, "store": 1
    }  # fmt: skip
    stages_asked = [r for r in fake_llm.requests if not r.body.get("tools")]
    idea_asks = [r for r in stages_asked if "Propose one novel" in str(r.messages)]
    assert len(idea_asks) == 1  # the finished stages were not run again
    trace_stages = [s["stage"] for s in _trace(run)["steps"]]
    assert trace_stages.count("proposal") == 1  # the killed attempt's step is gone


def _trace(run: AgentRun) -> dict:
    import json

    artifact = run.submission.artifacts.get(path="mlr-agent_output.json")
    return json.loads(artifact.file.read())


def test_a_cancelled_run_says_where_and_leaves_no_submission(
    agent_settings, celery_worker_process, task, fake_llm
):
    workers(celery_worker_process, agent_settings)
    fake_llm.default = scripted_agent(slow={"proposal": 3})
    (run,) = agent_run_create(**run_options(fake_llm))
    proposal = run.stages.get(name="proposal")

    def proposal_running():
        proposal.refresh_from_db()
        return proposal.status == StageStatus.RUNNING

    wait_until(proposal_running, timeout=60, message="the proposal stage to start")
    agent_run_cancel(run=run)

    final(run)
    assert run.status == RunStatus.CANCELLED
    assert "cancelled by an organiser" in run.reason and run.failed_stage
    assert run.submission is None and Submission.objects.count() == 0
    assert not any(r.body.get("tools") for r in fake_llm.requests[4:])
