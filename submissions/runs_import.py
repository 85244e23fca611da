"""The `runs` part of `import_mlrbench`: every published run under
`agent_results/` becomes a submission of source `import`.

- `end2end_<agent>/<task>/`: stage end2end, agent = the folder's suffix;
- `experiments_and_writeups/<coding-agent>/<task>/`: stage experiment, agent =
  the coding agent; in both, the judges' hallucination reviews at the run's root
  (`review_hallucination_<judge>.json`) are judgments, read by the judging part,
  not the agent's output; each `results/paper_<model>.md` in it is a stage paper
  submission of agent `<model>` (with the figures it links and the run's
  task, idea, proposal and results as context);
- `ideas_and_proposals/<task>/{idea,proposal}/<stage>_<model>.md`: stages idea
  and proposal, agent = the model;
- `ai_scientist_v2_papers/<base-model>/<task>/`: stage end2end, agent
  `ai-scientist-v2`: the PDF paper (`<task>.pdf`, kept at the run's root), the
  best solutions' code (`experiments/best_solution_*.py`), the JSON summaries of
  its tree search as results (`results/<name>.json`), the idea (`idea.md`) and
  `token_tracker.json` (its cost). The reviews beside them are judgments, read
  by the judging part.

A run whose files are already stored (same digest) is left alone, so a
second import creates nothing. A file that cannot be read is named and left
out; a run without what its stage needs is named and skipped.
"""

import hashlib
import posixpath
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.db import transaction

from benchmark.mlrbench_import import ImportOptions, ImportPartReport
from benchmark.models import Agent, ModelFamily, Task, Team

from .archives import IntakeLimits, files_digest, folder_unpack
from .intake import DuplicateSubmission, RunFiles, incoming_folder, submission_store
from .ledger import submission_ledger_compute
from .models import Stage, Submission, SubmissionInput, SubmissionSource
from .run_layout import artifact_kind, stage_check

PUBLISHED_TEAM = ("MLR-Bench (published runs)", "mlr-bench")


@dataclass(frozen=True)
class AgentFacts:
    display_name: str
    base_model: str
    coding_agent: str
    scaffold: str
    model_family: str


# What the MLR-Bench paper and the run folders say about the published agents.
PUBLISHED_AGENTS = {
    "claude": AgentFacts(
        "Claude 3.7 Sonnet + Claude Code",
        "claude-3-7-sonnet-20250219",
        "Claude Code",
        "MLR-Agent",
        ModelFamily.ANTHROPIC,
    ),
    "codex": AgentFacts("Codex CLI (o4-mini)", "o4-mini", "Codex CLI", "Codex", ModelFamily.OPENAI),
    "gemini": AgentFacts(
        "Gemini 2.5 Pro + Claude Code",
        "gemini-2.5-pro-preview-03-25",
        "Claude Code",
        "MLR-Agent",
        ModelFamily.GOOGLE,
    ),
    "gemini-cli": AgentFacts(
        "Gemini CLI (Gemini 2.5 Pro)",
        "gemini-2.5-pro-preview-03-25",
        "Gemini CLI",
        "Gemini CLI",
        ModelFamily.GOOGLE,
    ),
    "o4-mini": AgentFacts(
        "o4-mini + Claude Code",
        "o4-mini-2025-04-16",
        "Claude Code",
        "MLR-Agent",
        ModelFamily.OPENAI,
    ),
}

_FAMILY_PREFIXES = (
    ("claude", ModelFamily.ANTHROPIC),
    ("gpt", ModelFamily.OPENAI),
    ("o1", ModelFamily.OPENAI),
    ("o3", ModelFamily.OPENAI),
    ("o4", ModelFamily.OPENAI),
    ("codex", ModelFamily.OPENAI),
    ("gemini", ModelFamily.GOOGLE),
    ("deepseek", ModelFamily.DEEPSEEK),
    ("qwen", ModelFamily.QWEN),
    ("ministral", ModelFamily.MISTRAL),
    ("mistral", ModelFamily.MISTRAL),
    ("llama", ModelFamily.META),
)


AI_SCIENTIST_AGENT = "ai-scientist-v2"
AI_SCIENTIST_FOLDER = "ai_scientist_v2_papers"


def ai_scientist_facts(base_model: str) -> AgentFacts:
    return AgentFacts(
        f"AI Scientist v2 ({base_model})",
        base_model,
        "",
        "AI Scientist v2",
        model_family_guess(base_model),
    )


def model_family_guess(name: str) -> str:
    lower = name.lower()
    for prefix, family in _FAMILY_PREFIXES:
        if lower.startswith(prefix):
            return family
    return ModelFamily.OTHER


def agent_facts(name: str, base_model: str = "") -> AgentFacts:
    if name == AI_SCIENTIST_AGENT:
        return ai_scientist_facts(base_model or "o4-mini")
    return PUBLISHED_AGENTS.get(name) or AgentFacts(name, name, "", "", model_family_guess(name))


@dataclass
class PublishedRun:
    agent: str
    task: str
    stage: str
    label: str  # the run's folder or file, for progress and problems
    files: list[tuple[Path, str]]  # (file on disk, relative path in the submission)
    base_model: str = ""  # where the folder names it (AI Scientist v2)
    # The label of the run this one was built on (a write-up: the experiment run
    # of its folder, whose trace its provenance ledger reads).
    built_on: str = ""


_RUN_REVIEW_RE = re.compile(r"^review_hallucination_[^/]+\.json$")


def _folder_files(folder: Path) -> list[tuple[Path, str]]:
    """Every file under `folder`, without following links (a link is listed
    so that the intake names it); the judges' reviews at its root left out."""
    found = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if _RUN_REVIEW_RE.match(relative):
            continue
        if path.is_symlink() or not path.is_dir():
            found.append((path, relative))
    return found


_IMAGE_LINK_RE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_IMG_TAG_RE = re.compile(r"<img\b[^>]*\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)


def paper_linked_paths(text: str, paper_path: str) -> list[str]:
    """Relative paths of the images a markdown paper links, resolved against
    the paper's folder; links that leave the run are ignored."""
    found = []
    base = posixpath.dirname(paper_path)
    for match in (*_IMAGE_LINK_RE.finditer(text), *_IMG_TAG_RE.finditer(text)):
        link = match.group(1)
        parts = urlsplit(link)
        if parts.scheme or parts.netloc or link.startswith("/"):
            continue
        path = posixpath.normpath(posixpath.join(base, unquote(parts.path)))
        if not path.startswith("../") and path != "..":
            found.append(path)
    return found


_PAPER_FILE_RE = re.compile(r"^paper_(.+)\.md$")
_CONTEXT_FILES = ("task.md", "idea.md", "proposal.md", "related_work.md", "results.md")


def _paper_runs(coding_agent: str, task: str, folder: Path) -> Iterator[PublishedRun]:
    results = folder / "results"
    if not results.is_dir():
        return
    for paper in sorted(results.iterdir()):
        match = _PAPER_FILE_RE.match(paper.name)
        if not match or not paper.is_file():
            continue
        try:
            text = paper.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        files = [(paper, "results/paper.md")]
        for name in _CONTEXT_FILES:
            if (folder / name).is_file():
                files.append((folder / name, name))
        if (results / "results.md").is_file():
            files.append((results / "results.md", "results/results.md"))
        seen = {relative for _, relative in files}
        for relative in paper_linked_paths(text, "results/paper.md"):
            if relative not in seen and (folder / relative).is_file():
                seen.add(relative)
                files.append((folder / relative, relative))
        yield PublishedRun(
            agent=match.group(1),
            task=task,
            stage=Stage.PAPER,
            label=f"experiments_and_writeups/{coding_agent}/{task}/results/{paper.name}",
            files=files,
            built_on=f"experiments_and_writeups/{coding_agent}/{task}",
        )


def _ai_scientist_files(folder: Path) -> list[tuple[Path, str]]:
    """An AI Scientist v2 run folder in the site's layout (see the module docstring);
    its reviews are left out (they are judgments, not the agent's output)."""
    files: list[tuple[Path, str]] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("review_") or path.is_dir():
            continue
        files.append((path, path.name))
    experiments = folder / "experiments"
    for path in sorted(experiments.iterdir()) if experiments.is_dir() else []:
        if path.is_dir():
            continue
        if path.suffix == ".json":
            files.append((path, f"results/{path.name}"))
        elif path.name == "idea.md":
            files.append((path, "idea.md"))
        else:
            files.append((path, f"experiments/{path.name}"))
    return files


def _ai_scientist_runs(root: Path) -> Iterator[PublishedRun]:
    for model_folder in _subfolders(root / AI_SCIENTIST_FOLDER):
        for task_folder in _subfolders(model_folder):
            yield PublishedRun(
                agent=AI_SCIENTIST_AGENT,
                task=task_folder.name,
                stage=Stage.END2END,
                label=f"{AI_SCIENTIST_FOLDER}/{model_folder.name}/{task_folder.name}",
                files=_ai_scientist_files(task_folder),
                base_model=model_folder.name,
            )


def _subfolders(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if path.is_dir() and not path.is_symlink())


def published_runs(root: Path) -> Iterator[PublishedRun]:
    """Every run under `root/agent_results`, in a stable order."""
    results = root / "agent_results"
    for agent_folder in sorted(results.glob("end2end_*")):
        agent = agent_folder.name.removeprefix("end2end_")
        for task_folder in _subfolders(agent_folder):
            yield PublishedRun(
                agent=agent,
                task=task_folder.name,
                stage=Stage.END2END,
                label=f"{agent_folder.name}/{task_folder.name}",
                files=_folder_files(task_folder),
            )
    writeups = results / "experiments_and_writeups"
    for coding_folder in _subfolders(writeups):
        for task_folder in _subfolders(coding_folder):
            files = [
                (path, relative)
                for path, relative in _folder_files(task_folder)
                if not _PAPER_FILE_RE.match(relative.removeprefix("results/"))
            ]
            yield PublishedRun(
                agent=coding_folder.name,
                task=task_folder.name,
                stage=Stage.EXPERIMENT,
                label=f"experiments_and_writeups/{coding_folder.name}/{task_folder.name}",
                files=files,
            )
            yield from _paper_runs(coding_folder.name, task_folder.name, task_folder)
    for task_folder in _subfolders(results / "ideas_and_proposals"):
        for stage in (Stage.IDEA, Stage.PROPOSAL):
            stage_folder = task_folder / str(stage)
            if not stage_folder.is_dir():
                continue
            prefix = f"{stage}_"
            for path in sorted(stage_folder.glob(f"{prefix}*.md")):
                yield PublishedRun(
                    agent=path.stem.removeprefix(prefix),
                    task=task_folder.name,
                    stage=stage,
                    label=f"ideas_and_proposals/{task_folder.name}/{stage}/{path.name}",
                    files=[(path, f"{stage}.md")],
                )
    yield from _ai_scientist_runs(root)


def _quick_digest(files: list[tuple[Path, str]]) -> str | None:
    """The digest the run will have once stored, computed without copying;
    None when a file cannot be read (the copy will name it)."""
    digest = hashlib.sha256()
    entries = []
    for path, relative in files:
        if path.is_symlink() or not path.is_file():
            return None
        file_digest = hashlib.sha256()
        try:
            with path.open("rb") as handle:
                while chunk := handle.read(1024 * 1024):
                    file_digest.update(chunk)
        except OSError:
            return None
        entries.append((relative, file_digest.hexdigest()))
    for relative, sha in sorted(entries):
        digest.update(f"{relative}\0{sha}\n".encode())
    return digest.hexdigest()


class _Agents:
    """Agents by name, created on first use in the published runs' team."""

    def __init__(self, report: ImportPartReport):
        self.report = report
        self.cache: dict[str, Agent] = {}
        self.team: Team | None = None

    def get(self, name: str, base_model: str = "") -> Agent:
        if name not in self.cache:
            agent = Agent.objects.filter(name=name).first()
            if agent is None:
                if self.team is None:
                    self.team, _ = Team.objects.get_or_create(
                        slug=PUBLISHED_TEAM[1], defaults={"name": PUBLISHED_TEAM[0]}
                    )
                facts = agent_facts(name, base_model)
                with transaction.atomic():
                    agent, created = Agent.objects.get_or_create(
                        name=name,
                        defaults={
                            "team": self.team,
                            "display_name": facts.display_name,
                            "base_model": facts.base_model,
                            "coding_agent": facts.coding_agent,
                            "scaffold": facts.scaffold,
                            "model_family": facts.model_family,
                            "description": "Published with the MLR-Bench repository.",
                        },
                    )
                if created:
                    self.report.add("agents created")
            self.cache[name] = agent
        return self.cache[name]


StoredDigests = set[tuple[str, str, str, str]]


def stored_digests() -> StoredDigests:
    """(agent, task, stage, digest) of every stored submission, read in one query,
    so that a run already stored costs reading its files and nothing else."""
    return set(
        Submission.objects.values_list("agent__name", "task__slug", "stage", "archive_sha256")
    )


def _stored_run(run: PublishedRun, task: Task, digest: str) -> Submission | None:
    return Submission.objects.filter(
        agent__name=run.agent, task=task, stage=run.stage, archive_sha256=digest
    ).first()


def _link_stored(submission: Submission, based_on: Submission) -> None:
    """A write-up stored before the import linked write-ups to their experiment
    run: link it now and compute its ledger again (it reads that run's trace)."""
    if submission.inputs.exists():
        return
    SubmissionInput.objects.create(submission=submission, based_on=based_on, position=0)
    submission_ledger_compute(submission=submission)


def run_import(
    *,
    run: PublishedRun,
    agents: _Agents,
    task: Task,
    limits: IntakeLimits,
    problems: list[str],
    stored: StoredDigests,
    built_on: Submission | None = None,
) -> tuple[str, Submission | None]:
    """Store one published run: `created`, `unchanged` or `skipped`, and the
    submission (none when skipped). A run whose digest is `stored` is
    `unchanged` before any parsing, rendering or PDF work. `built_on`: the
    stored run it was built on (the experiment run of a write-up)."""
    quick = _quick_digest(run.files)
    if quick is not None and (run.agent, task.slug, str(run.stage), quick) in stored:
        found = _stored_run(run, task, quick)
        if found is not None and built_on is not None:
            _link_stored(found, built_on)
        return "unchanged", found
    staging = incoming_folder()
    try:
        folder = staging / "run"
        folder.mkdir()
        files = folder_unpack(
            files=run.files,
            dest=folder,
            limits=limits,
            on_problem=lambda message: problems.append(f"{run.label}: {message}"),
        )
        problem = stage_check(run.stage, (artifact_kind(item.path) for item in files))
        if problem:
            problems.append(f"{run.label}: skipped, {problem}")
            return "skipped", None
        try:
            submission = submission_store(
                agent=agents.get(run.agent, run.base_model),
                task=task,
                stage=run.stage,
                uploader=None,
                source=SubmissionSource.IMPORT,
                run=RunFiles(folder=folder, files=files, digest=files_digest(files)),
                notify=False,
                based_on=[built_on] if built_on is not None else (),
            )
        except DuplicateSubmission as exc:
            if built_on is not None:
                _link_stored(exc.submission, built_on)
            return "unchanged", exc.submission
        return "created", submission
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def runs_part(path: Path, options: ImportOptions) -> ImportPartReport:
    """The `runs` part of import_mlrbench (order 20)."""
    report = ImportPartReport()
    if not (path / "agent_results").is_dir() and not (path / AI_SCIENTIST_FOLDER).is_dir():
        # A folder of tasks alone is a valid, if small, clone.
        return report
    runs = list(published_runs(path))
    tasks = {task.slug: task for task in Task.objects.filter(slug__in={r.task for r in runs})}
    agents = _Agents(report)
    limits = IntakeLimits.from_settings()
    stored = stored_digests()
    # By label: the stored submission of each run, for the runs built on it.
    by_label: dict[str, Submission] = {}
    for stage in Stage.values:
        if any(run.stage == stage for run in runs):
            report.counts.setdefault(f"{stage} created", 0)
            report.counts.setdefault(f"{stage} unchanged", 0)
    for number, run in enumerate(runs, start=1):
        options.progress(f"runs: {number}/{len(runs)} {run.label}")
        task = tasks.get(run.task)
        if task is None:
            report.problems.append(f"{run.label}: no task {run.task!r} in the catalogue")
            continue
        try:
            outcome, submission = run_import(
                run=run,
                agents=agents,
                task=task,
                limits=limits,
                problems=report.problems,
                stored=stored,
                built_on=by_label.get(run.built_on) if run.built_on else None,
            )
        except Exception as exc:  # one broken run must not stop the other thousands
            report.problems.append(f"{run.label}: {exc}")
            continue
        if submission is not None:
            by_label[run.label] = submission
        report.add(f"{run.stage} {outcome}")
    return report
