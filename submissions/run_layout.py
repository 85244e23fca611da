"""What the files of an agent's run are, and whether a stage has what it needs.

MLR-Bench runs differ from agent to agent (see the data's README): the paper
is `results/paper.md` (or `results/paper_<model>.md` in the stepwise
write-ups), the log `results/log.txt`, `<agent>_log.log` or the coding
agent's trace `claude_output.json`, the code in `claude_code/`, `codex/`,
`gemini/` or elsewhere, token usage in `<step>_token_usage.json`. Pure
functions on relative paths, no database.
"""

import posixpath
import re
from collections import Counter
from collections.abc import Iterable

from .archives import IMAGE_SUFFIXES
from .models import ArtifactKind, Stage

# Folders the published agents keep their code in.
CODE_FOLDERS = frozenset({"claude_code", "codex", "gemini", "code", "src"})
# Folders that are part of a run, so an archive whose only top folder is one
# of them is not wrapped in a run folder.
# `methods` is an MLRC-Bench method archive's (laid over the task's env/methods/).
RUN_FOLDERS = CODE_FOLDERS | {"results", "figures", "idea", "proposal", "methods"}

CODE_SUFFIXES = frozenset(
    {
        ".py", ".ipynb", ".sh", ".bash", ".r", ".jl", ".js", ".ts", ".c", ".h", ".cc",
        ".cpp", ".hpp", ".cu", ".java", ".go", ".rs", ".m", ".scala", ".lua", ".pl",
        ".yaml", ".yml", ".toml", ".cfg", ".ini", ".sql",
    }
)  # fmt: skip
CODE_NAMES = frozenset(
    {"requirements.txt", "makefile", "dockerfile", "setup.py", "environment.yml", "readme.md"}
)
DATA_SUFFIXES = frozenset(
    {".csv", ".tsv", ".json", ".jsonl", ".npy", ".npz", ".pkl", ".pt", ".pth", ".parquet", ".h5"}
)
TEXT_SUFFIXES = frozenset(
    CODE_SUFFIXES
    | {".md", ".txt", ".log", ".csv", ".tsv", ".json", ".jsonl", ".tex", ".bib", ".rst"}
)

_TRACE_RE = re.compile(r"^[a-z0-9-]+_output\.json$")
_PAPER_RE = re.compile(r"^paper(_[^/]+)?\.md$")
_PDF_PAPER_RE = re.compile(r"^paper(_[^/]+)?\.pdf$")
_IDEA_RE = re.compile(r"^idea(_[^/]+)?\.md$")
_PROPOSAL_RE = re.compile(r"^proposal(_[^/]+)?\.md$")


def _document_kind(name: str) -> str | None:
    """The kind of a run's named document (the task, the paper, ...), or None."""
    if name == "task.md":
        return ArtifactKind.TASK
    if _PAPER_RE.match(name):
        return ArtifactKind.PAPER
    if _IDEA_RE.match(name):
        return ArtifactKind.IDEA
    if _PROPOSAL_RE.match(name):
        return ArtifactKind.PROPOSAL
    if name == "related_work.md":
        return ArtifactKind.RELATED_WORK
    if name == "results.md":
        return ArtifactKind.RESULTS
    return None


def _code_folder_kind(name: str, suffix: str) -> str:
    """A file inside a code folder: code, or the data and other files the code uses."""
    if suffix in CODE_SUFFIXES or name in CODE_NAMES:
        return ArtifactKind.CODE
    return ArtifactKind.DATA if suffix in DATA_SUFFIXES else ArtifactKind.OTHER


def _loose_file_kind(top: str, name: str, suffix: str) -> str:
    """A file outside the code folders that is not a named document."""
    if suffix in CODE_SUFFIXES or name in ("requirements.txt", "makefile", "dockerfile"):
        return ArtifactKind.CODE
    if suffix in DATA_SUFFIXES:
        return ArtifactKind.RESULTS if top == "results" else ArtifactKind.DATA
    return ArtifactKind.OTHER


def artifact_kind(path: str) -> str:
    """The artifact kind of one file of a run, from its relative path."""
    parts = path.split("/")
    name = parts[-1].lower()
    suffix = posixpath.splitext(name)[1]
    if name.endswith("_token_usage.json"):
        return ArtifactKind.TOKEN_USAGE
    if suffix in IMAGE_SUFFIXES or suffix == ".svg":
        return ArtifactKind.FIGURE
    if name == "log.txt" or suffix == ".log":
        return ArtifactKind.LOG
    if parts[0] in CODE_FOLDERS and len(parts) > 1:
        return _code_folder_kind(name, suffix)
    if suffix == ".pdf":
        # A PDF paper: `results/paper.pdf` (as `results/paper.md`), or any PDF at the
        # run's root (AI Scientist v2 names it after the task).
        is_paper = len(parts) == 1 or (parts[0] == "results" and _PDF_PAPER_RE.match(name))
        return ArtifactKind.PAPER if is_paper else ArtifactKind.OTHER
    if len(parts) == 1 and _TRACE_RE.match(name):
        return ArtifactKind.TRACE
    return _document_kind(name) or _loose_file_kind(parts[0], name, suffix)


def run_root(paths: Iterable[str]) -> str:
    """The folder prefix that wraps the whole run (`iclr2025_bi_align/`), or ''.

    Archives are often made of the run folder itself; its name is not part
    of the run's layout.
    """
    tops = {path.split("/", 1)[0] if "/" in path else "" for path in paths}
    if len(tops) == 1:
        (top,) = tops
        if top and top not in RUN_FOLDERS:
            return top + "/"
    return ""


# What each stage needs: (description, test on the kinds found).
_NEEDS = {
    Stage.IDEA: ("an idea (idea.md)", lambda k: k[ArtifactKind.IDEA] > 0),
    Stage.PROPOSAL: ("a proposal (proposal.md)", lambda k: k[ArtifactKind.PROPOSAL] > 0),
    # The judges review an experiment's results (judging.prompts): a run without
    # them is refused here, not failed by every judge later (issue 40).
    Stage.EXPERIMENT: (
        "code and its results, which the judges review (e.g. claude_code/ with results.md, "
        "or result tables such as results/metrics.json)",
        lambda k: k[ArtifactKind.CODE] > 0 and k[ArtifactKind.RESULTS] > 0,
    ),
    Stage.PAPER: (
        "a paper (results/paper.md or results/paper.pdf)",
        lambda k: k[ArtifactKind.PAPER] > 0,
    ),
    Stage.END2END: (
        "a paper (results/paper.md or results/paper.pdf)",
        lambda k: k[ArtifactKind.PAPER] > 0,
    ),
    Stage.METHOD: ("code (e.g. a method/ or code/ folder)", lambda k: k[ArtifactKind.CODE] > 0),
}


def stage_check(stage: str, kinds: Iterable[str]) -> str | None:
    """None when the run has what the stage needs, else a message that says
    what is missing and what was found."""
    counts = Counter(kinds)
    description, test = _NEEDS[Stage(stage)]
    if test(counts):
        return None
    labels = dict(ArtifactKind.choices)
    found = ", ".join(
        f"{n} {labels[kind].lower()}" for kind, n in sorted(counts.items(), key=lambda kv: kv[0])
    )
    return (
        f"the {Stage(stage).label.lower()} stage needs {description}; found {found or 'no files'}"
    )


# The canonical name of each kind's file, most preferred first.
_PREFERRED_PATHS: dict[str, tuple[str, ...]] = {
    ArtifactKind.PAPER: ("results/paper.md", "paper.md", "results/paper.pdf", "paper.pdf"),
    ArtifactKind.IDEA: ("idea.md",),
    ArtifactKind.PROPOSAL: ("proposal.md",),
    ArtifactKind.RELATED_WORK: ("related_work.md",),
    ArtifactKind.RESULTS: ("results/results.md", "results.md"),
    ArtifactKind.LOG: ("results/log.txt", "log.txt"),
    ArtifactKind.TASK: ("task.md",),
}


def primary_path(paths: Iterable[str], kind: str) -> str | None:
    """The file to show for a kind (the paper, the idea, ...): the shallowest,
    preferring the canonical name (`results/paper.md`, `idea.md`)."""
    preferred = _PREFERRED_PATHS.get(kind, ())
    candidates = [path for path in paths if artifact_kind(path) == kind]
    if not candidates:
        return None
    for name in preferred:
        if name in candidates:
            return name
    if kind == ArtifactKind.LOG:
        # An agent's own log (`codex_log.log`) before logs its code wrote.
        top = [path for path in candidates if "/" not in path]
        if top:
            return sorted(top)[0]
    if kind == ArtifactKind.RESULTS:
        markdown = [path for path in candidates if path.endswith(".md")]
        if markdown:
            candidates = markdown
        else:
            return None
    return sorted(candidates, key=lambda path: (path.count("/"), path))[0]
