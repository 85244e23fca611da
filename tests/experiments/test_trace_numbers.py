"""When the reproduction check finds a paper's number in the re-run, the
trace viewer links the number to the step of the agent's trace whose output
printed it; the link is found once, at check time."""

import json

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from experiments.claims import Number
from experiments.models import ExperimentStatus, ReproductionVerdict
from experiments.queue import experiment_queue
from experiments.results import reproduction_check_record
from submissions.models import ArtifactKind
from tests.experiments.factories import submission_with_files

pytestmark = pytest.mark.django_db

PAPER = """# Results

| Method | Accuracy | F1 |
| --- | --- | --- |
| Ours | 0.9123 | 0.77 |
"""


def step(index: int, output: str) -> dict:
    call = {"id": f"c{index}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    return {
        "index": index,
        "stage": "experiment",
        "message": {"role": "assistant", "content": "", "tool_calls": [call]},
        "tool_results": [{"tool_call_id": f"c{index}", "name": "run", "content": output}],
    }


TRACE = json.dumps(
    {
        "format": "mlr-agent-trace",
        "version": 1,
        "model": "m",
        "agent": "a",
        # Line numbers (91, 23) are not the paper's 0.9123: only decimals count.
        "steps": [step(0, "91 lines\n23 files"), step(1, "epoch 3\ntest accuracy: 0.91234")],
        "ended": {"reason": "finish", "summary": ""},
    }
)


def test_a_reproduced_number_links_to_the_step_that_printed_it(client):
    submission = submission_with_files(
        {
            "results/paper.md": PAPER,
            "code/train.py": "print(0.91234)\n",
            "mlr-agent_output.json": TRACE,
        },
        kinds={
            "results/paper.md": ArtifactKind.PAPER,
            "mlr-agent_output.json": ArtifactKind.TRACE,
        },
    )
    run = experiment_queue(submission=submission, phase="repro", command="sh run.sh")
    run.log.save(f"experiments/{run.pk}.log", ContentFile(b"0.91234\n"), save=False)
    run.status, run.exit_code = ExperimentStatus.SUCCEEDED, 0
    run.started_at = run.finished_at = timezone.now()
    run.save()

    check = reproduction_check_record(
        run=run,
        produced=[Number(value=0.91234, text="0.91234", where="log:1", decimals=5, percent=False)],
    )

    assert check.verdict == ReproductionVerdict.NOT_REPRODUCED  # 0.77 was not produced
    html = client.get(f"/submissions/{submission.pk}/trace/mlr-agent_output.json").content.decode()
    assert html.count('data-testid="number-link"') == 1
    assert '<a href="?page=1#step-1" data-testid="number-link">step 1</a>' in html
    assert "Printed <code>0.9123</code>, which the paper reports (results/paper.md:5)" in html
    assert "0.77" not in html.split('data-testid="trace-steps"')[0]
    # The check's evidence says where, and the submission page links the step.
    (found,) = [item for item in check.evidence if item["matched"]]
    assert (found["trace_path"], found["trace_step"], found["trace_page"]) == (
        "mlr-agent_output.json",
        1,
        1,
    )
    page = client.get(submission.get_absolute_url()).content.decode()
    assert (
        f'href="/submissions/{submission.pk}/trace/mlr-agent_output.json?page=1#step-1" '
        'data-testid="evidence-trace-link"'
    ) in page
