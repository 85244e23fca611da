"""Reads of human review: a reviewer's queue, what a reviewer may see of a
paper, an organiser's progress view, the CSV export and the agreement
statistics (cached)."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Avg, Count, F, Max, Prefetch, Q, QuerySet

from benchmark.roles import is_organiser
from common.errors import ValidationFailed
from judging.models import Judge, Judgment, JudgmentKind, JudgmentStatus, Rubric
from judging.selectors import stage_panel, stage_scores
from submissions.models import Artifact, Stage, Submission

from .agreement import DimensionAgreement, DimensionPlot, agreement_compute
from .agreement_cache import AGREEMENT_GENERATION, ENTRY_TIMEOUT_SECONDS
from .blind import submission_blind
from .models import (
    Assignment,
    AssignmentStatus,
    HumanHallucinationCheck,
    HumanReview,
    HumanReviewScore,
    ImportedReviewSkip,
    ReviewRound,
    ReviewStatus,
    released_review_q,
)

# The column order of MLR-Bench's human_eval/human_review.csv.
HUMAN_REVIEW_CSV_DIMENSIONS = ["Novelty", "Clarity", "Soundness", "Significance", "Overall"]


def rubric_for_stage(stage: str) -> Rubric | None:
    """The newest active rubric of the stage: the one reviewers fill in."""
    return (
        Rubric.objects.filter(stage=stage, kind=JudgmentKind.SCORE, is_active=True)
        .order_by("-version")
        .first()
    )


def reviewer_assignments(*, user: User) -> QuerySet[Assignment]:
    """A reviewer's queue. Only blind fields are loaded with it: the task, never the agent."""
    return (
        Assignment.objects.filter(reviewer=user)
        .select_related("submission__task", "review_round")
        .order_by("closed_at", "due_at", "id")
    )


def assignment_of_reviewer(*, user: User, code: str) -> Assignment:
    """The reviewer's own assignment with this code; anybody else's does not exist."""
    return (
        Assignment.objects.select_related("submission__task", "review_round")
        .filter(reviewer=user)
        .get(code=code)
    )


def review_of_assignment(assignment: Assignment) -> HumanReview | None:
    return (
        HumanReview.objects.filter(
            submission_id=assignment.submission_id, reviewer_id=assignment.reviewer_id
        )
        .prefetch_related("scores", "revisions")
        .first()
    )


def identity_visible(*, assignment: Assignment, review: HumanReview | None) -> bool:
    """A reviewer learns who wrote the paper, what the judges and the other
    reviewers scored, only once their own review is submitted."""
    return review is not None and review.status == ReviewStatus.SUBMITTED


@dataclass(frozen=True)
class Reveal:
    agent_name: str
    agent_display_name: str
    team: str
    base_model: str
    llm_scores: dict[str, float]
    # ("Reviewer 1", {dimension: score}) for every other submitted review, never who wrote it.
    other_reviews: list[tuple[str, dict[str, int]]]


def assignment_reveal(*, assignment: Assignment) -> Reveal:
    """What a reviewer who has submitted may now see about the paper."""
    submission = assignment.submission
    agent = submission.agent
    llm = stage_scores(submission_ids=[submission.id]).get(submission.id, {})
    others = (
        HumanReview.objects.filter(submission=submission, status=ReviewStatus.SUBMITTED)
        .exclude(reviewer_id=assignment.reviewer_id)
        .prefetch_related("scores")
        .order_by("id")
    )
    return Reveal(
        agent_name=agent.name,
        agent_display_name=agent.display_name,
        team=agent.team.name,
        base_model=agent.base_model,
        llm_scores={dimension: float(score) for dimension, score in llm.items()},
        other_reviews=[
            (f"Reviewer {n}", {s.dimension: s.score for s in review.scores.all()})
            for n, review in enumerate(others, start=1)
        ],
    )


def review_rounds() -> QuerySet[ReviewRound]:
    return ReviewRound.objects.all()


@dataclass(frozen=True)
class RoundProgress:
    assignments: list[Assignment]
    n_submitted: int
    n_total: int
    papers_short: list[tuple[Submission, int]]


def round_progress(*, review_round: ReviewRound) -> RoundProgress:
    """Who has and has not submitted, and which papers still lack reviewers."""
    assignments = list(
        review_round.assignments.select_related(
            "reviewer", "submission__agent", "submission__task"
        ).order_by("submission__task__slug", "submission__agent__name", "reviewer__username")
    )
    per_paper: dict[int, int] = {}
    for assignment in assignments:
        per_paper[assignment.submission_id] = per_paper.get(assignment.submission_id, 0) + 1
    short = [
        (submission, review_round.reviewers_per_paper - per_paper.get(submission.id, 0))
        for submission in review_round.submissions.select_related("agent", "task")
        if per_paper.get(submission.id, 0) < review_round.reviewers_per_paper
    ]
    return RoundProgress(
        assignments=assignments,
        n_submitted=sum(a.status == AssignmentStatus.SUBMITTED for a in assignments),
        n_total=len(assignments),
        papers_short=short,
    )


def export_dimensions(stage: str, present: Iterable[str]) -> list[str]:
    """CSV columns: human_review.csv's own order first, then the rubric's, then any other."""
    present = list(dict.fromkeys(present))
    rubric = rubric_for_stage(stage)
    order = [*HUMAN_REVIEW_CSV_DIMENSIONS, *(rubric.dimension_keys if rubric else [])]
    ranked = [d for d in dict.fromkeys(order) if d in present]
    return ranked + sorted(d for d in present if d not in ranked)


def reviews_export(*, stage: str) -> tuple[list[str], list[list[object]]]:
    """Submitted reviews of a stage in human_review.csv's columns; reviewers
    are numbered 1, 2, ... in order of their first review, never named."""
    reviews = list(
        HumanReview.objects.filter(submission__stage=stage, status=ReviewStatus.SUBMITTED)
        .select_related("submission__agent", "submission__task")
        .prefetch_related(Prefetch("scores", queryset=HumanReviewScore.objects.order_by()))
        .order_by("submission__task__slug", "submission__agent__name", "id")
    )
    dimensions = export_dimensions(
        stage, (score.dimension for review in reviews for score in review.scores.all())
    )
    numbers: dict[int, int] = {}
    for review in sorted(reviews, key=lambda r: r.id):
        numbers.setdefault(review.reviewer_id, len(numbers) + 1)
    header = ["reviewer_id", "model_name", "workshop_name", *dimensions]
    rows: list[list[object]] = []
    for review in reviews:
        scores = {score.dimension: score.score for score in review.scores.all()}
        rows.append(
            [
                numbers[review.reviewer_id],
                review.submission.agent.name,
                review.submission.task.slug,
                *(scores.get(d, "") for d in dimensions),
            ]
        )
    return header, rows


class UnknownJudge(ValidationFailed, LookupError):
    default_code = "unknown_judge"


class UnknownStage(ValidationFailed, LookupError):
    default_code = "invalid_choice"


def imported_review_skips() -> list[ImportedReviewSkip]:
    """The published human-score rows the import left out (duplicates), in file order."""
    return list(ImportedReviewSkip.objects.all())


def agreement_judges() -> list[str]:
    return list(Judge.objects.order_by("name").values_list("name", flat=True))


def agreement_dimensions(stage: str, human: set[str], llm: set[str]) -> list[str]:
    """The rubric's dimensions (always shown, so an empty stage says why it
    is empty), plus any dimension both humans and judges scored."""
    rubric = rubric_for_stage(stage)
    keys = list(rubric.dimension_keys) if rubric else []
    extra = sorted((human & llm) - set(keys))
    return keys + extra


@dataclass(frozen=True)
class StageAgreement:
    """A stage's agreement against the mean of the judges (`judge` None) or one judge."""

    stage: str
    judge: str | None
    reviews: str  # AgreementReviews: which human reviews were counted
    dimensions: list[DimensionAgreement]
    plots: dict[str, DimensionPlot]
    n_reviews: int
    computed_at: str  # ISO 8601, UTC


class AgreementReviews(StrEnum):
    """Which human reviews the agreement counts: the public statistics count
    released ones only (as the leaderboard does), or an unreleased score could
    be recovered from them; organisers may count every submitted review. The
    pages and the API choose with `agreement_reviews_for`."""

    RELEASED = "released"
    SUBMITTED = "submitted"


def agreement_reviews_for(user: Any, wanted: str | None) -> AgreementReviews:
    """Organisers may ask for every submitted review; everyone else gets the
    released ones, whatever they ask."""
    if wanted == AgreementReviews.SUBMITTED and is_organiser(user):
        return AgreementReviews.SUBMITTED
    return AgreementReviews.RELEASED


def human_score_rows(
    *, stage: str, reviews: AgreementReviews = AgreementReviews.RELEASED
) -> list[tuple[int, int, str, float]]:
    """`(submission id, reviewer id, dimension, score)` of the stage's human
    reviews that `reviews` counts: what agreement is measured against. Never of a
    system agent's paper (a canary an organiser put in a round on purpose)."""
    counted = (
        released_review_q("review__")
        if reviews == AgreementReviews.RELEASED
        else Q(review__status=ReviewStatus.SUBMITTED)
    )
    return list(
        HumanReviewScore.objects.filter(
            counted,
            review__submission__stage=stage,
            review__submission__agent__is_system=False,
        )
        .values_list("review__submission_id", "review__reviewer_id", "dimension", "score")
        .order_by()
    )


def agreement_compute_for_stage(
    *,
    stage: str,
    judge: str | None = None,
    reviews: AgreementReviews = AgreementReviews.RELEASED,
) -> StageAgreement:
    """Recompute from the database (no cache). The mean of the judges is the
    stage's default panel's (what the boards show), so a judge added outside it
    never moves the public default."""
    human_rows = human_score_rows(stage=stage, reviews=reviews)
    papers = {row[0] for row in human_rows}
    panel = stage_panel(stage=stage) if judge is None else None
    llm = (
        stage_scores(
            submission_ids=papers, judge=judge, judge_ids=panel.judge_ids if panel else None
        )
        if papers
        else {}
    )
    human_dimensions = {row[2] for row in human_rows}
    llm_dimensions = {d for scores in llm.values() for d in scores}
    dimensions = agreement_dimensions(stage, human_dimensions, llm_dimensions)
    rows, plots = agreement_compute(
        human_rows,
        {paper: {d: float(v) for d, v in scores.items()} for paper, scores in llm.items()},
        dimensions=dimensions,
    )
    return StageAgreement(
        stage=stage,
        judge=judge,
        reviews=str(reviews),
        dimensions=rows,
        plots=plots,
        n_reviews=len({(row[0], row[1]) for row in human_rows}),
        computed_at=datetime.now(UTC).isoformat(),
    )


def _judgments_fingerprint(stage: str) -> str:
    """A cheap summary of the stage's finished judgments. Judge runs may
    claim and finish rows with queryset updates and bulk inserts, which send
    no signals; any judgment finished, re-run or removed still changes this."""
    summary = Judgment.objects.filter(
        submission__stage=stage, status=JudgmentStatus.DONE
    ).aggregate(
        n=Count("id"), last_id=Max("id"), finished=Max("finished_at"), updated=Max("updated_at")
    )
    return "{n}:{last_id}:{finished}:{updated}".format(**summary).replace(" ", "_")


# Part of the cache key: entries cached in another shape (dicts, before
# StageAgreement) are never read back after an upgrade.
_AGREEMENT_CACHE_FORMAT = "v3"


def agreement_for_stage(
    *,
    stage: str,
    judge: str | None = None,
    reviews: AgreementReviews = AgreementReviews.RELEASED,
) -> StageAgreement:
    """The agreement statistics of a stage against the mean of the judges (or
    one judge), from the cache when nothing changed since they were computed."""
    return agreements_for_stage(stage=stage, judges=[judge], reviews=reviews)[0]


def agreements_for_stage(
    *,
    stage: str,
    judges: Sequence[str | None],
    reviews: AgreementReviews = AgreementReviews.RELEASED,
) -> list[StageAgreement]:
    """`agreement_for_stage` for each of `judges` (None: the mean of the judges),
    the stage's judgments summarised once for all of them (the judges' board)."""
    if stage not in Stage.values:
        raise UnknownStage(
            f"unknown stage {stage!r}; one of {', '.join(Stage.values)}", field="stage"
        )
    names = [judge or None for judge in judges]
    wanted = {name for name in names if name is not None}
    known = (
        set(Judge.objects.filter(name__in=wanted).values_list("name", flat=True))
        if wanted
        else set()
    )
    unknown = sorted(wanted - known)
    if unknown:
        raise UnknownJudge(f"unknown judge {unknown[0]!r}", field="judge")
    fingerprint = _judgments_fingerprint(stage)
    # The mean's panel: another default (`judges panel default`) is another answer.
    default = stage_panel(stage=stage)
    panel = default.name if default else ""
    return [
        AGREEMENT_GENERATION.cached(
            (stage, name, str(reviews), fingerprint, panel, _AGREEMENT_CACHE_FORMAT),
            partial(agreement_compute_for_stage, stage=stage, judge=name, reviews=reviews),
            timeout=ENTRY_TIMEOUT_SECONDS,
        )
        for name in names
    ]


# Released reviews: what the public sees ---------------------------------------------------


def released_reviews() -> QuerySet[HumanReview]:
    """Submitted reviews that are public: imported (published) ones and those of released rounds."""
    return HumanReview.objects.filter(released_review_q())


def _overall_score_q() -> Q:
    # The rubric's overall dimension; "Overall" for reviews without a rubric
    # (imported ones) or a rubric that names none.
    return Q(review__rubric__overall_key=F("dimension")) | (
        (Q(review__rubric__isnull=True) | Q(review__rubric__overall_key=""))
        & Q(dimension="Overall")
    )


def human_overall_by_submission(
    *, submission_ids: QuerySet[Any, Any] | Iterable[int]
) -> dict[int, float]:
    """{submission id: mean Overall of its released human reviews}, for the
    submissions among `submission_ids` (a `values("id")` queryset is used as
    a subquery). One query, whatever the number of submissions."""
    rows = (
        HumanReviewScore.objects.filter(
            released_review_q("review__"),
            _overall_score_q(),
            review__submission_id__in=submission_ids,
        )
        .values("review__submission_id")
        .annotate(mean=Avg("score"))
        .values_list("review__submission_id", "mean")
        .order_by()
    )
    return {submission_id: float(mean) for submission_id, mean in rows}


RELEASED_EXPORT_FIELDS = (
    "reviewer",
    "submission_id",
    "agent",
    "task",
    "stage",
    "version",
    "imported",
    "confidence",
    "submitted_at",
)


def released_review_export() -> tuple[list[str], list[list[object]]]:
    """Released human reviews as one table for the public export: one row per
    review, one column per dimension (human_review.csv's order first).
    Reviewers are numbered 1, 2, ... in the order of their first released
    review, never named; a reviewer's free text is left out. Two queries."""
    reviews = list(
        released_reviews()
        .order_by("id")
        .values_list(
            "id",
            "reviewer_id",
            "submission_id",
            "submission__agent__name",
            "submission__task__slug",
            "submission__stage",
            "submission__version",
            "imported",
            "confidence",
            "submitted_at",
        )
    )
    scores: dict[int, dict[str, int]] = {}
    for review_id, dimension, score in (
        HumanReviewScore.objects.filter(released_review_q("review__"))
        .values_list("review_id", "dimension", "score")
        .order_by()
    ):
        scores.setdefault(review_id, {})[dimension] = score
    present = {d for by_dimension in scores.values() for d in by_dimension}
    ranked = [d for d in HUMAN_REVIEW_CSV_DIMENSIONS if d in present]
    dimensions = ranked + sorted(present - set(ranked))
    numbers: dict[int, int] = {}
    rows: list[list[object]] = []
    for review_id, reviewer_id, *fields in reviews:
        number = numbers.setdefault(reviewer_id, len(numbers) + 1)
        by_dimension = scores.get(review_id, {})
        rows.append([number, *fields, *(by_dimension.get(d) for d in dimensions)])
    return [*RELEASED_EXPORT_FIELDS, *dimensions], rows


def public_hallucination_checks() -> QuerySet[HumanHallucinationCheck]:
    """The experts' hallucination checks the public sees: the imported check, and
    the checks of submitted reviews whose round an organiser released."""
    return HumanHallucinationCheck.objects.filter(Q(imported=True) | released_review_q("review__"))


def hallucination_answers(
    *, submission_ids: Iterable[int] | QuerySet[Any]
) -> dict[int, dict[str, list[str]]]:
    """The experts' public hallucination answers per submission and type:
    `{submission_id: {type: [answer, ...]}}`. Public only (as the scores): a draft
    or an unreleased round's check is never shown (`public_hallucination_checks`)."""
    checks = public_hallucination_checks().filter(submission_id__in=submission_ids)
    result: dict[int, dict[str, list[str]]] = {}
    for submission_id, kind, answer in checks.values_list("submission_id", "type", "answer"):
        result.setdefault(submission_id, {}).setdefault(kind, []).append(answer)
    return result


def hallucination_checks_export() -> tuple[list[str], list[list[object]]]:
    """The public hallucination checks, one row per paper and type, for the export."""
    header = ["agent", "task", "stage", "version", "submission", "source", "type", "answer",
              "evidence"]  # fmt: skip
    checks = (
        public_hallucination_checks()
        .select_related("submission__agent", "submission__task")
        .order_by("submission_id", "type", "id")
    )
    rows: list[list[object]] = [
        [
            check.submission.agent.name,
            check.submission.task.slug,
            check.submission.stage,
            check.submission.version,
            check.submission_id,
            "import" if check.imported else "review",
            check.type,
            check.answer,
            check.evidence,
        ]
        for check in checks
    ]
    return header, rows


@dataclass(frozen=True)
class AssignmentState:
    """What a reviewer's API answer about one assignment rests on: their
    review so far, what they may now see (once submitted), and for the
    detail view the rubric and the paper's files (blind paths)."""

    assignment: Assignment
    review: HumanReview | None
    reveal: Reveal | None
    rubric: list[dict[str, Any]] | None = None
    artifacts: list[Artifact] | None = None


def assignment_state(*, assignment: Assignment, detail: bool = False) -> AssignmentState:
    review = review_of_assignment(assignment)
    reveal = (
        assignment_reveal(assignment=assignment)
        if identity_visible(assignment=assignment, review=review)
        else None
    )
    if not detail:
        return AssignmentState(assignment=assignment, review=review, reveal=reveal)
    rubric = (
        review.rubric
        if review and review.rubric_id
        else rubric_for_stage(assignment.review_round.stage)
    )
    return AssignmentState(
        assignment=assignment,
        review=review,
        reveal=reveal,
        rubric=rubric.dimensions if rubric else [],
        artifacts=list(submission_blind(assignment.submission).artifacts.all()),
    )
