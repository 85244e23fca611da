"""A reproduction run re-executes an experiment submission's run.sh in the
sandbox and checks the numbers its paper and results report: an honest paper
is reproduced, a fabricated number is not (and the evidence names it)."""

import pytest

from experiments.claims import claims_check, numbers_in, paper_claims, results_claims
from experiments.errors import ExperimentRefused
from experiments.models import ExperimentStatus, ReproductionVerdict
from experiments.queue import experiment_queue
from experiments.runner import experiment_execute
from experiments.selectors import reproduction_for_judges, reproduction_verdicts
from submissions.models import ArtifactKind, Stage
from tests.experiments.factories import submission_with_files

pytestmark = pytest.mark.django_db

TRAIN = """
import json, os, random
rng = random.Random(7)
points = [(rng.random(), rng.random()) for _ in range(4000)]
correct = sum(1 for x, y in points if (x + 0.1 * rng.random() > 0.5) == (x > 0.5))
accuracy = correct / len(points)
loss = sum(abs(x - y) for x, y in points) / len(points)
print(f"test accuracy: {accuracy:.4f}")
os.makedirs("results", exist_ok=True)
json.dump({"accuracy": accuracy, "loss": loss}, open("results/results.json", "w"))
"""


def paper(accuracy: str, loss: str) -> str:
    return f"""# A method that works

## Setup

| Hyperparameter | Value |
| --- | --- |
| Learning rate | 0.001 |
| Batch size | 64 |

## Results

| Method | Accuracy | Loss |
| --- | --- | --- |
| Ours | {accuracy} | {loss} |

The method improves on prior work by 12.5% (Smith et al., 2021).

## References

1. Smith, J. (2021). A paper. Proceedings 3.14, 1-10.
"""


def experiment(paper_text: str, *, run_sh: str = "exec python3 train.py\n", stage=Stage.EXPERIMENT):
    return submission_with_files(
        {
            "code/run.sh": run_sh,
            "code/train.py": TRAIN,
            "results/paper.md": paper_text,
        },
        kinds={"results/paper.md": ArtifactKind.PAPER},
        stage=stage,
    )


def true_numbers(experiment_settings) -> tuple[float, float]:
    """What TRAIN really computes, reproduced here outside the sandbox."""
    import random

    rng = random.Random(7)  # noqa: S311 - the same seed as the submitted code
    points = [(rng.random(), rng.random()) for _ in range(4000)]
    correct = sum(1 for x, y in points if (x + 0.1 * rng.random() > 0.5) == (x > 0.5))
    return correct / len(points), sum(abs(x - y) for x, y in points) / len(points)


@pytest.fixture
def truth(experiment_settings):
    return true_numbers(experiment_settings)


def reproduce(submission):
    run = experiment_queue(submission=submission, phase="repro")
    return experiment_execute(run_id=run.pk)


def test_an_honest_paper_is_reproduced(truth):
    accuracy, loss = truth
    submission = experiment(paper(f"{accuracy * 100:.1f}%", f"{loss:.3f}"), stage=Stage.END2END)

    run = reproduce(submission)

    assert run.status == ExperimentStatus.SUCCEEDED
    check = run.reproduction
    assert check.verdict == ReproductionVerdict.REPRODUCED, check.evidence
    assert len(check.evidence) == 2  # the hyperparameters and references are not claims
    assert all(item["matched"] for item in check.evidence)
    assert reproduction_verdicts(submission_ids=[submission.pk])[submission.pk] == check
    assert "test accuracy" in reproduction_for_judges(submission_id=submission.pk).log


def test_a_fabricated_number_is_not_reproduced_and_named_in_the_evidence(truth):
    accuracy, loss = truth
    submission = experiment(paper("0.991", f"{loss:.3f}"))

    run = reproduce(submission)

    check = run.reproduction
    assert check.verdict == ReproductionVerdict.NOT_REPRODUCED
    fabricated = check.evidence[0]
    assert fabricated["claimed"] == 0.991 and not fabricated["matched"]
    assert fabricated["claimed_where"] == "results/paper.md:14"
    assert fabricated["closest"] == pytest.approx(accuracy)
    assert "0.991" in check.summary
    assert [item["matched"] for item in check.evidence] == [False, True]


def test_code_that_cannot_run_offline_could_not_run(truth):
    submission = experiment(
        paper("0.5", "0.3"),
        run_sh="python3 -c \"import urllib.request; urllib.request.urlopen('https://pypi.org')\""
        " && python3 train.py\n",
    )

    run = reproduce(submission)

    assert run.status == ExperimentStatus.FAILED
    assert run.reproduction.verdict == ReproductionVerdict.COULD_NOT_RUN
    assert "failed" in run.reproduction.summary
    assert "URLError" in run.log.read().decode()


def test_a_submission_without_a_way_to_run_it_is_refused(experiment_settings):
    submission = submission_with_files({"train.py": TRAIN})
    with pytest.raises(ExperimentRefused, match="does not say how to run it"):
        experiment_queue(submission=submission, phase="repro")
    run = experiment_queue(submission=submission, phase="repro", command="python3 train.py")
    assert run.command == "python3 train.py"


def test_an_idea_cannot_be_reproduced(experiment_settings):
    submission = submission_with_files({"run.sh": "true\n"}, stage=Stage.IDEA)
    with pytest.raises(ExperimentRefused, match="experiment and end-to-end submissions"):
        experiment_queue(submission=submission, phase="repro")


# -- what counts as a claim and a match (pure functions) --


def test_table_cells_are_claims_but_settings_and_references_are_not():
    text = paper("87.3%", "0.214")
    claims = paper_claims(text, "paper.md")
    assert [(c.value, c.percent) for c in claims] == [(87.3, True), (0.214, False)]


def test_a_percentage_matches_a_fraction_and_rounding_is_honest():
    produced = numbers_in("accuracy 0.87312 loss 0.21449", "log")
    checks = claims_check(
        paper_claims("| Ours | 87.3% | 0.2145 | 0.91 |", "paper.md"), produced, tolerance=0.01
    )
    assert {c.claim.value: c.matched for c in checks} == {87.3: True, 0.2145: True, 0.91: False}


def test_results_json_numbers_are_claims_except_settings():
    claims = results_claims(
        '{"test": {"accuracy": 0.91, "f1": 0.88}, "config": {"learning_rate": 0.01}, "n": 10}',
        "results.json",
    )
    assert sorted(c.value for c in claims) == [0.88, 0.91]
