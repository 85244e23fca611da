"""What a judge reads: the rubric as instructions, then the task description,
the stage's inputs (idea, literature review, proposal, results) and the output
under review. Experiment and end-to-end judges also get the code and the
execution log, each cut to a budget (settings `JUDGE_CODE_BUDGET_CHARS`,
`JUDGE_LOG_BUDGET_CHARS`, `JUDGE_DOCUMENT_BUDGET_CHARS`) with a visible marker
where text was left out, so the judge knows it has not seen everything.
When the site has re-run the submission's code itself (a reproduction run),
they also get that run's log, under the same log budget and marker, set apart
from the agent's own log, with the reproduction check's verdict and evidence:
the agent's log says what the agent claims happened, the re-run what its code
does. The prompt hash covers all of it, so a new re-run changes the hash.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.conf import settings

from experiments.selectors import ReproductionForJudges, reproduction_for_judges
from submissions.models import Artifact, ArtifactKind, Stage, Submission
from submissions.pdf_text import is_pdf_path, pdf_text_of

from . import llm
from .models import JudgingCondition, JudgmentKind, Rubric


class PromptError(Exception):
    """The submission lacks what its stage's judge must read; retrying cannot help."""


# For each stage: the earlier stages' documents the judge is given, and the kinds
# that make up the output under review.
_STAGE_INPUTS: dict[str, tuple[str, ...]] = {
    Stage.IDEA: (),
    Stage.PROPOSAL: (ArtifactKind.IDEA, ArtifactKind.RELATED_WORK),
    Stage.EXPERIMENT: (ArtifactKind.IDEA, ArtifactKind.RELATED_WORK, ArtifactKind.PROPOSAL),
    Stage.PAPER: (
        ArtifactKind.IDEA,
        ArtifactKind.RELATED_WORK,
        ArtifactKind.PROPOSAL,
        ArtifactKind.RESULTS,
    ),
    Stage.END2END: (),
}
_STAGE_OUTPUT: dict[str, str] = {
    Stage.IDEA: ArtifactKind.IDEA,
    Stage.PROPOSAL: ArtifactKind.PROPOSAL,
    Stage.EXPERIMENT: ArtifactKind.RESULTS,
    Stage.PAPER: ArtifactKind.PAPER,
    Stage.END2END: ArtifactKind.PAPER,
}
_CODE_STAGES = {Stage.EXPERIMENT, Stage.END2END}


def output_kind(stage: str) -> str | None:
    """The artifact kind a stage's judges review (the paper, the results), if any."""
    return _STAGE_OUTPUT.get(stage)


_HEADINGS: dict[str, str] = {
    ArtifactKind.IDEA: "Research idea",
    ArtifactKind.RELATED_WORK: "Literature review",
    ArtifactKind.PROPOSAL: "Research proposal",
    ArtifactKind.RESULTS: "Experimental results",
    ArtifactKind.PAPER: "Paper",
}
_UNDER_REVIEW: dict[str, str] = {
    Stage.IDEA: "Research idea under review",
    Stage.PROPOSAL: "Research proposal under review",
    Stage.EXPERIMENT: "Experimental results under review",
    Stage.PAPER: "Paper under review",
    Stage.END2END: "Paper under review",
}


@dataclass(frozen=True)
class JudgePrompt:
    messages: list[dict]
    sha256: str


def cut_marker(left_out: int, budget: int, what: str) -> str:
    return (
        f"\n[... {left_out} characters of {what} cut here to fit the judge's budget of "
        f"{budget} characters ...]\n"
    )


def text_cut(text: str, budget: int, *, what: str, keep_tail: bool = False) -> str:
    """`text` if it fits, else its start (and, for logs, its end, where the final
    numbers usually are) around a marker that says how much was left out."""
    if len(text) <= budget:
        return text
    left_out = len(text) - budget
    if keep_tail:
        head = budget // 2
        return (
            text[:head] + cut_marker(left_out, budget, what) + text[len(text) - (budget - head) :]
        )
    return text[:budget] + cut_marker(left_out, budget, what)


def _is_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def artifact_text(artifact: Artifact, *, limit: int) -> str | None:
    """The artifact's text (UTF-8, undecodable bytes replaced), None for binary files;
    a PDF's text is the one extracted at intake. At most about `limit` characters plus
    the head and tail are read from disk, so a huge log never has to fit in memory."""
    if is_pdf_path(artifact.path):
        return pdf_text_of(artifact, limit=4 * limit + 4096)
    with artifact.file.open("rb") as handle:
        size = artifact.size or 0
        if size > 4 * limit + 4096:
            head = handle.read(2 * limit)
            handle.seek(max(0, size - 2 * limit))
            tail = handle.read()
            if _is_binary(head):
                return None
            skipped = size - len(head) - len(tail)
            return (
                head.decode("utf-8", errors="replace")
                + f"\n[... {skipped} bytes not read ...]\n"
                + tail.decode("utf-8", errors="replace")
            )
        data = handle.read()
    if _is_binary(data):
        return None
    return data.decode("utf-8", errors="replace")


def _documents(artifacts: list[Artifact], *, budget: int, what: str) -> str:
    texts = []
    for artifact in artifacts:
        text = artifact_text(artifact, limit=budget)
        if text is None:
            continue
        header = f"## {artifact.path}\n\n" if len(artifacts) > 1 else ""
        texts.append(header + text.strip())
    return text_cut("\n\n".join(texts), budget, what=what)


def _code_section(artifacts: list[Artifact], *, budget: int) -> str:
    # READMEs first: they say how the rest fits together.
    ordered = sorted(artifacts, key=lambda a: (not a.path.lower().endswith("readme.md"), a.path))
    parts: list[str] = []
    used = 0
    not_shown: list[str] = []
    left_out = 0
    for artifact in ordered:
        if used >= budget:
            not_shown.append(artifact.path)
            left_out += artifact.size
            continue
        text = artifact_text(artifact, limit=budget)
        if text is None:
            not_shown.append(f"{artifact.path} (binary)")
            continue
        block = f"### {artifact.path}\n```\n{text}\n```"
        room = budget - used
        if len(block) > room:
            left_out += len(block) - room
            block = block[:room] + cut_marker(len(block) - room, budget, "code")
        parts.append(block)
        used += len(block)
    if not_shown:
        parts.append(
            f"[... {len(not_shown)} more code file(s), about {left_out} characters, cut to fit "
            f"the judge's budget of {budget} characters: {', '.join(not_shown[:50])} ...]"
        )
    return "\n\n".join(parts)


# Enough evidence lines for the judge to see which numbers were not produced (the
# unmatched claims come first) without a long paper's every number.
_EVIDENCE_LINES = 20


def _number(value) -> str:
    return "none" if value is None else f"{value:g}"


def _reproduction_section(repro: ReproductionForJudges, *, budget: int) -> str:
    exit_code = "" if repro.exit_code is None else f", exit code {repro.exit_code}"
    lines = [
        "# The site's own re-run of the code (reproduction run)",
        "",
        "The benchmark site ran the submitted code again itself, in its sandbox, with "
        f"`{repro.command}` ({repro.status.lower()}{exit_code}). This is not the agent's "
        "own execution log above: it is what the submitted code actually printed when the "
        "site ran it. Numbers the paper reports that this run did not produce may be "
        "fabricated.",
        "",
    ]
    if repro.verdict is None:
        lines.append("Reproduction check: none was recorded for this run.")
    else:
        lines.append(f"Reproduction check: {repro.verdict}. {repro.summary}")
        if repro.evidence:
            lines += [
                "",
                "Evidence (each number the submission reports, and the closest "
                "number the re-run produced):",
            ]
            for item in repro.evidence[:_EVIDENCE_LINES]:
                where = f" at {item.get('closest_where')}" if item.get("closest_where") else ""
                lines.append(
                    f"- reported {item.get('claimed_text') or _number(item.get('claimed'))} "
                    f"({item.get('claimed_where')}): closest produced "
                    f"{_number(item.get('closest'))}{where}: "
                    + ("reproduced" if item.get("matched") else "NOT reproduced")
                )
            if len(repro.evidence) > _EVIDENCE_LINES:
                lines.append(f"- ... {len(repro.evidence) - _EVIDENCE_LINES} more")
    log = text_cut(repro.log.strip(), budget, what="re-run log", keep_tail=True)
    lines += ["", "## Log of the re-run", "", log or "The re-run wrote no log."]
    return "\n".join(lines)


def _by_kind(submission: Submission) -> dict[str, list[Artifact]]:
    grouped: dict[str, list[Artifact]] = {}
    for artifact in Artifact.objects.filter(submission_id=submission.pk).order_by("path"):
        grouped.setdefault(artifact.kind, []).append(artifact)
    return grouped


def _execution_log(logs: list[Artifact], *, budget: int) -> str:
    if not logs:
        return "The submission contains no execution log."
    texts = []
    for log in logs:
        text = artifact_text(log, limit=budget)
        if text is not None:
            texts.append(f"## {log.path}\n\n{text.strip()}")
    return text_cut("\n\n".join(texts), budget, what="execution log", keep_tail=True)


def _code_sections(
    submission: Submission,
    artifacts: dict[str, list[Artifact]],
    *,
    condition: str,
) -> list[str]:
    """What the judges of a stage with code read besides the paper: the code,
    the execution log and the site's own re-run (unless judging without code)."""
    if condition == JudgingCondition.NO_CODE:
        return ["# Code and execution log\n\nNot provided: judge the paper alone."]
    code = artifacts.get(ArtifactKind.CODE, [])
    sections = [
        "# Code\n\n"
        + (
            _code_section(code, budget=settings.JUDGE_CODE_BUDGET_CHARS)
            if code
            else "The submission contains no code."
        )
    ]
    log_budget = settings.JUDGE_LOG_BUDGET_CHARS
    logs = artifacts.get(ArtifactKind.LOG, []) + artifacts.get(ArtifactKind.TRACE, [])
    sections.append(f"# Execution log\n\n{_execution_log(logs, budget=log_budget)}")
    repro = reproduction_for_judges(submission_id=submission.pk, max_bytes=log_budget)
    if repro is not None:
        sections.append(_reproduction_section(repro, budget=log_budget))
    return sections


def _pdf_parts(under_review: list[Artifact]) -> tuple[list[dict], list[str]]:
    """The PDF papers under review as message content parts, and their digests (which
    stand for them in the prompt's hash)."""
    parts: list[dict] = []
    digests: list[str] = []
    for artifact in under_review:
        if is_pdf_path(artifact.path):
            with artifact.file.open("rb") as handle:
                parts.append(llm.pdf_content_part(handle.read()))
            digests.append(artifact.sha256)
    return parts, digests


def _method_sections(
    submission: Submission, artifacts: dict[str, list[Artifact]], *, condition: str
) -> list[str]:
    """A method of an objective task: its description (idea.md, or method_name.txt
    when it has none) and, with code, the code, never its scores, so the judges'
    opinion can be set against the real result."""
    budget = settings.JUDGE_DOCUMENT_BUDGET_CHARS
    descriptions = artifacts.get(ArtifactKind.IDEA, [])
    if descriptions:
        description = _documents(descriptions, budget=budget, what="the method's description")
    else:
        names = [a for kind in artifacts.values() for a in kind if a.path == "method_name.txt"]
        name = (artifact_text(names[0], limit=200) or "").strip() if names else ""
        description = f"No description was given; the method is called `{name or 'unnamed'}`."
    sections = [f"# Method under review\n\n{description.strip()}"]
    if condition == JudgingCondition.NO_CODE:
        sections.append("# Code\n\nNot provided: judge the method from its description alone.")
        return sections
    code = [a for a in artifacts.get(ArtifactKind.CODE, []) if a.path != "method_name.txt"]
    sections.append(
        "# Code\n\n"
        + (
            _code_section(code, budget=settings.JUDGE_CODE_BUDGET_CHARS)
            if code
            else "The submission contains no code."
        )
    )
    return sections


def _messages_digest(
    rubric: Rubric, sections: list[str], pdfs: tuple[list[dict], list[str]] = ([], [])
) -> JudgePrompt:
    """The messages and their hash; a PDF sent along counts in the hash by its digest."""
    text = "\n\n".join(sections)
    parts, digests = pdfs
    hashed: list[dict] = [
        {"role": "system", "content": rubric.prompt},
        {"role": "user", "content": text},
    ]
    user: dict = {"role": "user", "content": text}
    if parts:
        hashed[1]["pdf_sha256"] = digests
        user = {"role": "user", "content": [{"type": "text", "text": text}, *parts]}
    messages = [{"role": "system", "content": rubric.prompt}, user]
    digest = hashlib.sha256(
        json.dumps(hashed, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    return JudgePrompt(messages=messages, sha256=digest)


def judge_prompt_build(
    *, submission: Submission, rubric: Rubric, condition: str, reads_pdf: bool = False
) -> JudgePrompt:
    """The messages sent to the judge, and their hash (same inputs, same hash). A judge
    whose model reads PDFs (`reads_pdf`) gets a PDF paper itself besides its text."""
    stage = submission.stage
    if stage == Stage.METHOD:
        sections = [f"# Task description\n\n{submission.task.description.strip()}"]
        sections += _method_sections(submission, _by_kind(submission), condition=condition)
        return _messages_digest(rubric, sections)
    if stage not in _STAGE_OUTPUT:
        raise PromptError(f"the {stage} stage is not judged by an LLM judge")
    document_budget = settings.JUDGE_DOCUMENT_BUDGET_CHARS
    artifacts = _by_kind(submission)
    output_kind = _STAGE_OUTPUT[stage]
    under_review = artifacts.get(output_kind, [])
    if not under_review:
        raise PromptError(
            f"the submission has no {ArtifactKind(output_kind).label.lower()} artifact to review"
        )

    sections = [f"# Task description\n\n{submission.task.description.strip()}"]
    for kind in _STAGE_INPUTS[stage]:
        if artifacts.get(kind):
            text = _documents(artifacts[kind], budget=document_budget, what=_HEADINGS[kind])
            sections.append(f"# {_HEADINGS[kind]}\n\n{text}")
    review_text = _documents(under_review, budget=document_budget, what="the output under review")
    if not review_text.strip():
        raise PromptError("the output under review is empty or not text")
    sections.append(f"# {_UNDER_REVIEW[stage]}\n\n{review_text}")
    figures = artifacts.get(ArtifactKind.FIGURE, [])
    if figures:
        sections.append(
            "# Figures (files present, not shown)\n\n"
            + "\n".join(f"- {figure.path}" for figure in figures)
        )

    # A hallucination review reads the code and the logs wherever there are some.
    if stage in _CODE_STAGES or rubric.kind == JudgmentKind.HALLUCINATION:
        sections += _code_sections(submission, artifacts, condition=condition)
    return _messages_digest(rubric, sections, _pdf_parts(under_review) if reads_pdf else ([], []))


def reask_message(problems: list[str], rubric: Rubric) -> dict:
    """What the judge is told when its answer could not be used."""
    if rubric.kind == JudgmentKind.HALLUCINATION:
        return {
            "role": "user",
            "content": (
                "Your answer could not be used:\n"
                + "\n".join(f"- {problem}" for problem in problems)
                + "\n\nAnswer again with the complete JSON object only (has_hallucination, "
                "hallucinations, overall_assessment, confidence), each finding's type exactly "
                "one of the four names, and no text outside the JSON."
            ),
        }
    keys = ", ".join(rubric.dimension_keys + list(rubric.extra_fields or []))
    return {
        "role": "user",
        "content": (
            "Your answer could not be used:\n"
            + "\n".join(f"- {problem}" for problem in problems)
            + f"\n\nAnswer again with the complete JSON object only ({keys}), every score an "
            "integer within its stated range, and no text outside the JSON."
        ),
    }
