"""`import_mlrbench`'s runs part on the sample data and on broken clones."""

import os
import shutil
from collections import Counter
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.mlrbench_import import ImportOptions
from benchmark.models import Agent
from benchmark.services import tasks_import
from common.bulk_writes import writes_deferred
from submissions.models import Artifact, ArtifactKind, Submission
from submissions.runs_import import runs_part
from tests.benchmark.runs import SAMPLE_TASK

pytestmark = pytest.mark.django_db

END2END_AGENTS = ["claude", "codex", "gemini", "gemini-cli", "o4-mini"]


def run_import(path: Path) -> str:
    out = StringIO()
    call_command("import_mlrbench", str(path), stdout=out, stderr=out)
    return out.getvalue()


def store_files(store) -> list[str]:
    return store.names()


@pytest.mark.backends
def test_the_sample_imports_every_run_and_a_second_import_changes_nothing(mlrbench_data, store):
    output = run_import(mlrbench_data)

    assert (
        "runs: 18 idea created, 0 idea unchanged, 18 proposal created, 0 proposal unchanged, "
        "2 experiment created, 0 experiment unchanged, 3 paper created, 0 paper unchanged, "
        # Five MLR-Bench end-to-end runs and AI Scientist v2's (its paper a PDF).
        "6 end2end created, 0 end2end unchanged, 13 agents created"
    ) in output
    end2end = Submission.objects.filter(stage="end2end", source="import").exclude(
        agent__name="ai-scientist-v2"
    )
    assert sorted(end2end.values_list("agent__name", flat=True)) == END2END_AGENTS
    scientist = Submission.objects.get(stage="end2end", agent__name="ai-scientist-v2")
    files = dict(scientist.artifacts.values_list("path", "kind"))
    assert files["iclr2025_bi_align.pdf"] == ArtifactKind.PAPER
    assert files["idea.md"] == ArtifactKind.IDEA
    assert files["results/research_summary.json"] == ArtifactKind.RESULTS
    assert all(kind == "code" for p, kind in files.items() if p.startswith("experiments/best_"))
    assert not any(p.startswith("review_") for p in files)  # the reviews are judgments
    # Its cost: `cost (USD)` of token_tracker.json, summed over its models.
    assert scientist.llm_cost_usd == Decimal("1.860768")
    assert scientist.agent.display_name == "AI Scientist v2 (o4-mini)"
    for submission in end2end:
        kinds = Counter(submission.artifacts.values_list("kind", flat=True))
        for kind in ("task", "idea", "proposal", "related_work", "paper", "log", "code"):
            assert kinds[kind] >= 1, (submission.agent.name, kind)
        assert kinds[ArtifactKind.TOKEN_USAGE] == 4
        assert kinds[ArtifactKind.FIGURE] >= 2
        assert submission.task.slug == SAMPLE_TASK
    by_agent = {s.agent.name: s for s in end2end}
    # Runs with Claude Code carry its trace; its last message has the cost.
    for name in ("claude", "gemini", "o4-mini"):
        assert by_agent[name].artifacts.filter(kind="trace", path="claude_output.json").exists()
        assert by_agent[name].agent_cost_usd is not None
    assert by_agent["codex"].artifacts.get(path="codex_log.log").kind == ArtifactKind.LOG
    assert by_agent["gemini-cli"].artifacts.filter(path__startswith="gemini/", kind="code")
    # claude-3-7-sonnet is not in this litellm's price table: the site's table
    # of the published runs' models prices it ($3 / $15 per million tokens).
    assert by_agent["claude"].llm_cost_usd > 0
    assert by_agent["claude"].llm_unpriced_steps == 0
    assert by_agent["o4-mini"].llm_cost_usd > 0

    experiment = Submission.objects.get(stage="experiment", agent__name="claude")
    assert not experiment.artifacts.filter(kind="paper").exists()
    papers = Submission.objects.filter(stage="paper")
    assert sorted(papers.values_list("agent__name", flat=True)) == [
        "claude-3-7-sonnet-20250219",
        "gemini-2.5-pro-preview",
        "o4-mini-2025-04-16",
    ]
    for paper in papers:
        assert paper.artifacts.filter(path="results/paper.md", kind="paper").exists()
        assert paper.artifacts.filter(kind="figure").exists()  # the figures it links
    ideas = Submission.objects.filter(stage="idea")
    assert ideas.filter(agent__name="deepseek-r1").count() == 3
    assert Agent.objects.get(name="deepseek-r1").model_family == "deepseek"
    assert Agent.objects.get(name="claude").model_family == "anthropic"

    rows = (Submission.objects.count(), Artifact.objects.count(), Agent.objects.count())
    files = store_files(store)

    second = run_import(mlrbench_data)

    assert "0 end2end created, 6 end2end unchanged" in second
    assert "done: nothing new" in second
    assert (Submission.objects.count(), Artifact.objects.count(), Agent.objects.count()) == rows
    assert store_files(store) == files


@pytest.fixture
def small_clone(tmp_path, mlrbench_data) -> Path:
    """A clone with the one sample task and one end-to-end run."""
    clone = tmp_path / "clone"
    (clone / "tasks").mkdir(parents=True)
    shutil.copy(mlrbench_data / "tasks" / f"{SAMPLE_TASK}.md", clone / "tasks")
    run = clone / "agent_results" / "end2end_codex" / SAMPLE_TASK
    shutil.copytree(mlrbench_data / "agent_results" / "end2end_codex" / SAMPLE_TASK, run)
    return clone


def test_a_bad_file_is_named_and_the_rest_of_the_run_imported(small_clone, media_root):
    run = small_clone / "agent_results" / "end2end_codex" / SAMPLE_TASK
    os.symlink("/etc/passwd", run / "results" / "passwd")
    (run / "results" / "fake.png").write_bytes(b"not an image")
    # A run for a task the catalogue does not have, and one without a paper.
    shutil.copytree(run, run.parent / "iclr2025_unknown_task")
    nopaper = small_clone / "agent_results" / "end2end_o4-mini" / SAMPLE_TASK
    nopaper.mkdir(parents=True)
    (nopaper / "idea.md").write_text("# Idea")

    output = run_import(small_clone)

    assert "results/passwd is a symbolic link" in output
    assert "results/fake.png is not a PNG image" in output
    assert "end2end_codex/iclr2025_unknown_task: no task 'iclr2025_unknown_task'" in output
    assert (
        "end2end_o4-mini/iclr2025_bi_align: skipped, the end to end stage needs a paper"
        " (results/paper.md or results/paper.pdf); found 1 idea"
    ) in output
    assert not Agent.objects.filter(name="o4-mini").exists()
    submission = Submission.objects.get()
    assert submission.agent.name == "codex"
    assert submission.artifacts.filter(path="results/paper.md").exists()
    assert not submission.artifacts.filter(path__in=["results/passwd", "results/fake.png"])
    # The four problems above; parts of other apps may add their own (this
    # clone has no human_eval/, for one).
    runs_problems = [line for line in output.splitlines() if "runs: could not import" in line]
    assert len(runs_problems) == 4, output
    assert "done: 3 rows created or updated;" in output


def test_a_changed_run_is_a_new_version(small_clone, media_root):
    run_import(small_clone)
    paper = small_clone / "agent_results" / "end2end_codex" / SAMPLE_TASK / "results" / "paper.md"
    paper.write_text(paper.read_text() + "\nA correction.\n")

    output = run_import(small_clone)

    assert "1 end2end created" in output
    assert list(Submission.objects.order_by("version").values_list("version", flat=True)) == [1, 2]


def test_an_imported_run_costs_a_few_queries_and_no_board_is_invalidated_per_row(
    mlrbench_data, media_root, monkeypatch
):
    """Issue 28: thousands of runs in a full clone; each one's queries are its own
    rows (the existing versions and digests read once, no receiver's query), and
    the boards are made stale once, at the end, not per submission."""
    import common.results

    tasks_import(path=mlrbench_data)
    invalidations: list[object] = []
    # What the block's end calls: the one invalidation, for every stage.
    monkeypatch.setattr(
        common.results, "results_changed", lambda stages=None, **_: invalidations.append(stages)
    )

    with writes_deferred():
        with CaptureQueriesContext(connection) as queries:
            report = runs_part(mlrbench_data, ImportOptions())
        assert invalidations == []
    # At the end of the bulk write, every board at once (None: every stage).
    assert invalidations == [None]

    runs = Submission.objects.count()
    assert runs == 47 and not report.problems
    # Per run: the agent's lock, its versions read, the submission, its files and
    # their derived rows written, the savepoint and its release; the agents' own
    # rows and the reads made once on top. A write-up built on its experiment run
    # also writes that input's row and reads the run's files (its ledger reads them).
    writeups = Submission.objects.filter(inputs__isnull=False).count()
    assert writeups > 0
    assert len(queries) <= 7 * runs + 2 * writeups + 120, len(queries)
