"""`import_mlrbench` by phase: a first import of a clone into an empty SQLite
database, then a second import of the same folder (nothing new), side by side
in one run, each phase's seconds and share.

Phases (exclusive: time inside a nested phase counts for that one only):

- reading: listing the clone, hashing run files (the skip check), copying a
  run into staging, listing review files;
- markdown: rendering documents to clean HTML (tasks, papers, trace messages),
  the child pool included;
- pdf: a PDF paper's text (in the child pool);
- highlight: source files highlighted (in the child pool);
- traces: coding-agent traces parsed into steps;
- costs: token usage and the trackers priced;
- store: the run's objects written to the artifact store and moved in place;
- database: every SQL statement and commit;
- libraries: loading a module for the first time (litellm for the prices,
  scipy for the boards, pygments, pypdf): once per process, whatever the
  number of runs, so never scaled;
- other: the rest (parsing reviews and scores, checks, bookkeeping).

Without PATH it imports the shared sample (`MLRBENCH_DATA`, default
../shared/mlrbench) and also extrapolates to the full public repository: each
stage's runs scale by its task count there (ideas and proposals: 201 tasks;
experiments, papers and end-to-end runs: 10), the reviews by the number of
runs, the human scores and the hallucination check as the end-to-end runs
(their rows are about those papers: 1 task in the sample), the tasks part (all
201 are in the sample) and the boards' refresh not at all (a lower bound for
that part), and loading the libraries not at all (once per process). That is
an estimate from the sample's own costs, printed as one; given the path of a
full clone, the figures are measured. Process start (Django and the apps
loading) is not in these figures; `perf/startup.py` measures it.

With `--replica` it builds, in its temporary folder, a full-scale replica of
the public repository from the sample's own files, and measures its first and
second import as it measures a PATH. The replica follows FULL_TASKS for every
agent the sample has in a stage: ideas and proposals 201 tasks x 6 models
(1,206 runs each: the sample's 3 tasks, and the other 198 of tasks/ each given
a copy of one of them in turn), experiments 10 tasks x 2 coding agents (20),
papers 10 x 3 writing models (30: in the sample only the Claude Code
experiment has papers), end-to-end 10 x 6 agents, AI Scientist v2 included
(60); the 10 tasks are the sample's one and the first 9 others by name. That
is 2,522 runs, where the public repository has 2,531: the sample does not show
which 9 runs those are, and the replica copies only the kinds of run it has.
The judges' reviews are copied with their runs, in the same layout (the
folders of agent_reviews/ and the hallucination reviews beside the runs:
5,104 files from the sample's 100), and the human_eval CSVs get each
end-to-end task's rows again for each of its copies (50 human scores, 20
hallucination checks). A copy is made distinct, so that no hash matches
another run's: its markdown, text and logs end with a line naming the copy,
its code with a comment, its JSON with whitespace after the value (which the
parsers ignore), its PDF with a comment after %%EOF; images, CSV and other data
files stay byte for byte as in the sample (the import hashes and stores them,
it reads nothing else in them). What is not like the repository: the content
is the sample's repeated (the end-to-end runs of one task, the ideas of three,
stand for all), and the clone was written a moment before (in the page cache,
as a fresh clone is). After the imports it checks that the first created one
submission per run and one judgment per review file, that no part reported a
problem and that the second import created nothing; otherwise it lists what
is wrong, every problem reported included, and exits 1. `--smoke` imports
such a replica of a slice of the sample (2 tasks per stage, 28 runs), with the
same check.

    .venv/bin/python perf/import.py [PATH]
    .venv/bin/python perf/import.py --replica  # the full repository's counts
    .venv/bin/python perf/import.py --smoke    # a small replica: does it still work?
"""

import argparse
import csv
import fnmatch
import functools
import io
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmark.mlrbench_import import ImportPartReport
    from submissions.models import Submission

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = (
    "reading",
    "markdown",
    "pdf",
    "highlight",
    "traces",
    "costs",
    "store",
    "database",
    "libraries",
    "other",
)
# Paid once per process, whatever the size of the clone.
UNSCALED_PHASES = frozenset({"libraries"})
# Tasks of each stage in the full public repository (its README and the paper).
# Parts whose work does not grow with the runs in the sample's proportion.
UNSCALED_PARTS = frozenset({"tasks", "leaderboard"})
# Parts that read rows about one stage's papers (the human evaluation of the
# end-to-end papers: its rows of 1 task in the sample, of 10 in the repository).
PART_STAGES = {"human scores": "end2end", "hallucination check": "end2end"}
FULL_TASKS = {"idea": 201, "proposal": 201, "experiment": 10, "paper": 10, "end2end": 10}


class Phases:
    """Exclusive wall time per phase, from wrapped functions (a stack, so that
    SQL inside the intake counts as database, not as the intake)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []  # per open phase: time in nested phases

    def wrap(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.timing(phase):
                return function(*args, **kwargs)

        return timed

    @contextmanager
    def timing(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        frame = [0.0]
        self._stack.append(frame)
        try:
            yield
        finally:
            self._stack.pop()
            elapsed = time.perf_counter() - start
            self.totals[phase] += elapsed - frame[0]
            if self._stack:
                self._stack[-1][0] += elapsed

    def snapshot(self) -> dict[str, float]:
        return dict(self.totals)


def django_setup(work: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "mlrbench_site.settings"
    os.environ.setdefault("DEBUG", "1")
    os.environ["DATABASE_URL"] = f"sqlite:///{work / 'import.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(work / "media")
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["STORAGE_BACKEND"] = "filesystem"
    import django

    django.setup()


def instrument(phases: Phases) -> dict[str, "Runs"]:
    """Wrap the functions each phase consists of; returns where each run's
    stage, phase times and wall time are recorded (by part)."""
    from django.db import connection

    import judging.mlrbench_import as reviews_import
    import submissions.derived as derived
    import submissions.intake as intake
    import submissions.runs_import as runs_import
    import submissions.traces as traces

    targets = [
        (runs_import, "_quick_digest", "reading"),
        (runs_import, "folder_unpack", "reading"),
        (reviews_import, "_review_files", "reading"),
        (derived, "markdown_render_budgeted", "markdown"),
        (traces, "markdown_render_budgeted", "markdown"),
        (intake, "pdf_text_extract", "pdf"),
        (derived, "sources_highlight", "highlight"),
        (intake, "traces_derive", "traces"),
        (intake, "_run_costs", "costs"),
        (intake, "_run_stage", "store"),
        (intake, "_staged_move", "store"),
    ]
    for module, name, phase in targets:
        setattr(module, name, phases.wrap(phase, getattr(module, name)))
    listed = runs_import.published_runs
    runs_import.published_runs = phases.wrap("reading", lambda root: list(listed(root)))

    def sql(execute: Callable[..., Any], *args: Any) -> Any:
        with phases.timing("database"):
            return execute(*args)

    import builtins

    real_import = builtins.__import__

    def first_import(name: str, *args: Any, **kwargs: Any) -> Any:
        level = args[3] if len(args) > 3 else kwargs.get("level", 0)
        if level == 0 and name in sys.modules:
            return real_import(name, *args, **kwargs)
        with phases.timing("libraries"):
            return real_import(name, *args, **kwargs)

    builtins.__import__ = first_import

    connection.ensure_connection()
    connection.execute_wrappers.append(sql)
    connection.commit = phases.wrap("database", connection.commit)  # type: ignore[method-assign]

    per_run: dict[str, Runs] = {"runs": []}
    one_run = runs_import.run_import

    def recorded(*, run: Any, **kwargs: Any) -> tuple[str, "Submission | None"]:
        before = phases.snapshot()
        start = time.perf_counter()
        with phases.timing("other"):
            outcome = one_run(run=run, **kwargs)
        after = phases.snapshot()
        spent = {p: after.get(p, 0.0) - before.get(p, 0.0) for p in PHASES}
        per_run["runs"].append((str(run.stage), spent, time.perf_counter() - start))
        return outcome

    runs_import.run_import = recorded
    return per_run


Figures = dict[str, float]


def import_once(
    path: Path, phases: Phases
) -> tuple[float, dict[str, Figures], dict[str, "ImportPartReport"]]:
    """One `import_mlrbench`: wall seconds, each part's phases and its report."""
    from benchmark.mlrbench_import import ImportOptions, import_parts
    from common.bulk_writes import writes_deferred

    parts: dict[str, Figures] = {}
    reports: dict[str, ImportPartReport] = {}
    start = time.perf_counter()
    # As the command runs them: caches invalidated once, at the end.
    with writes_deferred():
        for part in import_parts():
            phases.totals.clear()
            with phases.timing("other"):
                report = part.run(path, ImportOptions())
            parts[part.name] = phases.snapshot()
            reports[part.name] = report
            if report.problems:
                problems = report.problems
                print(f"  {part.name}: {len(problems)} problem(s), e.g. {problems[0]}")
    return time.perf_counter() - start, parts, reports


def phases_sum(parts: dict[str, Figures]) -> Figures:
    total: Figures = defaultdict(float)
    for figures in parts.values():
        for phase, seconds in figures.items():
            total[phase] += seconds
    return total


def _row(name: str, figures: list[tuple[float, float]]) -> str:
    cells = "".join(
        f"{seconds:10.2f} s {100 * seconds / max(total, 1e-9):5.1f}%" for seconds, total in figures
    )
    return f"  {name:<10}{cells}"


def print_side_by_side(title: str, columns: list[tuple[str, float, Figures]]) -> None:
    print(f"\n{title}")
    print("  " + " " * 10 + "".join(f"{name:>20}" for name, _, _ in columns))
    for phase in PHASES:
        print(_row(phase, [(figures.get(phase, 0.0), total) for _, total, figures in columns]))
    print(_row("total", [(total, total) for _, total, _ in columns]))


Runs = list[tuple[str, Figures, float]]


def extrapolate(parts: dict[str, Figures], runs: Runs, tasks: Counter[str]) -> Figures:
    """The full repository's phases from the sample's (see the module docstring):
    each run scaled by its stage's factor, the rest of the runs part and the
    later parts by the number of runs, the tasks part as it is."""
    factor = {stage: FULL_TASKS[stage] / max(1, tasks[stage]) for stage, _, _ in runs}
    full_runs = sum(factor[stage] for stage, _, _ in runs)
    by_count = full_runs / max(1, len(runs))
    estimate: Figures = defaultdict(float)
    for name, figures in parts.items():
        # The tasks are all in the sample; the boards' refresh is measured as is.
        scale = 1.0 if name in UNSCALED_PARTS else by_count
        if name in PART_STAGES:
            scale = factor.get(PART_STAGES[name], by_count)
        for phase, seconds in figures.items():
            estimate[phase] += seconds * (1.0 if phase in UNSCALED_PHASES else scale)
    for stage, spent, _wall in runs:
        for phase, seconds in spent.items():
            if phase in UNSCALED_PHASES:
                continue
            # The run was counted in its part at `by_count`; it scales by its stage.
            estimate[phase] += seconds * (factor[stage] - by_count)
    return estimate


def count_tasks(path: Path) -> Counter[str]:
    """Distinct tasks per stage among the clone's runs."""
    from submissions.runs_import import published_runs

    seen: dict[str, set[str]] = defaultdict(set)
    for run in published_runs(path):
        seen[str(run.stage)].add(run.task)
    return Counter({stage: len(found) for stage, found in seen.items()})


def _human_row_paper(row: dict[str, str]) -> tuple[str, str]:
    """The (agent, task) of the end-to-end paper a human_eval row is about."""
    from reviews.hallucination_import import DEFAULT_AGENTS

    fields = {name.lower(): value for name, value in row.items()}
    agent = fields.get("model_name") or DEFAULT_AGENTS.get(fields.get("llm", ""), "")
    return agent, fields.get("workshop_name", "")


def smoke_clone(sample: Path, work: Path) -> Path:
    """A slice of the sample: every task, one end-to-end run, one task's ideas and
    proposals, the AI Scientist v2 paper (a PDF), with the reviews of these runs."""
    clone = work / "clone"
    shutil.copytree(sample / "tasks", clone / "tasks")
    shutil.copytree(sample / "rubrics", clone / "rubrics")
    results = sample / "agent_results"
    end2end = next(p for p in sorted(results.glob("end2end_*")) if p.is_dir())
    shutil.copytree(end2end, clone / "agent_results" / end2end.name)
    ideas = sorted(p for p in (results / "ideas_and_proposals").iterdir() if p.is_dir())[0]
    shutil.copytree(ideas, clone / "agent_results" / "ideas_and_proposals" / ideas.name)
    shutil.copytree(sample / "ai_scientist_v2_papers", clone / "ai_scientist_v2_papers")
    # The judges' reviews of those runs, in their layout, and the human rows about them.
    from judging.mlrbench_import import review_file_locate
    from submissions.runs_import import published_runs

    runs = {(run.agent, run.task, str(run.stage)) for run in published_runs(clone)}
    papers = {(agent, task) for agent, task, stage in runs if stage == "end2end"}
    for csv_file in sorted((sample / "human_eval").glob("*.csv")):
        with csv_file.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            names, rows = list(reader.fieldnames or []), list(reader)
        (clone / "human_eval").mkdir(parents=True, exist_ok=True)
        with (clone / "human_eval" / csv_file.name).open("w", encoding="utf-8", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
            writer.writeheader()
            writer.writerows(row for row in rows if _human_row_paper(row) in papers)
    reviews = sample / "agent_reviews"
    (clone / "agent_reviews").mkdir()
    for file in sorted(p for p in reviews.rglob("*") if p.is_file()):
        relative = file.relative_to(reviews).as_posix()
        review = review_file_locate(relative, file)
        if review is not None and (review.agent, review.task, review.stage) in runs:
            (clone / "agent_reviews" / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, clone / "agent_reviews" / relative)
    return clone


# --- The replica (--replica): the full repository's counts from the sample's files.

# Which task count each stage's runs follow in the replica (FULL_TASKS): the
# ideas and proposals cover every task, the other stages a subset of 10.
REPLICA_GROUPS = {
    "ideas": ("idea", "proposal"),
    "subset": ("experiment", "paper", "end2end"),
}
# The folders whose children are task folders, and the group they follow: runs and
# the reviews of the same runs, so that every copied run has its reviews copied.
REPLICA_PARENTS = (
    ("agent_results/ideas_and_proposals", "ideas"),
    ("agent_reviews/idea_proposal_reviews_*", "ideas"),
    ("agent_results/end2end_*", "subset"),
    ("agent_results/experiments_and_writeups/*", "subset"),
    ("ai_scientist_v2_papers/*", "subset"),
    ("agent_reviews/subset_reviews_*", "subset"),
)
# Where review files lie (as the reviews part reads them): under agent_reviews/,
# and the judges' reviews beside the end-to-end and experiment runs.
REVIEWS_BESIDE_RUNS = (
    "agent_results/end2end_*/*/review_hallucination_*.json",
    "agent_results/experiments_and_writeups/*/*/review_hallucination_*.json",
    "ai_scientist_v2_papers/*/*/review_*.json",
)
# A tiny replica for --smoke: two tasks per group.
REPLICA_SMOKE_TASKS = {"ideas": 2, "subset": 2}
# How a copy's file is made distinct, by suffix: a line naming the copy (markdown,
# text, logs), a comment (code), whitespace after the value (JSON), a comment
# after %%EOF (PDF). Anything else (images, CSV, data) stays byte for byte.
_NOTE_SUFFIXES = frozenset({".md", ".txt", ".log", ".rst", ".tex"})
_HASH_COMMENT_SUFFIXES = frozenset({".py", ".sh", ".bash", ".yaml", ".yml", ".toml", ".cfg", ".r"})
_HASH_COMMENT_NAMES = frozenset({"requirements.txt", "makefile", "dockerfile"})
_JSON_SUFFIXES = frozenset({".json", ".ipynb"})


@dataclass
class Replica:
    """A replica built by `replica_build`: what it holds and what it was built from."""

    path: Path
    runs: Counter[tuple[str, str]]  # (stage, agent): runs the import must create
    sample_runs: Counter[tuple[str, str]]
    sources: dict[str, list[str]]  # group: the sample's tasks it was copied from
    review_files: int
    sample_review_files: int
    rows: dict[str, tuple[int, int]]  # human_eval file: (sample rows, replica rows)
    marked: Counter[str] = field(default_factory=Counter)  # how copies were made distinct
    size: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.runs.values())


def _marked(path: Path, data: bytes, note: str, copy: int) -> tuple[bytes, str]:
    """The copy's bytes of a sample file, made distinct, and how."""
    suffix, name = path.suffix.lower(), path.name.lower()
    if suffix in _HASH_COMMENT_SUFFIXES or name in _HASH_COMMENT_NAMES:
        return data + f"\n# {note}\n".encode(), "code comment"
    if suffix in _NOTE_SUFFIXES:
        return data + f"\n\n{note}\n".encode(), "line"
    if suffix in _JSON_SUFFIXES:
        return data + b"\n" + b" " * copy + b"\n", "JSON whitespace"
    if suffix == ".pdf":
        return data + f"\n%{note}\n".encode(), "PDF comment"
    return data, "as in the sample"


def review_files_count(root: Path) -> int:
    folder = root / "agent_reviews"
    count = sum(1 for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
    return count + sum(1 for pattern in REVIEWS_BESIDE_RUNS for p in root.glob(pattern))


def _replica_plan(
    runs: list[Any], all_tasks: list[str], counts: dict[str, int]
) -> tuple[dict[str, list[str]], dict[str, dict[str, list[tuple[str, int]]]], list[str]]:
    """Per group, the sample's tasks and the copies of each: (target task, copy
    number); the sample's own tasks keep their runs unchanged (copy 0)."""
    stage_group = {stage: group for group, stages in REPLICA_GROUPS.items() for stage in stages}
    sources: dict[str, list[str]] = {}
    plan: dict[str, dict[str, list[tuple[str, int]]]] = {}
    notes: list[str] = []
    for group in REPLICA_GROUPS:
        own = sorted({run.task for run in runs if stage_group.get(str(run.stage)) == group})
        sources[group], plan[group] = own, {task: [] for task in own}
        if not own:
            continue
        others = [task for task in all_tasks if task not in own]
        wanted = counts[group] - len(own)
        if wanted > len(others):
            notes.append(f"{group}: {len(own) + len(others)} tasks, not {counts[group]}")
        for number, target in enumerate(others[: max(0, wanted)]):
            source = own[number % len(own)]
            plan[group][source].append((target, len(plan[group][source]) + 1))
    return sources, plan, notes


def replica_build(sample: Path, dest: Path, counts: dict[str, int]) -> Replica:
    """A replica of the full public repository in `dest`, from the sample's files
    (see the module docstring): every run and its reviews copied under other real
    tasks until each stage has its task count, each copy made distinct."""
    from submissions.runs_import import published_runs

    start = time.perf_counter()
    runs = list(published_runs(sample))
    all_tasks = sorted(path.stem for path in (sample / "tasks").glob("*.md"))
    sources, plan, notes = _replica_plan(runs, all_tasks, counts)
    stage_group = {stage: group for group, stages in REPLICA_GROUPS.items() for stage in stages}
    expected: Counter[tuple[str, str]] = Counter()
    for run in runs:
        copies = plan[stage_group[str(run.stage)]].get(run.task, [])
        expected[(str(run.stage), run.agent)] += 1 + len(copies)
    replica = Replica(
        path=dest,
        runs=expected,
        sample_runs=Counter((str(run.stage), run.agent) for run in runs),
        sources=sources,
        review_files=0,
        sample_review_files=review_files_count(sample),
        rows={},
        notes=notes,
    )
    dest.mkdir(parents=True)
    _ReplicaCopier(replica, plan).walk(sample, dest, "")
    replica.review_files = review_files_count(dest)
    replica.seconds = time.perf_counter() - start
    return replica


class _ReplicaCopier:
    """Copies the sample into the replica: each task folder under a parent of
    REPLICA_PARENTS as it is, then once more for each of its planned copies."""

    def __init__(self, replica: Replica, plan: dict[str, dict[str, list[tuple[str, int]]]]):
        self.replica, self.plan = replica, plan

    def walk(self, source: Path, target: Path, relative: str) -> None:
        group = next(
            (g for pattern, g in REPLICA_PARENTS if fnmatch.fnmatch(relative, pattern)), None
        )
        for child in sorted(source.iterdir()):
            inner = f"{relative}/{child.name}" if relative else child.name
            if child.is_dir() and not child.is_symlink():
                if group is None:
                    self.walk(child, target / child.name, inner)
                    continue
                shutil.copytree(child, target / child.name, symlinks=True)
                self.replica.size += sum(p.stat().st_size for p in child.rglob("*") if p.is_file())
                for task, copy in self.plan[group].get(child.name, []):
                    self.copy_marked(child, target / task, copy, inner, task)
            elif relative == "human_eval" and child.suffix == ".csv":
                rows = _rows_replicate(child, target / child.name, self.plan)
                self.replica.rows[child.name] = rows
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(child, target / child.name)
                self.replica.size += child.stat().st_size

    def copy_marked(self, folder: Path, target: Path, copy: int, label: str, task: str) -> None:
        """A copy of a task folder under `task`, every file made distinct."""
        note = (
            f"Replica copy {copy} of {label}, under task {task} "
            "(perf/import.py --replica; not a published run)."
        )
        for path in sorted(folder.rglob("*")):
            if path.is_dir():
                continue
            relative = path.relative_to(folder)
            if relative.stem == folder.name:  # AI Scientist v2's `<task>.pdf`
                relative = relative.with_name(task + relative.suffix)
            data, how = _marked(path, path.read_bytes(), note, copy)
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            (target / relative).write_bytes(data)
            self.replica.marked[how] += 1
            self.replica.size += len(data)


def _rows_replicate(
    source: Path, target: Path, plan: dict[str, dict[str, list[tuple[str, int]]]]
) -> tuple[int, int]:
    """A human_eval CSV with each end-to-end task's rows repeated for its copies
    (the rows name the task in a `workshop_name` column); (sample rows, rows)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    text = source.read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        shutil.copy2(source, target)
        return 0, 0
    header, body = rows[0], rows[1:]
    column = next((i for i, name in enumerate(header) if name.lower() == "workshop_name"), None)
    out = list(body)
    if column is not None:
        for task, copies in plan["subset"].items():
            for copy_task, _copy in copies:
                out += [
                    [copy_task if i == column else cell for i, cell in enumerate(row)]
                    for row in body
                    if len(row) > column and row[column] == task
                ]
    with target.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(out)
    return len(body), len(out)


def replica_describe(replica: Replica, sample: Path, *, smoke: bool) -> None:
    what = (
        f"REPLICA for the smoke run: the slice {sample} at {REPLICA_SMOKE_TASKS['subset']} "
        "tasks per stage"
        if smoke
        else f"REPLICA of the full public repository, built from the sample {sample}"
    )
    print(
        f"{what} (its own files copied under other real tasks; not the repository itself), "
        f"{replica.total} runs, {replica.size / 1e6:.0f} MB, built in {replica.seconds:.1f} s"
    )
    stage_group = {stage: group for group, stages in REPLICA_GROUPS.items() for stage in stages}
    for stage in sorted({stage for stage, _agent in replica.runs}):
        agents = {a: n for (s, a), n in sorted(replica.runs.items()) if s == stage}
        sample_n = sum(n for (s, _a), n in replica.sample_runs.items() if s == stage)
        per_agent = set(agents.values())
        how = (
            f"{per_agent.pop()} tasks x {len(agents)} agents ({', '.join(agents)})"
            if len(per_agent) == 1
            else ", ".join(f"{a} {n}" for a, n in agents.items())
        )
        group = stage_group[stage]
        print(
            f"  {stage:<11}{sum(agents.values()):5} runs: {how}; "
            f"from the sample's {sample_n} runs of {', '.join(replica.sources[group])}"
        )
    print(
        f"  total {replica.total} runs (the public repository: 2,531; see the docstring); "
        f"{replica.review_files} review files (the sample's {replica.sample_review_files}, "
        "copied with their runs in the same layout)"
    )
    if replica.rows:
        print(
            "  human_eval: "
            + ", ".join(
                f"{name} {rows} rows (the sample's {sample_rows})"
                for name, (sample_rows, rows) in sorted(replica.rows.items())
            )
            + ": each end-to-end task's rows repeated for its copies"
        )
    print(
        "  each copied file made distinct: "
        + ", ".join(f"{how} {n}" for how, n in sorted(replica.marked.items()))
    )
    for note in replica.notes:
        print(f"  fewer tasks than the repository's: {note}")


def replica_check(
    replica: Replica, first: dict[str, Any], created: int, second_created: int
) -> list[str]:
    """What is wrong with the replica's import: runs not created as submissions,
    reviews not stored as judgments, problems reported, a second import that
    created anything."""
    from submissions.runs_import import published_runs

    failures = []
    listed = Counter((str(run.stage), run.agent) for run in published_runs(replica.path))
    if listed != replica.runs:
        failures.append(f"the importer lists {sum(listed.values())} runs of the replica")
    if created != replica.total:
        failures.append(f"the first import created {created} submissions, not {replica.total}")
    runs = first.get("runs")
    skipped = sum(n for label, n in (runs.counts if runs else {}).items() if "skipped" in label)
    if skipped:
        failures.append(f"the runs part skipped {skipped} runs")
    reviews = first.get("reviews")
    judgments = reviews.counts.get("judgments created", 0) if reviews else 0
    if judgments != replica.review_files:
        failures.append(f"{judgments} judgments created from {replica.review_files} review files")
    if second_created:
        failures.append(f"the second import created {second_created} submissions")
    for name, report in first.items():
        if report.problems:
            failures.append(f"{name}: {len(report.problems)} problem(s) reported")
            failures += [f"  {problem}" for problem in report.problems]
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="a full clone (default: the sample)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a replica of a slice of the sample at 2 tasks per stage, quickly",
    )
    parser.add_argument(
        "--replica",
        action="store_true",
        help="measure a full-scale replica of the public repository built from the sample",
    )
    args = parser.parse_args()
    if args.replica and args.path is not None:
        parser.error("--replica builds its clone from the sample (MLRBENCH_DATA): give no PATH")
    sample = Path(os.environ.get("MLRBENCH_DATA", ROOT.parent / "shared" / "mlrbench"))
    work = Path(tempfile.mkdtemp(prefix="mlrbench-perf-import-"))
    try:
        django_setup(work)
        from django.core.management import call_command

        from submissions.models import Submission

        call_command("migrate", verbosity=0)
        path = smoke_clone(sample, work) if args.smoke else (args.path or sample)
        replica = None
        if args.replica or args.smoke:
            counts = (
                REPLICA_SMOKE_TASKS
                if args.smoke
                else {
                    group: max(FULL_TASKS[stage] for stage in stages)
                    for group, stages in REPLICA_GROUPS.items()
                }
            )
            replica = replica_build(path, work / "replica", counts)
            replica_describe(replica, path, smoke=args.smoke)
            path = replica.path
        tasks = count_tasks(path)
        phases = Phases()
        per_run = instrument(phases)
        print(f"import_mlrbench {path} (SQLite, local disk store)")
        first_wall, first, first_reports = import_once(path, phases)
        created = Submission.objects.count()
        first_runs = list(per_run["runs"])
        per_run["runs"].clear()
        second_wall, second, _second_reports = import_once(path, phases)
        second_created = Submission.objects.count() - created
        second_runs = list(per_run["runs"])
        if not first_runs:
            raise SystemExit("no run was read: is this a clone of MLR-Bench?")
        print(
            f"  {len(first_runs)} runs; parts of the first import: "
            + ", ".join(f"{name} {sum(f.values()):.1f} s" for name, f in first.items())
        )
        print(
            f"  submissions created by the first import: {created}"
            + (f" (the replica's runs: {replica.total})" if replica else "")
            + f"; by the second: {second_created}"
        )
        by_stage: dict[str, list[float]] = defaultdict(list)
        for stage, _spent, seconds in first_runs:
            by_stage[stage].append(seconds)
        print(
            "  a first import's run, mean: "
            + ", ".join(
                f"{stage} {1000 * sum(times) / len(times):.0f} ms ({len(times)})"
                for stage, times in sorted(by_stage.items())
            )
        )
        print_side_by_side(
            "measured" + (" on the REPLICA built from the sample" if replica else ""),
            [
                ("first import", first_wall, phases_sum(first)),
                ("second import", second_wall, phases_sum(second)),
            ],
        )
        if args.path is None and replica is None:
            full_first = extrapolate(first, first_runs, tasks)
            full_second = extrapolate(second, second_runs, tasks)
            factor = {s: FULL_TASKS[s] / tasks[s] for s in sorted(tasks)}
            print(
                "\n  scaled: "
                + ", ".join(f"{stage} runs x{n:.0f}" for stage, n in factor.items())
                + "; reviews by the number of runs, human scores and hallucination"
                + " checks as the end-to-end runs;"
                + " tasks, the boards' refresh and loading the libraries as measured"
            )
            print_side_by_side(
                "full repository, estimated from the sample (goals: 60 s and 10 s)",
                [
                    ("first import", sum(full_first.values()), full_first),
                    ("second import", sum(full_second.values()), full_second),
                ],
            )
        elif args.path is not None or (replica is not None and not args.smoke):
            what = "the replica" if replica else "the clone"
            print(
                f"\n  goals ({what}): first import {first_wall:.1f} s of 60 s, "
                f"second import {second_wall:.1f} s of 10 s"
            )
        if replica is not None:
            failures = replica_check(replica, first_reports, created, second_created)
            if failures:
                print(
                    "\nREPLICA CHECK FAILED: the import did not do the full work", file=sys.stderr
                )
                for failure in failures:
                    print(f"  {failure}", file=sys.stderr)
                raise SystemExit(1)
            print(
                f"  replica check: {created} submissions created for {replica.total} runs, "
                f"{first_reports['reviews'].counts.get('judgments created', 0)} judgments for "
                f"{replica.review_files} review files, no problem reported, nothing created "
                "by the second import"
            )
    finally:
        from common.child_pool import pool_close

        pool_close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
