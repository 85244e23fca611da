"""MLR-Agent's LLM stages: idea, literature review, proposal and paper, each a
prompt built from the workspace and one call, written where MLR-Bench's runs
keep it. The experiment stage is the coding loop (coding.py)."""

from __future__ import annotations

import re
from pathlib import Path

from common import llm as gateway

from .context import StageContext, StageFailed
from .workspace import LOG_PATH, PAPER_PATH, regular_files, text_write

SYSTEM = (
    "You are MLR-Agent, an AI research agent working on an open-ended machine learning "
    "research task. Be concrete and honest: never report a result you did not obtain."
)
LOG_TAIL_CHARS = 20_000
CODE_CHARS = 30_000
FIGURES_MAX = 4
FIGURE_MAX_BYTES = 2 * 1024 * 1024
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
_FENCE_RE = re.compile(r"^```(?:markdown|md)?\s*\n(.*)\n```\s*$", re.DOTALL)


def read(workspace: Path, name: str) -> str:
    path = workspace / name
    if path.is_file() and not path.is_symlink():
        return path.read_text(encoding="utf-8", errors="replace")
    return ""


def unfenced(text: str) -> str:
    """The document itself when a model wrapped it in a ```markdown fence."""
    match = _FENCE_RE.match(text.strip())
    return (match.group(1) if match else text).strip() + "\n"


def _section(title: str, body: str) -> str:
    return f"## {title}\n\n{body.strip() or '(none)'}\n\n"


def _user(text: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def idea_stage(context: StageContext) -> str:
    task = read(context.workspace, "task.md")
    text = context.ask(
        model=context.run.model,
        messages=_user(
            _section("Task", task)
            + "Propose one novel, feasible research idea for this task. Answer in markdown "
            "with a title, the motivation, the main idea and how it would be evaluated."
        ),
    )
    text_write(context.workspace / "idea.md", unfenced(text))
    return "idea.md written"


def lit_stage(context: StageContext) -> str:
    workspace = context.workspace
    text = context.ask(
        model=context.run.lit_model,
        messages=_user(
            _section("Task", read(workspace, "task.md"))
            + _section("Idea", read(workspace, "idea.md"))
            + "Search the literature for work related to this idea (2023 onwards first). "
            "Answer in markdown: the related papers with authors, year and venue, what each "
            "does, and the key challenges they leave open. Cite only papers that exist."
        ),
    )
    text_write(workspace / "related_work.md", unfenced(text))
    return "related_work.md written"


def proposal_stage(context: StageContext) -> str:
    workspace = context.workspace
    text = context.ask(
        model=context.run.model,
        messages=_user(
            _section("Task", read(workspace, "task.md"))
            + _section("Idea", read(workspace, "idea.md"))
            + _section("Related work", read(workspace, "related_work.md"))
            + "Write a research proposal in markdown: title, introduction, methodology "
            "(algorithm, experimental design, datasets, metrics) and expected outcomes."
        ),
    )
    text_write(workspace / "proposal.md", unfenced(text))
    return "proposal.md written"


def _code_listing(workspace: Path) -> str:
    parts: list[str] = []
    used = 0
    for relative, path in (
        regular_files(workspace / "code") if (workspace / "code").is_dir() else ()
    ):
        if path.suffix not in (".py", ".sh", ".txt", ".md", ".yaml", ".yml", ".json"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if used + len(text) > CODE_CHARS:
            parts.append(f"### code/{relative}\n(left out: the listing budget is spent)\n")
            continue
        used += len(text)
        parts.append(f"### code/{relative}\n```\n{text}\n```\n")
    return "\n".join(parts)


def figure_parts(workspace: Path) -> list[dict]:
    """The run's figures as image parts, for a model that reads them."""
    parts: list[dict] = []
    for relative, path in regular_files(workspace):
        media_type = _IMAGE_TYPES.get(path.suffix.lower())
        if media_type is None or not relative.startswith(("results/", "code/")):
            continue
        if path.stat().st_size > FIGURE_MAX_BYTES or len(parts) >= FIGURES_MAX:
            continue
        parts.append({"type": "text", "text": f"Figure {relative}:"})
        parts.append(gateway.image_part(path.read_bytes(), media_type=media_type))
    return parts


def paper_stage(context: StageContext) -> str:
    workspace = context.workspace
    context.budget_check()  # a cap the coding loop reached ends the run here
    log = read(workspace, LOG_PATH)
    if not log.strip():
        raise StageFailed("there is no execution log (results/log.txt) to write a paper from")
    prompt = (
        _section("Task", read(workspace, "task.md"))
        + _section("Idea", read(workspace, "idea.md"))
        + _section("Proposal", read(workspace, "proposal.md"))
        + _section("Code", _code_listing(workspace))
        + _section("Execution log (results/log.txt, its end)", log[-LOG_TAIL_CHARS:])
        + "Write the paper in markdown: title, abstract, introduction, method, experiment "
        "setup, results (tables with the numbers the log printed, and the figures), "
        "analysis, limitations, conclusion, references. Report only numbers from the log."
    )
    figures = figure_parts(workspace)
    content: str | list[dict] = [{"type": "text", "text": prompt}, *figures] if figures else prompt
    text = context.ask(
        model=context.run.model,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}],
    )
    text_write(workspace / PAPER_PATH, unfenced(text))
    return f"{PAPER_PATH} written" + (f" ({len(figures) // 2} figure(s) read)" if figures else "")
