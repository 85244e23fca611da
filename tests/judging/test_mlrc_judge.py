"""MLRC-Bench's judge rubric, loaded from a file in the shape of its
LLM_as_a_Judge.py, and MLRC-Bench's judge correlation (plot.py: Pearson of the
five 1-5 ratings against test improvement_perc, -relative_runtime and
-relative_complexity), checked against scipy's pearsonr on fixed trials."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from scipy.stats import pearsonr

from common.stats import MLRC_JUDGE_DIMENSIONS
from judging.models import JudgingCondition
from judging.parsing import ReviewFormatError, review_parse
from judging.services.rubrics import rubric_current
from judging.subjective_objective import mlrc_judge_correlation
from submissions.models import Stage
from tests.judging.factories import JudgeFactory
from tests.judging.methods import evaluated_method, method_rated

pytestmark = pytest.mark.django_db


def judge_file(tmp_path, names=MLRC_JUDGE_DIMENSIONS):
    """A file shaped as MLRC-Bench's LLM_as_a_Judge.py (its own wording is not copied)."""
    entries = "".join(
        f'    "{name}": """\n    How good is the method on {name.lower()}?\n'
        + "".join(f"    {level}. Level {level} of {name.lower()}.\n" for level in range(1, 6))
        + '    """,\n'
        for name in names
    )
    path = tmp_path / "LLM_as_a_Judge.py"
    path.write_text(f"import json\n\nrubric = {{\n{entries}}}\n\n\ndef f():\n    pass\n")
    return path


def test_mlrc_benchs_rubric_imports_as_the_method_rubric_on_its_1_to_5_scale(tmp_path):
    out = StringIO()
    call_command(
        "import_rubric", str(judge_file(tmp_path)), "--stage=method", "--mlrc-bench", stdout=out
    )

    rubric = rubric_current(stage=Stage.METHOD)
    assert [d["key"] for d in rubric.dimensions] == list(MLRC_JUDGE_DIMENSIONS)
    assert all((d["min"], d["max"]) == (1, 5) for d in rubric.dimensions)
    assert rubric.overall_key == "" and rubric.extra_fields == []
    clarity = rubric.dimensions[0]
    assert clarity["question"] == "How good is the method on clarity?"
    assert clarity["levels"] == {str(n): f"Level {n} of clarity." for n in range(1, 6)}
    # The judges read the levels best first, as the site's prompts give them.
    assert "Validity (1-5)" in rubric.prompt
    assert rubric.prompt.index("5 - Level 5 of validity") < rubric.prompt.index(
        "1 - Level 1 of validity"
    )
    answer = {name: {"score": 4, "justification": "why"} for name in MLRC_JUDGE_DIMENSIONS}
    parsed = review_parse(answer, dimensions=rubric.dimensions, extra_fields=rubric.extra_fields)
    assert [(s.scale_min, s.scale_max) for s in parsed.scores] == [(1, 5)] * 5
    with pytest.raises(ReviewFormatError, match="outside 1-5"):
        review_parse(
            {**answer, "Clarity": {"score": 7}},
            dimensions=rubric.dimensions,
            extra_fields=[],
        )


def test_a_file_that_is_not_mlrc_benchs_rubric_is_refused_with_the_reason(tmp_path):
    with pytest.raises(CommandError, match="lacks MLRC-Bench's Rigorousness"):
        call_command(
            "import_rubric",
            str(judge_file(tmp_path, names=("Clarity", "Validity"))),
            "--stage=method",
            "--mlrc-bench",
        )
    with pytest.raises(CommandError, match="use --stage method"):
        call_command("import_rubric", str(judge_file(tmp_path)), "--stage=idea", "--mlrc-bench")


def test_mlrc_benchs_judge_correlation_is_pearson_against_its_three_measures(curve):
    judge = JudgeFactory(name="judge-a")
    trials = [("a", 0.3, 0.010, 5, 2), ("b", 0.5, 0.030, 3, 4), ("c", 0.65, 0.012, 2, 3)]
    trials += [("d", 0.2, 0.050, 4, 1)]
    for name, score, runtime, clarity, validity in trials:
        submission, _ = evaluated_method(curve, name, score, runtime)
        method_rated(
            submission,
            judge,
            JudgingCondition.WITH_CODE,
            {"Clarity": clarity, "Validity": validity},
            scale=(1, 5),
        )
        # The site's own 1-10 Clarity is not MLRC-Bench's rating.
        method_rated(submission, judge, JudgingCondition.NO_CODE, {"Clarity": 9}, scale=(1, 10))

    answer = mlrc_judge_correlation()

    base, base_runtime = curve.baseline_score, curve.baseline_runtime_seconds
    improvements = [100 * (base - score) / base for _, score, _, _, _ in trials]
    neg_runtime = [-100 * (rt - base_runtime) / base_runtime for _, _, rt, _, _ in trials]
    clarities = [t[3] for t in trials]
    validities = [t[4] for t in trials]
    with_code, no_code = answer["conditions"]
    assert (with_code["condition"], with_code["n_trials"]) == ("with_code", 4)
    cells = {(c["dimension"], c["measure"]): c for c in with_code["cells"]}
    assert cells[("Clarity", "improvement_perc")]["pearson_r"] == pytest.approx(
        pearsonr(clarities, improvements).statistic
    )
    assert cells[("Validity", "relative_runtime")]["pearson_r"] == pytest.approx(
        pearsonr(validities, neg_runtime).statistic
    )
    assert cells[("Clarity", "improvement_perc")]["n"] == 4
    # Every trial has the same method: its complexity does not vary, no r.
    assert cells[("Clarity", "relative_complexity")]["pearson_r"] is None
    assert (
        cells[("Rigorousness", "improvement_perc")] | {"pearson_r": None, "n": 0}
        == cells[("Rigorousness", "improvement_perc")]
    )
    assert no_code["n_trials"] == 0
