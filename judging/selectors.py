"""Reads of judging results that the other apps build on.

The stage score of a submission on a dimension is the mean over the judges
whose judgment is done (MLR-Judge averages its two judges). A judge counts once:
when it has judged the same submission under more than one rubric version
(e.g. an imported review and a later re-judging), its newest done judgment is
the one that counts. One judge may be chosen instead, and judges of a given
model family may be left out, or judges of the agent's own family (a judge is
not asked to grade its maker's agent). `dimension_means` is the one place that
mean is written down; everything else (`stage_scores`, the leaderboard's
aggregates) builds on it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import (
    Avg,
    Case,
    CharField,
    Count,
    Exists,
    Expression,
    F,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.expressions import Combinable
from django.urls import reverse

from benchmark.models import ModelFamily
from common.errors import ValidationFailed
from submissions.models import Submission, SubmissionStatus
from submissions.states import STATE

from .models import (
    DimensionScore,
    HallucinationFinding,
    Judge,
    JudgePanel,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
    StagePanel,
    SubmissionJudgingState,
)
from .rubrics import DEFAULT_RUBRICS, OVERALL


def _ids(submission_ids: Iterable[int] | QuerySet[Any]) -> QuerySet[Any] | list[int]:
    # A queryset stays a subquery, so callers can pass "the submissions that
    # count" without fetching their ids first.
    return submission_ids if isinstance(submission_ids, QuerySet) else list(submission_ids)


def same_family_judgment_q(prefix: str = "") -> Q:
    """Judgments whose judge shares the judged agent's model family ("other" is no family)."""
    return Q(
        **{f"{prefix}judge__model_family": F(f"{prefix}submission__agent__model_family")}
    ) & ~Q(**{f"{prefix}judge__model_family": ModelFamily.OTHER})


def done_judgments(
    *,
    submission_ids: Iterable[int] | QuerySet[Any] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
) -> QuerySet[Judgment]:
    """Finished judgments, filtered as the caller asks (the judgments a score counts)."""
    judgments = Judgment.objects.filter(status=JudgmentStatus.DONE, condition=condition)
    if submission_ids is not None:
        judgments = judgments.filter(submission_id__in=_ids(submission_ids))
    if judge:
        judgments = judgments.filter(judge__name=judge)
    if exclude_family:
        judgments = judgments.exclude(judge__model_family=exclude_family)
    if exclude_same_family:
        judgments = judgments.exclude(same_family_judgment_q())
    return judgments


def _newest_done_per_judge() -> Combinable:
    newer = Judgment.objects.filter(
        submission_id=OuterRef("judgment__submission_id"),
        judge_id=OuterRef("judgment__judge_id"),
        condition=OuterRef("judgment__condition"),
        # A newer hallucination review has no scores: it replaces none.
        kind=JudgmentKind.SCORE,
        status=JudgmentStatus.DONE,
        pk__gt=OuterRef("judgment_id"),
    )
    return ~Exists(newer)


def done_scores(
    *,
    submission_ids: Iterable[int] | QuerySet[Any] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
    judge_ids: Iterable[int] | None = None,
) -> QuerySet[DimensionScore]:
    """Dimension scores of finished judgments (each judge's newest), filtered as the
    caller asks (`judge_ids`: a panel's judges)."""
    scores = DimensionScore.objects.filter(
        judgment__status=JudgmentStatus.DONE, judgment__condition=condition
    ).filter(_newest_done_per_judge())
    if judge_ids is not None:
        scores = scores.filter(judgment__judge_id__in=list(judge_ids))
    if submission_ids is not None:
        scores = scores.filter(judgment__submission_id__in=_ids(submission_ids))
    if judge:
        scores = scores.filter(judgment__judge__name=judge)
    if exclude_family:
        scores = scores.exclude(judgment__judge__model_family=exclude_family)
    if exclude_same_family:
        scores = scores.exclude(same_family_judgment_q("judgment__"))
    return scores


def dimension_means(
    *,
    submission_ids: Iterable[int] | QuerySet[Any] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
    judge_ids: Iterable[int] | None = None,
) -> QuerySet[Any]:
    """The stage score of each submission on each dimension, as a grouped
    queryset of `{"submission_id", "dimension", "mean", "n_judges"}`
    (`judge_ids`: only a panel's judges).

    It stays a queryset so that callers can filter it further, add
    aggregates over the same judgments, or wrap it in a larger query (the
    leaderboard averages it over tasks in the database)."""
    return (
        done_scores(
            submission_ids=submission_ids,
            condition=condition,
            judge=judge,
            exclude_family=exclude_family,
            exclude_same_family=exclude_same_family,
            judge_ids=judge_ids,
        )
        .values("dimension", submission_id=F("judgment__submission_id"))
        .annotate(mean=Avg("score"), n_judges=Count("judgment_id"))
        .order_by()
    )


def stage_scores(
    *,
    submission_ids: Iterable[int] | QuerySet[Any] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    judge: str | None = None,
    exclude_family: str | None = None,
    exclude_same_family: bool = False,
    judge_ids: Iterable[int] | None = None,
) -> dict[int, dict[str, Decimal]]:
    """`{submission_id: {dimension: mean over judges}}`, in one query."""
    rows = dimension_means(
        submission_ids=submission_ids,
        condition=condition,
        judge=judge,
        exclude_family=exclude_family,
        exclude_same_family=exclude_same_family,
        judge_ids=judge_ids,
    )
    result: dict[int, dict[str, Decimal]] = defaultdict(dict)
    for row in rows:
        result[row["submission_id"]][row["dimension"]] = row["mean"]
    return dict(result)


# ---------------------------------------------------------------- panels


@dataclass(frozen=True)
class PanelChoice:
    """A panel as the boards use it: its name and its judges."""

    name: str
    judge_ids: tuple[int, ...]
    judge_names: tuple[str, ...]
    is_default: bool = False


class UnknownPanel(ValidationFailed, LookupError):
    default_code = "unknown_panel"


def _panel_choice(panel: JudgePanel, *, is_default: bool) -> PanelChoice:
    judges = sorted(panel.judges.values_list("pk", "name"), key=lambda pair: pair[1])
    return PanelChoice(
        name=panel.name,
        judge_ids=tuple(pk for pk, _ in judges),
        judge_names=tuple(name for _, name in judges),
        is_default=is_default,
    )


def stage_panel(*, stage: str, name: str = "") -> PanelChoice | None:
    """The panel named (UnknownPanel when there is none), else the stage's
    default; None when the site has no default for the stage (every judge's
    mean counts, as on a site without panels)."""
    default = StagePanel.objects.filter(stage=stage).select_related("panel").first()
    if name:
        panel = JudgePanel.objects.filter(name=name).first()
        if panel is None:
            raise UnknownPanel(f"no panel named {name!r}", field="panel")
        return _panel_choice(panel, is_default=default is not None and default.panel_id == panel.pk)
    return _panel_choice(default.panel, is_default=True) if default is not None else None


def panel_scored(
    panel: PanelChoice,
    *,
    condition: str = JudgingCondition.WITH_CODE,
    submissions: QuerySet[Submission] | None = None,
) -> QuerySet[Any, Any]:
    """By `submission_id`, the submissions (of `submissions`, else any) that each
    of the panel's judges has a finished scoring judgment of under `condition`:
    what a panel's board counts and `judge --pending` leaves alone. A values
    query, for the caller to take the ids from."""
    judgments = Judgment.objects.filter(
        condition=condition,
        kind=JudgmentKind.SCORE,
        status=JudgmentStatus.DONE,
        judge_id__in=panel.judge_ids,
    )
    if submissions is not None:
        judgments = judgments.filter(submission_id__in=submissions.values("id"))
    return (
        judgments.values("submission_id")
        .annotate(n=Count("judge_id", distinct=True))
        .filter(n=len(panel.judge_ids))
    )


@dataclass(frozen=True)
class PanelListing:
    name: str
    judges: list[str]
    default_for: list[str]
    description: str


def panels_list() -> list[PanelListing]:
    return [
        PanelListing(
            name=panel.name,
            judges=sorted(judge.name for judge in panel.judges.all()),
            default_for=sorted(default.stage for default in panel.default_for.all()),
            description=panel.description,
        )
        for panel in JudgePanel.objects.prefetch_related("judges", "default_for")
    ]


def panel_judge_names(*, judge: Judge) -> list[str]:
    return list(judge.panels.values_list("name", flat=True))


def not_counted_reasons(
    *,
    submission_ids: Iterable[int] | QuerySet[Any],
    panel: PanelChoice,
    condition: str = JudgingCondition.WITH_CODE,
) -> dict[int, str]:
    """`{submission id: why the panel's board does not count it}` for those that
    have a judgment of a panel judge but not a finished one of each: which judge
    failed (with its reason) or is still at work. A submission no panel judge
    was asked about has no reason here (it waits to be judged)."""
    newest: dict[tuple[int, int], tuple[str, str]] = {}
    names = dict(zip(panel.judge_ids, panel.judge_names, strict=True))
    panel_judgments = Judgment.objects.filter(
        submission_id__in=_ids(submission_ids),
        judge_id__in=panel.judge_ids,
        condition=condition,
        kind=JudgmentKind.SCORE,
    )
    # Only submissions with a panel judgment not done can have a reason: the
    # board reads this on every compute, and most judgments are done.
    unfinished = panel_judgments.exclude(status=JudgmentStatus.DONE).values("submission_id")
    for submission_id, judge_id, status, error in (
        panel_judgments.filter(submission_id__in=unfinished)
        .order_by("pk")
        .values_list("submission_id", "judge_id", "status", "error")
    ):
        previous = newest.get((submission_id, judge_id))
        # A judge's done judgment counts even while a newer one is at work.
        if previous is None or previous[0] != JudgmentStatus.DONE:
            newest[(submission_id, judge_id)] = (status, error)
    reasons: dict[int, str] = {}
    for submission_id in {s for s, _ in newest}:
        parts = []
        for judge_id in panel.judge_ids:
            status, error = newest.get((submission_id, judge_id), ("", ""))
            if status == JudgmentStatus.DONE:
                continue
            if status == JudgmentStatus.FAILED:
                parts.append(f"{names[judge_id]} failed: {error or 'no reason recorded'}")
            elif status:
                parts.append(f"{names[judge_id]} has not finished ({status})")
            else:
                parts.append(f"{names[judge_id]} has not judged it")
        if parts:
            reasons[submission_id] = "; ".join(parts)
    return reasons


def submission_not_counted(*, submission: Submission) -> dict[str, str] | None:
    """`{"panel", "reason"}` when the stage's default panel does not count the
    submission because one of its judges failed or is still at work; else None."""
    return _not_counted_by(submission, stage_panel(stage=submission.stage))


def _not_counted_by(submission: Submission, panel: PanelChoice | None) -> dict[str, str] | None:
    if panel is None:
        return None
    reason = not_counted_reasons(submission_ids=[submission.pk], panel=panel).get(submission.pk)
    return {"panel": panel.name, "reason": reason} if reason else None


def pending_submissions(
    submissions: QuerySet[Submission], *, include_imported: bool = False
) -> QuerySet[Submission]:
    """What `judge --pending` judges: the ready submissions that their stage's
    default panel's judges have not each scored (on a stage without a default
    panel: those ready or judging, as before panels), leaving the imported
    published ones (any imported judgment) alone unless `include_imported`.
    (Judgments left queued are sent again as they are: `judgments_resend_queued`.)"""
    defaults = {
        default.stage: _panel_choice(default.panel, is_default=True)
        for default in StagePanel.objects.select_related("panel")
    }
    new = (
        Q(status=SubmissionStatus.READY)
        & ~Q(stage__in=list(defaults))
        & Q(judging_state__in=[SubmissionJudgingState.READY, SubmissionJudgingState.JUDGING])
    )
    for stage, panel in defaults.items():
        scored = panel_scored(panel).values("submission_id")
        new |= Q(status=SubmissionStatus.READY, stage=stage) & ~Q(id__in=scored)
    if not include_imported:
        new &= ~Q(id__in=Judgment.objects.filter(imported=True).values("submission_id"))
    return submissions_with_judging_state(submissions).filter(new)


# ---------------------------------------------------------------- the judging state


def submission_judging_state_expression() -> Expression:
    """A submission's state (`SubmissionJudgingState`) as an expression over its row,
    for an annotation of a Submission queryset.

    Not ready: its intake status. Ready: *judging* while any of its judgments is
    queued or running; else *judged* once a judge panel is complete on it (each
    of the panel's judges has a done scoring judgment with code, the default
    condition) or once every active judge has a done judgment with code (or,
    with no judge active, imported reviews only, once it has any); else
    *judging* while it has a judgment with code that is not done (a failed one
    waits for its re-run); else *ready*. So a judge added outside the published
    panel never turns the published submissions back to *judging*."""
    own = Judgment.objects.filter(submission_id=OuterRef("pk"))
    with_code = own.filter(condition=JudgingCondition.WITH_CODE)
    done_by_judge = Judgment.objects.filter(
        submission_id=OuterRef(OuterRef("pk")),
        judge_id=OuterRef("pk"),
        condition=JudgingCondition.WITH_CODE,
        status=JudgmentStatus.DONE,
    )
    active_judge_not_done = Judge.objects.filter(is_active=True).filter(~Exists(done_by_judge))
    # A panel with a judge that has no done scoring judgment of the submission.
    panel_judge_not_done = JudgePanel.judges.through.objects.filter(
        judgepanel_id=OuterRef("pk")
    ).filter(
        ~Exists(
            Judgment.objects.filter(
                submission_id=OuterRef(OuterRef(OuterRef("pk"))),
                judge_id=OuterRef("judge_id"),
                condition=JudgingCondition.WITH_CODE,
                kind=JudgmentKind.SCORE,
                status=JudgmentStatus.DONE,
            )
        )
    )
    complete_panel = JudgePanel.objects.filter(judges__isnull=False).filter(
        ~Exists(panel_judge_not_done)
    )
    unfinished = own.filter(status__in=[JudgmentStatus.QUEUED, JudgmentStatus.RUNNING])
    return Case(
        When(~Q(status=SubmissionStatus.READY), then=F("status")),
        When(Exists(unfinished), then=Value(SubmissionJudgingState.JUDGING)),
        When(
            Exists(with_code.filter(status=JudgmentStatus.DONE))
            & (Exists(complete_panel) | ~Exists(active_judge_not_done)),
            then=Value(SubmissionJudgingState.JUDGED),
        ),
        When(Exists(with_code), then=Value(SubmissionJudgingState.JUDGING)),
        default=Value(SubmissionJudgingState.READY),
        output_field=CharField(),
    )


def submissions_with_judging_state(
    submissions: QuerySet[Submission], *, name: str = "judging_state"
) -> QuerySet[Submission]:
    """`submissions` annotated with their state under `name`."""
    return submissions.annotate(**{name: submission_judging_state_expression()})


def submission_judging_state(*, submission_id: int) -> str | None:
    """One submission's state (`SubmissionJudgingState`); None when it does not exist."""
    return (
        Submission.objects.filter(pk=submission_id)
        .annotate(judging_state=submission_judging_state_expression())
        .values_list("judging_state", flat=True)
        .first()
    )


# ---------------------------------------------------------------- the submission page


@dataclass
class JudgeRow:
    """One judge's column on the submission page."""

    judge: Judge
    judgment: Judgment | None
    scores: dict[str, DimensionScore] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return self.judgment.status if self.judgment else "not_queued"

    @property
    def status_label(self) -> str:
        return self.judgment.get_status_display() if self.judgment else "Not queued"


@dataclass
class ConditionPanel:
    condition: str
    label: str
    rows: list[JudgeRow]
    dimensions: list[dict[str, Any]]
    table: list[dict[str, Any]]
    stage_score: Decimal | None


@dataclass(frozen=True)
class PanelScore:
    """A judge panel that is complete on a submission (each of its judges has a
    done scoring judgment with code) and its stage score there."""

    panel: PanelChoice
    stage_score: Decimal | None


def _done_scorers(judgments: list[Judgment]) -> set[int]:
    return {
        j.judge_id
        for j in judgments
        if j.condition == JudgingCondition.WITH_CODE
        and j.kind == JudgmentKind.SCORE
        and j.status == JudgmentStatus.DONE
    }


def complete_panels(judgments: list[Judgment], boards: PanelChoice | None) -> list[PanelChoice]:
    """Every panel complete on the submission (in one query), the boards' first."""
    done = _done_scorers(judgments)
    members: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for panel, judge_id, judge in JudgePanel.judges.through.objects.values_list(
        "judgepanel__name", "judge_id", "judge__name"
    ):
        members[panel].append((judge_id, judge))
    complete = [
        PanelChoice(
            name=name,
            judge_ids=tuple(pk for pk, _ in sorted(judges, key=lambda pair: pair[1])),
            judge_names=tuple(sorted(judge for _, judge in judges)),
            is_default=boards is not None and boards.name == name,
        )
        for name, judges in members.items()
        if {pk for pk, _ in judges} <= done
    ]
    return sorted(complete, key=lambda panel: (not panel.is_default, panel.name))


def _panel_scores(
    submission: Submission,
    complete: list[PanelChoice],
    shown: PanelChoice | None,
    shown_score: Decimal | None,
) -> list[PanelScore]:
    """Each complete panel's stage score; the one the page shows is known already."""
    return [
        PanelScore(
            panel=panel,
            stage_score=shown_score
            if shown is not None and panel.name == shown.name
            else stage_scores(submission_ids=[submission.pk], judge_ids=panel.judge_ids)
            .get(submission.pk, {})
            .get(OVERALL),
        )
        for panel in complete
    ]


def score_panel_choose(
    judgments: list[Judgment], boards: PanelChoice | None, complete: list[PanelChoice]
) -> PanelChoice | None:
    """The panel whose mean is the submission's stage score on its page, in the
    API and in the CLI: the boards' panel (the stage's default) when it is
    complete or one of its judges was asked; else the first complete panel;
    else none, the mean of every judge that scored it (a newcomer's upload
    judged only by a judge of their own)."""
    if boards is None:
        return None
    if complete:
        return complete[0]  # the boards' own when it is complete (it sorts first)
    asked = any(
        j.judge_id in boards.judge_ids
        and j.condition == JudgingCondition.WITH_CODE
        and j.kind == JudgmentKind.SCORE
        for j in judgments
    )
    return boards if asked else None


def _panel_for(
    submission: Submission,
    judgments: list[Judgment],
    condition: str,
    active: list[Judge],
    score_panel: PanelChoice | None = None,
) -> ConditionPanel | None:
    """The judges' rows under `condition`, with the `active` judges that have no
    judgment yet (pass none to leave them out)."""
    mine = [j for j in judgments if j.condition == condition and j.kind == JudgmentKind.SCORE]
    # Each judge's newest judgment is the one shown, so a re-judging shows its progress.
    newest: dict[int, Judgment] = {}
    for judgment in sorted(mine, key=lambda j: j.pk):
        newest[judgment.judge_id] = judgment
    judges = {j.judge_id: j.judge for j in mine}
    # Active judges without a judgment yet, on stages that LLM judges score.
    if submission.stage in DEFAULT_RUBRICS:
        for judge in active:
            judges.setdefault(judge.pk, judge)
    if not judges:
        return None
    rows = []
    for judge in sorted(judges.values(), key=lambda judge: judge.name):
        shown = newest.get(judge.pk)
        scores = {s.dimension: s for s in shown.scores.all()} if shown else {}
        rows.append(JudgeRow(judge=judge, judgment=shown, scores=scores))
    rubric = next((row.judgment.rubric for row in rows if row.judgment), None)
    dimensions = rubric.dimensions if rubric else []
    # The published score: the mean of the stage's default panel (every judge without one).
    means = stage_scores(
        submission_ids=[submission.pk],
        condition=condition,
        judge_ids=score_panel.judge_ids if score_panel is not None else None,
    ).get(submission.pk, {})
    table = [
        {
            "key": dimension["key"],
            "label": dimension.get("label", dimension["key"]),
            "scores": [row.scores.get(dimension["key"]) for row in rows],
            "mean": means.get(dimension["key"]),
        }
        for dimension in dimensions
    ]
    return ConditionPanel(
        condition=condition,
        label=JudgingCondition(condition).label,
        rows=rows,
        dimensions=dimensions,
        table=table,
        stage_score=means.get(OVERALL),
    )


@dataclass
class HallucinationRow:
    """One judge's newest hallucination review of a submission, with its findings."""

    judge: Judge
    judgment: Judgment

    @property
    def findings(self) -> list[Any]:
        return list(self.judgment.findings.all())


def _hallucination_rows(judgments: list[Judgment]) -> list[HallucinationRow]:
    newest: dict[int, Judgment] = {}
    for judgment in judgments:  # in pk order: the newest wins
        if (
            judgment.kind == JudgmentKind.HALLUCINATION
            and judgment.condition == JudgingCondition.WITH_CODE
        ):
            newest[judgment.judge_id] = judgment
    return [
        HallucinationRow(judge=j.judge, judgment=j)
        for j in sorted(newest.values(), key=lambda j: j.judge.name)
    ]


def _not_counted(
    submission: Submission, judgments: list[Judgment], panel: PanelChoice | None
) -> dict[str, str] | None:
    """`submission_not_counted`, asked only when one of the panel's judgments with
    code is not done: without one there is no reason (`not_counted_reasons`)."""
    unfinished = panel is not None and any(
        j.judge_id in panel.judge_ids
        and j.condition == JudgingCondition.WITH_CODE
        and j.kind == JudgmentKind.SCORE
        and j.status != JudgmentStatus.DONE
        for j in judgments
    )
    return _not_counted_by(submission, panel) if unfinished else None


def judgments_panel_context(submission: Submission) -> dict[str, Any]:
    """Everything `judging/templates/judging/_judgments_panel.html` shows for a submission.

    Use it from the submission page as `{"judging": judgments_panel_context(s)}`
    and `{% include "judging/_judgments_panel.html" %}`.

    Long because the panel's template reads every field from this one context."""
    judgments = list(
        Judgment.objects.filter(submission=submission)
        .select_related("judge", "rubric")
        .prefetch_related("scores", "findings")
        .order_by("pk")
    )
    hallucination = _hallucination_rows(judgments)
    boards_panel = stage_panel(stage=submission.stage)
    complete = complete_panels(judgments, boards_panel)
    score_panel = score_panel_choose(judgments, boards_panel, complete)
    # Read once: the rows, the "no judge is active" notice and "Judge now" all use them.
    active = list(Judge.objects.filter(is_active=True))
    # Once a panel is complete its score is settled: an active judge that has not
    # been asked (one added outside the published panel) is no row of the page.
    awaited = [] if complete else active
    panels = []
    for condition, judges_active in (
        (JudgingCondition.WITH_CODE, awaited),
        (JudgingCondition.NO_CODE, []),
    ):
        panel = _panel_for(submission, judgments, condition, judges_active, score_panel)
        if panel is not None:
            panels.append(panel)
    with_code = panels[0] if panels and panels[0].condition == JudgingCondition.WITH_CODE else None
    panel_scores = _panel_scores(
        submission, complete, score_panel, with_code.stage_score if with_code else None
    )
    shown = [row.judgment for panel in panels for row in panel.rows if row.judgment] + [
        row.judgment for row in hallucination
    ]
    progress = {status: 0 for status in JudgmentStatus.values}
    for judgment in shown:
        progress[judgment.status] += 1
    total = len(shown)
    finished = progress[JudgmentStatus.DONE] + progress[JudgmentStatus.FAILED]
    costs = [j.cost_usd for j in shown if not j.imported]
    # The page's submission comes with its state annotated (`submission_list`).
    state = getattr(submission, STATE, None) or (
        submission_judging_state(submission_id=submission.pk) or submission.status
    )
    asked = {j.judge_id for j in judgments if j.condition == JudgingCondition.WITH_CODE}
    return {
        "submission": submission,
        "state": state,
        "panels": panels,
        "hallucination": hallucination,
        "progress": progress,
        "total": total,
        "finished": finished,
        "percent": round(100 * finished / total) if total else 0,
        "complete": total > 0 and finished == total,
        "stage_score": panels[0].stage_score if panels else None,
        "score_panel": score_panel,
        # The panel the boards use (the stage's default), and every complete panel's score.
        "boards_panel": boards_panel,
        "panel_scores": panel_scores,
        "not_counted": _not_counted(submission, judgments, boards_panel),
        # The panel judges' failed judgments, for the staff's "Judge again" buttons.
        "failed_panel_judgments": [
            row.judgment
            for row in (panels[0].rows if panels else [])
            if row.judgment is not None
            and row.judgment.status == JudgmentStatus.FAILED
            and boards_panel is not None
            and row.judge.pk in boards_panel.judge_ids
        ],
        "cost_usd": sum(costs) if costs and all(c is not None for c in costs) else None,
        "cost_known": all(c is not None for c in costs),
        # Changes whenever anything the panel shows moves; the page's poller compares it.
        "signature": "|".join(
            f"{j.pk}:{j.status}:{j.attempts}:{j.updated_at.timestamp():.3f}" for j in shown
        )
        + f"|{state}",
        "active_judges": len(active),
        "no_judge_notice": NO_ACTIVE_JUDGE,
        "judge_add_hosted": JUDGE_ADD_HOSTED,
        "judge_add_local": JUDGE_ADD_LOCAL,
        "judged_stage": submission.stage in DEFAULT_RUBRICS,
        # As `judge_now_possible`, from what was read above.
        "judge_now": submission.stage in DEFAULT_RUBRICS
        and any(judge.pk not in asked for judge in active),
        "status_url": reverse("api:submission-judgments", args=[submission.pk]),
        "panel_url": reverse("judging:submission-judgments-panel", args=[submission.pk]),
    }


@dataclass
class JudgmentEntry:
    """One judgment as a submission's judgments answer lists it
    (`serializers.JudgmentStatusSerializer` shapes it): a judge's newest scoring
    judgment under one condition, with its scores, or its newest hallucination
    review, with its findings. An active judge that has not been queued yet
    stands as an unsaved judgment (no id, no rubric) whose status is `not_queued`."""

    kind: str
    condition: str
    judge: Judge
    judgment: Judgment
    scores: dict[str, DimensionScore] = field(default_factory=dict)
    findings: list[HallucinationFinding] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.judgment.status if self.judgment.pk is not None else "not_queued"


@dataclass
class SubmissionJudgments:
    """What the submission page polls and API clients read: progress, then each
    judge's judgment with its scores (`serializers.SubmissionJudgmentsSerializer`)."""

    submission: Submission
    state: str
    progress: dict[str, int]  # per status, and the total
    complete: bool
    signature: str
    stage_score: Decimal | None
    stage_scores: dict[str, dict[str, Decimal | None]]  # per condition, each dimension's mean
    cost_usd: Decimal | None
    panel: PanelChoice | None
    not_counted: dict[str, str] | None
    judgments: list[JudgmentEntry]


def submission_judgments_status(submission: Submission) -> SubmissionJudgments:
    """A submission's judgments as the page and the API see them (`judgments_panel_context`)."""
    context = judgments_panel_context(submission)
    entries = [
        JudgmentEntry(
            kind=JudgmentKind.SCORE,
            condition=panel.condition,
            judge=row.judge,
            judgment=row.judgment
            or Judgment(submission=submission, judge=row.judge, condition=panel.condition),
            scores=row.scores,
        )
        for panel in context["panels"]
        for row in panel.rows
    ]
    entries += [
        JudgmentEntry(
            kind=JudgmentKind.HALLUCINATION,
            condition=row.judgment.condition,
            judge=row.judge,
            judgment=row.judgment,
            findings=row.findings,
        )
        for row in context["hallucination"]
    ]
    return SubmissionJudgments(
        submission=submission,
        state=context["state"],
        progress={**context["progress"], "total": context["total"]},
        complete=context["complete"],
        signature=context["signature"],
        stage_score=context["stage_score"],
        stage_scores={
            panel.condition: {row["key"]: row["mean"] for row in panel.table}
            for panel in context["panels"]
        },
        cost_usd=context["cost_usd"],
        panel=context["score_panel"],
        not_counted=context["not_counted"],
        judgments=entries,
    )


def judgments_pending(*, judgment_ids: Iterable[int]) -> dict[str, int]:
    """Counts by status of the given judgments (the `judge --wait` progress bar)."""
    counts = dict.fromkeys(JudgmentStatus.values, 0)
    for status, n in (
        Judgment.objects.filter(pk__in=list(judgment_ids))
        .values_list("status")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        counts[status] = n
    return counts


# ---------------------------------------------------------------- hallucination verdicts


@dataclass(frozen=True)
class JudgeFinding:
    type: str  # "" for an untyped verdict (the experiment rubric's yes/no)
    description: str
    evidence: str


@dataclass
class JudgeVerdict:
    """What one judge says about one submission's hallucinations: `any` from every
    verdict it gave (a score review's yes/no, a hallucination review's flag); the
    types only when it wrote a hallucination review (`typed`)."""

    judge: str
    any: bool
    typed: bool
    types: set[str] = field(default_factory=set)
    findings: list[JudgeFinding] = field(default_factory=list)


def hallucination_verdicts(
    *,
    submission_ids: Iterable[int] | QuerySet[Any],
    judge: str | None = None,
    condition: str = JudgingCondition.WITH_CODE,
) -> dict[int, dict[str, JudgeVerdict]]:
    """`{submission_id: {judge name: verdict}}` from each judge's newest done judgment
    of each kind that gave a verdict, in two queries."""
    judgments = done_judgments(
        submission_ids=submission_ids, condition=condition, judge=judge
    ).filter(has_hallucination__isnull=False)
    newest: dict[tuple[int, str, str], tuple[int, bool]] = {}
    for pk, submission_id, name, kind, flag in judgments.values_list(
        "pk", "submission_id", "judge__name", "kind", "has_hallucination"
    ).order_by("pk"):
        newest[(submission_id, name, kind)] = (pk, bool(flag))
    # The same judgments as a subquery, the older ones dropped here (a list of
    # every newest id is slower to send than the few findings of older ones).
    newest_ids = {pk for pk, _ in newest.values()}
    findings: dict[int, list[JudgeFinding]] = defaultdict(list)
    for judgment_id, kind, description, evidence in (
        HallucinationFinding.objects.filter(judgment__in=judgments.values("pk"))
        .order_by("judgment_id", "position")
        .values_list("judgment_id", "type", "description", "evidence")
    ):
        if judgment_id in newest_ids:
            findings[judgment_id].append(JudgeFinding(kind, description, evidence))
    result: dict[int, dict[str, JudgeVerdict]] = defaultdict(dict)
    for (submission_id, name, kind), (pk, flag) in sorted(newest.items()):
        verdict = result[submission_id].setdefault(
            name, JudgeVerdict(judge=name, any=False, typed=False)
        )
        verdict.any = verdict.any or flag
        verdict.findings += findings.get(pk, [])
        if kind == JudgmentKind.HALLUCINATION:
            verdict.typed = True
            verdict.types |= {f.type for f in findings.get(pk, []) if f.type}
    return dict(result)


def active_judge_count() -> int:
    """How many judges score new submissions (none after the quick start's
    import: the published judges come in inactive)."""
    return Judge.objects.filter(is_active=True).count()


# The two ways to add a judge, word for word as the README gives them.
# (Not the imported judges' names: those exist already, inactive; `judges enable NAME`.)
JUDGE_ADD_HOSTED = (
    "python manage.py judges add --name claude-3-7-sonnet "
    "--model anthropic/claude-3-7-sonnet-20250219 --api-key-env ANTHROPIC_API_KEY "
    "--family anthropic"
)
# The README's "Judging with a local model": llama.cpp's OpenAI-compatible server.
JUDGE_ADD_LOCAL = (
    "python manage.py judges add --name local-qwen --model openai/qwen2.5-1.5b-instruct "
    "--api-base http://127.0.0.1:8081/v1 --input-price 0 --output-price 0"
)
NO_ACTIVE_JUDGE = (
    "No judge is active, so nothing will score this submission. Add one for a hosted model "
    f"(`{JUDGE_ADD_HOSTED}`) or for a local OpenAI-compatible server (llama.cpp's, Ollama, vLLM) "
    f"(`{JUDGE_ADD_LOCAL}`), or enable an imported one (`python manage.py judges enable NAME`); "
    "then judge it with `python manage.py judge --pending`."
)


def judging_notices(*, submission: Submission) -> list[str]:
    """What an uploader should know about the judging of a new submission
    (benchmark's `SUBMISSION_NOTICES`: the API's answer and the CLI print it)."""
    if submission.stage in DEFAULT_RUBRICS and active_judge_count() == 0:
        return [NO_ACTIVE_JUDGE]
    return []


def judge_now_possible(*, submission: Submission) -> bool:
    """Whether queueing the active judges would ask one that has not been asked
    (the staff's "Judge now" button)."""
    if submission.stage not in DEFAULT_RUBRICS:
        return False
    asked = Judgment.objects.filter(
        submission=submission, condition=JudgingCondition.WITH_CODE
    ).values("judge_id")
    return Judge.objects.filter(is_active=True).exclude(pk__in=asked).exists()
