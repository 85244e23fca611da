"""The judges' panel on the submission page (see benchmark/page_panels.py)."""

from decimal import Decimal
from typing import Any

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from experiments.models import ReproductionVerdict
from experiments.selectors import reproduction_verdicts
from submissions.models import Submission
from submissions.page_panels import SummaryItem

from .models import Canary, CanaryRole, JudgingCondition, Judgment, JudgmentStatus
from .rubrics import DEFAULT_RUBRICS, OVERALL
from .selectors import HallucinationRow, judgments_panel_context

# The panel's context, kept on the submission object: the page's panel and its
# summary both read it, and the next request has a new submission object.
_CONTEXT_ATTRIBUTE = "_judgments_panel_context"


def _panel_context(submission: Submission) -> dict[str, Any]:
    context = getattr(submission, _CONTEXT_ATTRIBUTE, None)
    if context is None:
        context = judgments_panel_context(submission)
        setattr(submission, _CONTEXT_ATTRIBUTE, context)
    return context


def judgments_panel(*, request: HttpRequest, submission: Submission) -> SafeString:
    html = render_to_string(
        "judging/_judgments_panel.html",
        {"judging": _panel_context(submission), "return_to": request.get_full_path()},
        request=request,
    )
    return mark_safe(html)  # noqa: S308 - a template rendered with autoescaping


def _score_text(value: Decimal | None) -> str:
    return f"{value:.1f}" if value is not None else "—"


def _fabrication_verdicts(
    scored: list[Judgment], reviews: list[HallucinationRow]
) -> dict[str, bool]:
    """Each judge's verdict as the page below shows it: its hallucination review
    (the "Hallucination found" line, with its findings) where it has a finished
    one, else the hallucination field of its scoring judgment."""
    verdicts = {
        j.judge.name: bool(j.has_hallucination) for j in scored if j.has_hallucination is not None
    }
    for row in reviews:
        review = row.judgment
        if review.status == JudgmentStatus.DONE and review.has_hallucination is not None:
            verdicts[row.judge.name] = bool(review.has_hallucination) or bool(row.findings)
    return verdicts


def _fabrication_item(verdicts: dict[str, bool]) -> SummaryItem | None:
    if not verdicts:
        return None
    flagged = sorted(name for name, found in verdicts.items() if found)
    n = len(verdicts)
    value = (
        f"flagged by {len(flagged)} of {n} judge{'s' if n != 1 else ''} ({', '.join(flagged)})"
        if flagged
        else f"none found by {n} judge{'s' if n != 1 else ''}"
    )
    return SummaryItem(
        key="fabrication",
        label="Fabrication",
        value=value,
        href="#judgments-panel",
        flag=bool(flagged),
    )


def _reproduction_item(submission: Submission) -> SummaryItem | None:
    check = reproduction_verdicts(submission_ids=[submission.pk]).get(submission.pk)
    if check is None:
        return None
    return SummaryItem(
        key="reproduction",
        label="Reproduction",
        value=f"{check.get_verdict_display()}: {check.summary}"
        if check.summary
        else check.get_verdict_display(),
        href="#panels",
        flag=check.verdict != ReproductionVerdict.REPRODUCED,
    )


def _canary_item(submission: Submission) -> SummaryItem | None:
    """A canary's ground truth (its page is staff-only): what was planted where."""
    if not submission.agent.is_system:
        return None  # canaries are the system agent's (`services.canaries`)
    canary = Canary.objects.filter(submission=submission).first()
    if canary is None:
        return None
    if canary.role == CanaryRole.CONTROL:
        value = f"unchanged control of submission {canary.source_id} (seed {canary.seed})"
    else:
        value = (
            f"{canary.get_kind_display()} planted in {canary.path}, characters "
            f"{canary.start}-{canary.end} (copy of submission {canary.source_id}, seed "
            f"{canary.seed}): {canary.description}"
        )
    return SummaryItem(key="canary", label="Canary", value=value, href="", flag=True)


def _score_panel_note(context: dict[str, Any]) -> str:
    """Which panel the score is, where it is not the boards' own."""
    boards, scored = context["boards_panel"], context["score_panel"]
    if boards is None or (scored is not None and scored.is_default):
        return ""
    if scored is not None:
        return f" · panel {scored.name}; the leaderboard uses {boards.name}"
    return f" · its judges' mean; the leaderboard uses panel {boards.name}"


def judging_summary(*, submission: Submission) -> list[SummaryItem]:
    """The stage score with each judge's Overall, the fabrication flags and the
    reproduction verdict, for the top of the submission page (and, on a canary's,
    its planted fabrication)."""
    context = _panel_context(submission)
    items: list[SummaryItem] = []
    canary = _canary_item(submission)
    if canary:
        items.append(canary)
    panel = context["panels"][0] if context["panels"] else None
    if panel is not None and panel.condition == JudgingCondition.WITH_CODE:
        overall = {row.judge.name: row.scores.get(OVERALL) for row in panel.rows}
        per_judge = ", ".join(
            f"{name} {_score_text(score.score if score else None)}"
            for name, score in overall.items()
        )
        items.append(
            SummaryItem(
                key="stage-score",
                label="Stage score",
                value=f"{_score_text(panel.stage_score)} / 10 ({per_judge})"
                + _score_panel_note(context),
                href="#judgments-panel",
            )
        )
        done = [
            row.judgment for row in panel.rows if row.judgment and row.judgment.status == "done"
        ]
        fabrication = _fabrication_item(_fabrication_verdicts(done, context["hallucination"]))
        if fabrication:
            items.append(fabrication)
    elif submission.stage in DEFAULT_RUBRICS:
        # Why (no judge is active) is the organisers' business: the panel tells staff.
        value = "not judged yet"
        items.append(
            SummaryItem(
                key="stage-score", label="Stage score", value=value, href="#judgments-panel"
            )
        )
    reproduction = _reproduction_item(submission)
    if reproduction:
        items.append(reproduction)
    return items
