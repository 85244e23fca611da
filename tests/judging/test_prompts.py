"""What the judge reads: the rubric, the task, the stage's inputs and the output
under review; the code and the log for end-to-end and experiment judges, cut to
a budget with a visible marker."""

import pytest

from judging.models import JudgingCondition
from judging.prompts import PromptError, judge_prompt_build
from submissions.models import ArtifactKind, Stage
from tests.submissions.factories import SubmissionFactory, artifact_add

from .conftest import TASK_TEXT

pytestmark = pytest.mark.django_db


def user_text(prompt) -> str:
    return prompt.messages[1]["content"]


def test_an_end2end_prompt_has_the_rubric_task_paper_code_and_log(submission, rubrics):
    prompt = judge_prompt_build(
        submission=submission, rubric=rubrics["end2end"], condition=JudgingCondition.WITH_CODE
    )

    assert prompt.messages[0] == {"role": "system", "content": rubrics["end2end"].prompt}
    text = user_text(prompt)
    assert TASK_TEXT in text
    assert "# Paper under review\n\n# CEVA" in text
    assert "### claude_code/run.py\n```\nprint('accuracy', 0.91)" in text
    assert "epoch 1 accuracy 0.91" in text
    assert "- results/figure.png" in text
    assert "cut here" not in text
    assert len(prompt.sha256) == 64


def test_the_no_code_condition_leaves_code_and_log_out(submission, rubrics):
    prompt = judge_prompt_build(
        submission=submission, rubric=rubrics["end2end"], condition=JudgingCondition.NO_CODE
    )

    text = user_text(prompt)
    assert "print('accuracy'" not in text and "epoch 1" not in text
    assert "Not provided: judge the paper alone." in text


def test_code_and_log_are_cut_to_their_budgets_with_a_marker(submission, rubrics, settings):
    settings.JUDGE_CODE_BUDGET_CHARS = 2000
    settings.JUDGE_LOG_BUDGET_CHARS = 1000
    artifact_add(submission, "claude_code/big.py", ArtifactKind.CODE, "x = 1\n" * 2000)
    artifact_add(submission, "claude_code/zzz.py", ArtifactKind.CODE, "y = 2\n")
    log = "START\n" + "step ok\n" * 5000 + "FINAL accuracy 0.42\n"
    submission.artifacts.filter(path="results/log.txt").delete()
    artifact_add(submission, "results/log.txt", ArtifactKind.LOG, log)

    text = user_text(
        judge_prompt_build(
            submission=submission, rubric=rubrics["end2end"], condition=JudgingCondition.WITH_CODE
        )
    )

    code = text.split("# Code\n\n", 1)[1].split("# Execution log", 1)[0]
    assert "characters of code cut here to fit the judge's budget of 2000 characters" in code
    assert "more code file(s)" in code and "claude_code/zzz.py" in code
    assert len(code) < 2000 + 600
    log_part = text.split("# Execution log\n\n", 1)[1]
    # The start and the end of a log both survive: the final numbers are at the end.
    assert "START" in log_part and "FINAL accuracy 0.42" in log_part
    assert "characters of execution log cut here" in log_part
    assert len(log_part) < 1000 + 300


def test_a_proposal_prompt_carries_the_idea_and_the_literature_review(rubrics):
    submission = SubmissionFactory(stage=Stage.PROPOSAL)
    artifact_add(submission, "idea.md", ArtifactKind.IDEA, "IDEA TEXT")
    artifact_add(submission, "related_work.md", ArtifactKind.RELATED_WORK, "RELATED TEXT")
    artifact_add(submission, "proposal.md", ArtifactKind.PROPOSAL, "PROPOSAL TEXT")

    text = user_text(
        judge_prompt_build(
            submission=submission, rubric=rubrics["proposal"], condition=JudgingCondition.WITH_CODE
        )
    )

    assert text.index("IDEA TEXT") < text.index("RELATED TEXT") < text.index("PROPOSAL TEXT")
    assert "# Research proposal under review\n\nPROPOSAL TEXT" in text
    assert "# Code" not in text


def test_a_submission_without_its_output_cannot_be_judged(rubrics):
    submission = SubmissionFactory(stage=Stage.PAPER)
    artifact_add(submission, "results/log.txt", ArtifactKind.LOG, "log")

    with pytest.raises(PromptError, match="no paper artifact"):
        judge_prompt_build(
            submission=submission, rubric=rubrics["paper"], condition=JudgingCondition.WITH_CODE
        )


def test_every_default_rubric_asks_for_its_dimensions_and_extra_fields(rubrics):
    for stage, rubric in rubrics.items():
        for key in rubric.dimension_keys + rubric.extra_fields:
            assert f'"{key}"' in rubric.prompt, (stage, key)
    assert rubrics["idea"].dimension_keys == [
        "Consistency",
        "Clarity",
        "Novelty",
        "Feasibility",
        "Significance",
        "Overall",
    ]
    assert rubrics["experiment"].extra_fields == ["Hallucination"]
    assert rubrics["end2end"].extra_fields == ["Confidence"]
