"""The forged-label check at import: a task whose get_score reads labels from
the method's own output is found forgeable (tests/experiments/forgeable_task,
in MLRC-Bench's layout, as MLRC-Bench's depth-estimation task scores); the
same task scoring from its own copy of the labels is not. Real sandboxes."""

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from experiments.forgery import label_columns, label_like, table_alter
from experiments.models import ObjectiveTask

from .test_mlrc_published import SLUG as PUBLISHED_SLUG
from .test_mlrc_published import env_build, import_published, mlrc_bench_score

pytestmark = pytest.mark.django_db

FORGEABLE = Path(__file__).parent / "forgeable_task"
SLUG = "neurips2025_forgeable"
HONEST_GET_SCORE = '''

def get_score(Method, phase):
    """Labels from the task's own annotations, never from the method's output."""
    with open(ANNOTATIONS[phase], newline="") as handle:
        truth = {row["id"]: int(row["gt"]) for row in csv.DictReader(handle)}
    with open("output/predictions.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return sum(1 for row in rows if int(float(row["pred"])) == truth[row["id"]]) / len(rows)
'''


def task_copy(root: Path, *, honest: bool = False) -> Path:
    folder = root / "forgeable"
    shutil.copytree(FORGEABLE, folder)
    if honest:
        evaluation = folder / "env" / "evaluation.py"
        source = evaluation.read_text()
        evaluation.write_text(source[: source.index("\n\ndef get_score")] + HONEST_GET_SCORE)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def import_task(folder: Path, *extra: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(
        "objective_task",
        "import-mlrc",
        str(folder),
        f"--slug={SLUG}",
        "--metric=accuracy",
        "--higher-is-better",
        "--baseline=0.5",
        "--human=0.9",
        *extra,
        stdout=out,
        stderr=err,
    )
    return out.getvalue(), err.getvalue()


def test_a_scorer_that_reads_labels_from_the_methods_output_is_forgeable(
    experiment_settings, experiment_root, client
):
    out, _ = import_task(task_copy(experiment_root))

    objective = ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)
    assert objective.scoring_forgeable is True
    assert "forgeable" in out and "output/predictions.csv: gt" in out
    # The baseline's output scored 0.6 as written (its measured dev baseline), 0.4 altered.
    assert objective.dev_baseline_score == pytest.approx(0.6)
    assert "scored 0.6 as written and 0.4" in objective.scoring_check

    answer = client.get(f"/api/objective/tasks/{SLUG}/").json()
    assert answer["scoring_forgeable"] is True
    assert "get_score reads labels from the method's own output" in answer["scoring_check"]
    assert answer["dev_baseline_score"] == pytest.approx(0.6)
    page = client.get(f"/tasks/{SLUG}/").content.decode()
    assert 'data-testid="objective-forgeable"' in page
    analyses = client.get("/api/objective/analyses/", {"task": SLUG}).json()
    assert analyses["scoring_forgeable"] is True and analyses["mlrc_bench"]["scoring_forgeable"]

    # The same folder again: the check's finding stands, it is not run twice.
    again, _ = import_task(task_copy(experiment_root / "again"))
    assert "unchanged" in again and "scoring check: version 1: forgeable" in again


def test_a_scorer_with_its_own_labels_is_not_forgeable(experiment_settings, experiment_root):
    out, _ = import_task(task_copy(experiment_root, honest=True), "--dev-baseline-score=0.55")

    objective = ObjectiveTask.objects.get(task__slug=SLUG)
    assert objective.scoring_forgeable is False, objective.scoring_check
    assert "not forgeable: get_score gave 0.6 both" in objective.scoring_check
    # The organiser's dev baseline is kept.
    assert objective.dev_baseline_score == 0.55


def test_the_check_can_wait_and_says_how_to_run_it(experiment_settings, experiment_root, client):
    out, _ = import_task(task_copy(experiment_root), "--skip-scoring-check")
    assert f"objective_task check-scoring {SLUG}" in out
    assert ObjectiveTask.objects.get(task__slug=SLUG).scoring_forgeable is None
    assert client.get(f"/api/objective/tasks/{SLUG}/").json()["scoring_forgeable"] is None

    stream = StringIO()
    call_command("objective_task", "check-scoring", SLUG, stdout=stream)
    assert ObjectiveTask.objects.get(task__slug=SLUG).scoring_forgeable is True


def test_label_like_columns_and_their_alteration(tmp_path):
    assert label_like("gt", set()) and label_like("true_depth", set())
    assert label_like("next_item", {"next_item"})
    assert not label_like("id", {"id"}) and not label_like("session_id", set())
    assert not label_like("pred", set()) and not label_like("next_item_prediction", {"next_item"})
    table = tmp_path / "out.csv"
    table.write_text("id,pred,gt,label\n1,0.5,1,cat\n2,0.25,0,dog\n")
    assert table_alter(table, set()) == ["gt", "label"]
    assert table.read_text().splitlines() == ["id,pred,gt,label", "1,0.5,1,dog", "2,0.25,2,cat"]
    env = tmp_path / "env"
    (env / "data").mkdir(parents=True)
    (env / "data" / "dev_labels.csv").write_text("next_item,locale\nB1,DE\n")
    (env / "data" / "dev_features.csv").write_text("prev_items,locale\n[],DE\n")
    assert label_columns(env, ["data/*label*"]) == {"next_item"}


# On the worker of test_mlrc_published.py's tests: the session's environment of
# the published task (env_root) is built once for both files.
@pytest.mark.xdist_group("mlrc-published-environment")
@pytest.mark.usefixtures("published")
def test_product_recommendation_is_not_forgeable(tmp_path):
    """MLRC-Bench's product-recommendation scores from its own label file: the
    check finds no label of it in the baseline's output, and the baseline's dev
    score it measures is the one the task's own main.py gives the MLRC-Bench way."""
    import_published()
    waiting = ObjectiveTask.objects.get(task__slug=PUBLISHED_SLUG)
    assert waiting.scoring_forgeable is None and "environment" in waiting.scoring_check
    # Building the environment runs the check that waited for it.
    assert "scoring check: not forgeable" in env_build()

    objective = ObjectiveTask.objects.select_related("task").get(task__slug=PUBLISHED_SLUG)
    assert objective.scoring_forgeable is False, objective.scoring_check
    assert "not forgeable: the baseline's output (output/pred.csv)" in objective.scoring_check
    own = mlrc_bench_score(objective, "my_method", "dev", tmp_path / "work")
    assert objective.dev_baseline_score == pytest.approx(own, abs=1e-12)
