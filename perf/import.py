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

    .venv/bin/python perf/import.py [PATH]
    .venv/bin/python perf/import.py --smoke   # a slice of the sample: does it still work?
"""

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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

    def recorded(*, run: Any, **kwargs: Any) -> str:
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


def import_once(path: Path, phases: Phases) -> tuple[float, dict[str, Figures]]:
    """One `import_mlrbench`: wall seconds and each part's phases."""
    from benchmark.mlrbench_import import ImportOptions, import_parts
    from common.bulk_writes import writes_deferred

    parts: dict[str, Figures] = {}
    start = time.perf_counter()
    # As the command runs them: caches invalidated once, at the end.
    with writes_deferred():
        for part in import_parts():
            phases.totals.clear()
            with phases.timing("other"):
                report = part.run(path, ImportOptions())
            parts[part.name] = phases.snapshot()
            if report.problems:
                problems = report.problems
                print(f"  {part.name}: {len(problems)} problem(s), e.g. {problems[0]}")
    return time.perf_counter() - start, parts


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


def smoke_clone(sample: Path, work: Path) -> Path:
    """A slice of the sample: every task, one end-to-end run, one task's ideas and
    proposals, the AI Scientist v2 paper (a PDF) with its reviews."""
    clone = work / "clone"
    shutil.copytree(sample / "tasks", clone / "tasks")
    shutil.copytree(sample / "rubrics", clone / "rubrics")
    results = sample / "agent_results"
    end2end = next(p for p in sorted(results.glob("end2end_*")) if p.is_dir())
    shutil.copytree(end2end, clone / "agent_results" / end2end.name)
    ideas = sorted(p for p in (results / "ideas_and_proposals").iterdir() if p.is_dir())[0]
    shutil.copytree(ideas, clone / "agent_results" / "ideas_and_proposals" / ideas.name)
    shutil.copytree(sample / "ai_scientist_v2_papers", clone / "ai_scientist_v2_papers")
    shutil.copytree(sample / "human_eval", clone / "human_eval")
    (clone / "agent_reviews").mkdir()
    return clone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="a full clone (default: the sample)")
    parser.add_argument("--smoke", action="store_true", help="a slice of the sample, quickly")
    args = parser.parse_args()
    sample = Path(os.environ.get("MLRBENCH_DATA", ROOT.parent / "shared" / "mlrbench"))
    work = Path(tempfile.mkdtemp(prefix="mlrbench-perf-import-"))
    try:
        django_setup(work)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        path = smoke_clone(sample, work) if args.smoke else (args.path or sample)
        tasks = count_tasks(path)
        phases = Phases()
        per_run = instrument(phases)
        print(f"import_mlrbench {path} (SQLite, local disk store)")
        first_wall, first = import_once(path, phases)
        first_runs = list(per_run["runs"])
        per_run["runs"].clear()
        second_wall, second = import_once(path, phases)
        second_runs = list(per_run["runs"])
        if not first_runs:
            raise SystemExit("no run was read: is this a clone of MLR-Bench?")
        print(
            f"  {len(first_runs)} runs; parts of the first import: "
            + ", ".join(f"{name} {sum(f.values()):.1f} s" for name, f in first.items())
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
            "measured",
            [
                ("first import", first_wall, phases_sum(first)),
                ("second import", second_wall, phases_sum(second)),
            ],
        )
        if args.path is None and not args.smoke:
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
        elif args.path is not None:
            print(
                f"\n  goals: first import {first_wall:.1f} s of 60 s, "
                f"second import {second_wall:.1f} s of 10 s"
            )
    finally:
        from common.child_pool import pool_close

        pool_close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
