"""The judges of experiment and end-to-end submissions read the site's own re-run
of the code (the reproduction run's log, its verdict and its evidence), set apart
from the agent's own execution log; without a re-run the prompt has no such part."""

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from experiments.claims import Number
from experiments.models import ExperimentStatus, ReproductionVerdict
from experiments.queue import experiment_queue
from experiments.results import reproduction_check_record
from experiments.runner import experiment_execute
from judging.models import JudgingCondition, Judgment, JudgmentStatus
from judging.prompts import judge_prompt_build
from judging.services.run import judgment_run
from submissions.models import ArtifactKind
from tests.experiments.conftest import (  # noqa: F401 - fixtures of the sandboxed run
    experiment_root,
    experiment_settings,
    sandbox_ready,
)
from tests.support.fake_llm import answer

from .factories import artifact_add
from .helpers import review_answer

pytestmark = pytest.mark.django_db

REPRO_HEADING = "# The site's own re-run of the code (reproduction run)"

TRAIN = """
print("epoch 1 loss 0.71")
print("test accuracy: 0.6180")
"""

PAPER = """# CEVA

## Results

| Method | Accuracy |
| --- | --- |
| Ours | 0.874 |
"""


def end2end_with_run_sh(submission):
    """The fixture's end-to-end submission, with a paper that claims a number the
    code does not produce and a run.sh the site can re-run."""
    submission.artifacts.filter(path="results/paper.md").delete()
    artifact_add(submission, "results/paper.md", ArtifactKind.PAPER, PAPER)
    artifact_add(submission, "claude_code/run.sh", ArtifactKind.CODE, "exec python3 train.py\n")
    artifact_add(submission, "claude_code/train.py", ArtifactKind.CODE, TRAIN)
    return submission


def sent_prompt(fake_llm) -> str:
    return fake_llm.requests[-1].messages[-1]["content"]


@pytest.mark.usefixtures("experiment_settings")
def test_a_judge_reads_the_sandboxed_rerun_its_verdict_and_evidence(
    submission, rubrics, judge_for, fake_llm
):
    end2end_with_run_sh(submission)
    run = experiment_execute(run_id=experiment_queue(submission=submission, phase="repro").pk)
    assert run.status == ExperimentStatus.SUCCEEDED, run.reason
    assert run.reproduction.verdict == ReproductionVerdict.NOT_REPRODUCED, (
        run.reproduction.summary,
        run.reproduction.evidence,
    )
    judgment = Judgment.objects.create(
        submission=submission, judge=judge_for("judge-a"), rubric=rubrics["end2end"]
    )
    fake_llm.script(answer(review_answer("end2end")))

    judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE
    text = sent_prompt(fake_llm)
    agent_log, rerun = text.split(REPRO_HEADING, 1)
    # The agent's own log stays where it was; the re-run comes after it, labelled.
    agent_own_log = agent_log.split("# Execution log", 1)[1]
    assert "epoch 1 accuracy 0.91" in agent_own_log and "test accuracy" not in agent_own_log
    assert "not the agent's own execution log" in rerun
    assert "with `sh run.sh` (succeeded, exit code 0)" in rerun
    assert "Reproduction check: Not reproduced." in rerun
    assert "- reported 0.874 (results/paper.md:7): closest produced" in rerun
    assert ": NOT reproduced" in rerun
    assert "## Log of the re-run" in rerun and "test accuracy: 0.6180" in rerun
    assert (
        judgment.prompt_sha256
        == judge_prompt_build(
            submission=submission, rubric=rubrics["end2end"], condition=JudgingCondition.WITH_CODE
        ).sha256
    )


def test_without_a_rerun_the_judge_reads_no_such_part(submission, rubrics, judge_for, fake_llm):
    judgment = Judgment.objects.create(
        submission=submission, judge=judge_for("judge-a"), rubric=rubrics["end2end"]
    )
    fake_llm.script(answer(review_answer("end2end")))

    judgment_run(judgment_id=judgment.pk)

    text = sent_prompt(fake_llm)
    assert "epoch 1 accuracy 0.91" in text
    assert REPRO_HEADING not in text and "Reproduction check" not in text


def finished_repro_run(submission, log: str, *, status=ExperimentStatus.SUCCEEDED):
    """A reproduction run as a GPU worker leaves it (no sandbox needed to read it)."""
    run = experiment_queue(submission=submission, phase="repro", command="sh run.sh")
    run.log.save(f"experiments/{run.pk}.log", ContentFile(log.encode()), save=False)
    run.status = status
    run.exit_code = 0 if status == ExperimentStatus.SUCCEEDED else 1
    run.started_at = run.finished_at = timezone.now()
    run.save()
    return run


def test_the_rerun_log_is_cut_to_the_log_budget_and_changes_the_prompt_hash(
    submission, rubrics, settings
):
    settings.JUDGE_LOG_BUDGET_CHARS = 1000

    def build():
        return judge_prompt_build(
            submission=submission, rubric=rubrics["end2end"], condition=JudgingCondition.WITH_CODE
        )

    before = build()
    run = finished_repro_run(submission, "RERUN START\n" + "step ok\n" * 5000 + "RERUN END 0.5\n")
    without_check = build()
    reproduction_check_record(
        run=run, produced=[Number(value=0.5, text="0.5", where="log", decimals=1, percent=False)]
    )
    with_check = build()

    assert len({before.sha256, without_check.sha256, with_check.sha256}) == 3
    rerun = with_check.messages[1]["content"].split(REPRO_HEADING, 1)[1]
    assert "RERUN START" in rerun and "RERUN END 0.5" in rerun
    assert "characters of re-run log cut here to fit the judge's budget of 1000" in rerun
    assert len(rerun.split("## Log of the re-run", 1)[1]) < 1000 + 300
    # The paper reports no numbers: the check could not say anything.
    assert "Reproduction check: Could not run." in rerun
    assert "none was recorded" in without_check.messages[1]["content"]


def test_the_no_code_condition_leaves_the_rerun_out(submission, rubrics):
    finished_repro_run(submission, "RERUN LOG\n")

    text = judge_prompt_build(
        submission=submission, rubric=rubrics["end2end"], condition=JudgingCondition.NO_CODE
    ).messages[1]["content"]

    assert "RERUN LOG" not in text and REPRO_HEADING not in text
