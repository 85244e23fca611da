"""Every write of human review: reviewers, rounds, assignments, drafts,
reviews, reminders. Views, the API, the admin and the import call these."""

import random
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mass_mail
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from benchmark.models import Team, Topic
from benchmark.roles import is_reviewer, reviewer_group_join, reviewers
from common.errors import ApplicationError, Conflict, ValidationFailed, form_error_items
from common.results import results_changed
from judging.models import Rubric
from submissions.models import Submission
from submissions.selectors import submissions_newest

from .forms import (
    HALLUCINATION_REVIEW_STAGES,
    TEXT_LIMIT,
    ReviewForm,
    hallucination_evidence_field_name,
    hallucination_field_name,
    hallucination_field_names,
    score_field_name,
)
from .models import (
    DEFAULT_MAX_LOAD,
    Assignment,
    AssignmentStatus,
    HumanHallucinationCheck,
    HumanReview,
    HumanReviewScore,
    ImportedReviewSkip,
    ReviewerProfile,
    ReviewRevision,
    ReviewRound,
    ReviewStatus,
    paper_code_new,
)
from .selectors import rubric_for_stage


class ReviewError(ApplicationError):
    """A request that cannot be done; the message says why, for the user."""


class ReviewInvalid(ReviewError, ValidationFailed):
    """The input is not valid; each item names its field (a form field's name)."""


class AssignmentClosed(ReviewError, Conflict):
    default_code = "assignment_closed"


class AssignmentRefused(ReviewError, Conflict):
    default_code = "assignment_refused"


class ScoresFrozen(ReviewError, Conflict):
    default_code = "scores_frozen"


# Reviewers ---------------------------------------------------------------------------------


def reviewer_register(
    *,
    user: User,
    affiliation: str = "",
    expertise: Iterable[str] = (),
    max_load: int = DEFAULT_MAX_LOAD,
) -> ReviewerProfile:
    """Make `user` a reviewer (the `reviewers` group) with this profile."""
    expertise = list(dict.fromkeys(expertise))
    unknown = [topic for topic in expertise if topic not in Topic.values]
    if unknown:
        raise ReviewInvalid(
            f"unknown topic(s): {', '.join(unknown)}", code="invalid_choice", field="expertise"
        )
    if max_load < 0:
        raise ReviewInvalid(
            "the maximum load cannot be negative", code="min_value", field="max_load"
        )
    with transaction.atomic():
        reviewer_group_join(user=user)
        profile, _ = ReviewerProfile.objects.update_or_create(
            user=user,
            defaults={"affiliation": affiliation, "expertise": expertise, "max_load": max_load},
        )
    return profile


# Rounds and assignments -------------------------------------------------------------------


def _newest_versions_check(chosen: list[Submission]) -> None:
    """Reviewers score what counts: the newest version of each run."""
    newest = set(
        submissions_newest(Submission.objects.filter(pk__in=[s.pk for s in chosen])).values_list(
            "pk", flat=True
        )
    )
    older = sorted(str(s) for s in chosen if s.pk not in newest)
    if older:
        raise ReviewInvalid(
            "a round takes only the newest version of each run; not the newest: "
            + "; ".join(older),
            code="not_newest",
            field="submissions",
        )


def review_round_create(
    *,
    name: str,
    stage: str,
    due_at: datetime,
    reviewers_per_paper: int = 2,
    submissions: Iterable[Submission] | None = None,
    created_by: User | None = None,
) -> ReviewRound:
    """A round over the given submissions of `stage` (all of the stage's public ones
    when None: a canary is in a round only when an organiser names it)."""
    chosen = (
        list(submissions_newest(Submission.objects.public().filter(stage=stage)))
        if submissions is None
        else list(submissions)
    )
    wrong = [s for s in chosen if s.stage != stage]
    if wrong:
        raise ReviewInvalid(
            f"{len(wrong)} chosen submission(s) are not of the {stage} stage",
            code="wrong_stage",
            field="submissions",
        )
    _newest_versions_check(chosen)
    if not chosen:
        raise ReviewInvalid(
            f"there is no {stage} submission to review", code="empty", field="submissions"
        )
    if not 1 <= reviewers_per_paper <= 20:
        raise ReviewInvalid(
            "between 1 and 20 reviewers per paper",
            code="out_of_range",
            field="reviewers_per_paper",
        )
    with transaction.atomic():
        review_round = ReviewRound.objects.create(
            name=name,
            stage=stage,
            due_at=due_at,
            reviewers_per_paper=reviewers_per_paper,
            created_by=created_by,
        )
        review_round.submissions.set(chosen)
        results_changed([stage], agreement=True)
    return review_round


@dataclass
class AssignmentPlan:
    created: list[Assignment] = field(default_factory=list)
    # submission id -> how many reviewers it still lacks (no eligible reviewer left)
    short: dict[int, int] = field(default_factory=dict)


def _reviewer_pool() -> list[User]:
    return list(reviewers().select_related("reviewer_profile").order_by("id"))


def _open_loads(user_ids: Iterable[int]) -> dict[int, int]:
    rows = (
        Assignment.objects.filter(reviewer_id__in=list(user_ids), closed_at__isnull=True)
        .values_list("reviewer_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return dict(rows)


def _max_load(user: User) -> int:
    profile = getattr(user, "reviewer_profile", None)
    return profile.max_load if profile else DEFAULT_MAX_LOAD


def _expertise(user: User) -> set[str]:
    profile = getattr(user, "reviewer_profile", None)
    return set(profile.expertise or []) if profile else set()


def _codes_new(n: int) -> list[str]:
    codes: set[str] = set()
    while len(codes) < n:
        codes |= {paper_code_new() for _ in range(n - len(codes))}
        codes -= set(Assignment.objects.filter(code__in=codes).values_list("code", flat=True))
    return list(codes)


def assignments_generate(*, review_round: ReviewRound, seed: int = 0) -> AssignmentPlan:
    """Give every paper of the round its N reviewers.

    Rules, in order: never a reviewer of the team that owns the agent, never
    the same paper twice, never above a reviewer's maximum load (open
    assignments of every round count). Among the eligible, a reviewer whose
    expertise covers the task's topic comes first, then the least loaded
    (ties broken by a seeded shuffle, so the result is reproducible). Papers
    with the fewest eligible reviewers are served first, so scarce reviewers
    go where nobody else can.

    Long because the assignment rules apply in order over one read of the reviewers' loads."""
    if review_round.is_closed:
        raise AssignmentRefused("this round is closed")
    with transaction.atomic():
        # One generation at a time per round: two organisers clicking at once
        # must not both fill the same papers.
        ReviewRound.objects.select_for_update().get(pk=review_round.pk)
        papers = list(review_round.submissions.select_related("agent__team", "task").order_by("id"))
        pool = _reviewer_pool()
        loads = defaultdict(int, _open_loads(u.id for u in pool))
        team_members: dict[int, set[int]] = defaultdict(set)
        for team_id, user_id in Team.members.through.objects.filter(
            team_id__in={p.agent.team_id for p in papers}
        ).values_list("team_id", "user_id"):
            team_members[team_id].add(user_id)
        taken: dict[int, set[int]] = defaultdict(set)
        for submission_id, reviewer_id in Assignment.objects.filter(
            submission__in=papers
        ).values_list("submission_id", "reviewer_id"):
            taken[submission_id].add(reviewer_id)
        in_round = dict(
            Assignment.objects.filter(review_round=review_round)
            .values_list("submission_id")
            .annotate(n=Count("id"))
            .order_by()
        )
        rng = random.Random(seed)  # noqa: S311 - a reproducible tie-break, not a secret
        tiebreak = {user.id: rng.random() for user in pool}

        def eligible(paper: Submission) -> list[User]:
            return [
                user
                for user in pool
                if user.id not in team_members[paper.agent.team_id]
                and user.id not in taken[paper.id]
            ]

        plan = AssignmentPlan()
        pending: list[tuple[User, Submission]] = []
        candidates = {paper.id: eligible(paper) for paper in papers}
        for paper in sorted(papers, key=lambda p: (len(candidates[p.id]), p.id)):
            need = review_round.reviewers_per_paper - in_round.get(paper.id, 0)
            if need <= 0:
                continue
            open_candidates = [u for u in candidates[paper.id] if loads[u.id] < _max_load(u)]
            open_candidates.sort(
                key=lambda u: (
                    0 if paper.task.topic and paper.task.topic in _expertise(u) else 1,
                    loads[u.id],
                    tiebreak[u.id],
                )
            )
            chosen = open_candidates[:need]
            for user in chosen:
                loads[user.id] += 1
                taken[paper.id].add(user.id)
                pending.append((user, paper))
            if len(chosen) < need:
                plan.short[paper.id] = need - len(chosen)
        codes = _codes_new(len(pending))
        plan.created = Assignment.objects.bulk_create(
            Assignment(
                review_round=review_round,
                reviewer=user,
                submission=paper,
                code=code,
                due_at=review_round.due_at,
            )
            for (user, paper), code in zip(pending, codes, strict=True)
        )
        if plan.created:
            # Their tasks are under open review now: every run of them (any stage)
            # is left out of every public answer (reviews.blind.under_open_review).
            results_changed(None)
    return plan


def assignment_add(
    *,
    review_round: ReviewRound,
    reviewer: User,
    submission: Submission,
    due_at: datetime | None = None,
) -> Assignment:
    """An organiser's manual assignment; the same rules as the automatic one."""
    if review_round.is_closed:
        raise AssignmentRefused("this round is closed")
    if submission.stage != review_round.stage:
        raise AssignmentRefused(f"this paper is not of the round's stage ({review_round.stage})")
    if not is_reviewer(reviewer):
        raise AssignmentRefused(f"{reviewer} is not an active reviewer")
    if submission.agent.team.members.filter(pk=reviewer.pk).exists():
        raise AssignmentRefused(
            f"{reviewer} is in the team that owns this paper's agent (conflict of interest)"
        )
    load = _open_loads([reviewer.id]).get(reviewer.id, 0)
    if load >= _max_load(reviewer):
        raise AssignmentRefused(f"{reviewer} already has {load} open assignments (their maximum)")
    try:
        with transaction.atomic():
            assignment = Assignment.objects.create(
                review_round=review_round,
                reviewer=reviewer,
                submission=submission,
                code=_codes_new(1)[0],
                due_at=due_at or review_round.due_at,
            )
            review_round.submissions.add(submission)
            # The paper's task is under open review now: every run of it (any
            # stage) is left out of every public answer.
            results_changed(None)
    except IntegrityError as exc:
        raise AssignmentRefused(f"{reviewer} is already assigned to this paper") from exc
    return assignment


def assignment_remove(*, assignment: Assignment) -> None:
    """Take a paper off a reviewer's queue; a submitted review is never thrown away."""
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
        review = HumanReview.objects.filter(assignment=assignment).first()
        if review and review.status == ReviewStatus.SUBMITTED:
            raise AssignmentRefused(
                "this reviewer has submitted a review of this paper; close the assignment instead"
            )
        if review:
            review.delete()
        assignment.delete()
        # The paper's task may be under open review no more (any stage); a draft
        # review deleted is an agreement input gone.
        results_changed(None, agreement=review is not None)


def assignment_due_set(*, assignment: Assignment, due_at: datetime) -> Assignment:
    assignment.due_at = due_at
    assignment.save(update_fields=["due_at"])
    return assignment


def review_round_close(*, review_round: ReviewRound) -> int:
    """Close the round: no review of it can be started or edited any more."""
    now = timezone.now()
    with transaction.atomic():
        locked = ReviewRound.objects.select_for_update().get(pk=review_round.pk)
        was_open = locked.closed_at is None
        if was_open:
            locked.closed_at = now
            locked.save(update_fields=["closed_at"])
        closed = Assignment.objects.filter(
            review_round=review_round, closed_at__isnull=True
        ).update(closed_at=now)
        if was_open or closed:
            # The runs of the round's tasks (any stage) come back to the public
            # answers, which left them out while it was open; the round's state
            # is an agreement input.
            results_changed(None, agreement=True)
    review_round.refresh_from_db()
    return closed


def review_round_release(*, review_round: ReviewRound) -> ReviewRound:
    """Make the round's submitted reviews public: the leaderboard's human
    column and the public export count them from now on. The round is closed
    first, so that what was released cannot change afterwards. Releasing a
    released round changes nothing."""
    with transaction.atomic():
        locked = ReviewRound.objects.select_for_update().get(pk=review_round.pk)
        if locked.released_at is None:
            review_round_close(review_round=locked)
            locked.released_at = timezone.now()
            locked.save(update_fields=["released_at"])
            # Its reviews count in the human column, the export and the agreement.
            results_changed([locked.stage], agreement=True)
    review_round.refresh_from_db()
    return review_round


def reminders_send(*, review_round: ReviewRound, queue_url: str) -> int:
    """One email per reviewer who still owes reviews in this round, listing
    the papers by their anonymous codes. Returns how many were sent."""
    owed = (
        Assignment.objects.filter(review_round=review_round, closed_at__isnull=True)
        .exclude(status=AssignmentStatus.SUBMITTED)
        .select_related("reviewer", "submission__task")
        .order_by("reviewer_id", "due_at")
    )
    by_reviewer: dict[int, list[Assignment]] = defaultdict(list)
    for assignment in owed:
        if assignment.reviewer.email:
            by_reviewer[assignment.reviewer_id].append(assignment)
    messages = []
    for assignments in by_reviewer.values():
        reviewer = assignments[0].reviewer
        lines = [
            f"- {a.code} ({a.submission.task.title}), due {a.due_at:%Y-%m-%d %H:%M} UTC"
            for a in assignments
        ]
        body = (
            f"Hello {reviewer.get_username()},\n\n"
            f'you still have {len(assignments)} review(s) to submit in "{review_round.name}":\n'
            + "\n".join(lines)
            + f"\n\nYour queue: {queue_url}\n\nThank you for reviewing for MLR-Bench.\n"
        )
        messages.append(
            (
                f"[MLR-Bench] {len(assignments)} review(s) due",
                body,
                settings.DEFAULT_FROM_EMAIL,
                [reviewer.email],
            )
        )
    sent = send_mass_mail(messages, fail_silently=False) if messages else 0
    Assignment.objects.filter(pk__in=[a.pk for a in owed if a.reviewer_id in by_reviewer]).update(
        reminded_at=timezone.now()
    )
    return sent


# Reviews ------------------------------------------------------------------------------------


def _review_rubric_dimensions(
    review: HumanReview | None, stage: str
) -> tuple[Rubric | None, list[dict[str, Any]]]:
    rubric = review.rubric if review and review.rubric_id else rubric_for_stage(stage)
    return rubric, (rubric.dimensions if rubric else [])


def review_form_fields(dimensions: list[dict[str, Any]], *, stage: str = "") -> set[str]:
    fields = {score_field_name(d["key"]) for d in dimensions} | {
        "confidence",
        "strengths",
        "weaknesses",
        "comments",
    }
    if stage in HALLUCINATION_REVIEW_STAGES:
        fields |= hallucination_field_names()
    return fields


def _hallucination_checks_write(
    *, review: HumanReview, answers: Mapping[str, tuple[str, str]]
) -> bool:
    """The reviewer's answers to the hallucination questions, one row per type, tied
    to the review (so public exactly when its scores are); True when one changed."""
    changed = False
    current = {c.type: (c.answer, c.evidence) for c in review.hallucination_checks.all()}
    for kind, (answer, evidence) in answers.items():
        if current.get(kind) == (answer, evidence):
            continue
        HumanHallucinationCheck.objects.update_or_create(
            review=review,
            type=kind,
            defaults={
                "submission_id": review.submission_id,
                "answer": answer,
                "evidence": evidence,
            },
        )
        changed = True
    return changed


def _submitted_as_draft(review: HumanReview) -> dict[str, str]:
    values = {
        score_field_name(d): str(s) for d, s in review.scores.values_list("dimension", "score")
    }
    values["confidence"] = "" if review.confidence is None else str(review.confidence)
    values.update(
        strengths=review.strengths, weaknesses=review.weaknesses, comments=review.comments
    )
    values.update(review_hallucination_initial(review))
    return values


def _without_blank_evidence(values: Mapping[str, str]) -> dict[str, str]:
    # An evidence box left empty and one never sent are the same answer.
    return {k: v for k, v in values.items() if not (k.endswith("_evidence") and v == "")}


def review_hallucination_initial(review: HumanReview) -> dict[str, str]:
    """The form values of the reviewer's own submitted hallucination answers."""
    values: dict[str, str] = {}
    for check in review.hallucination_checks.all():
        values[hallucination_field_name(check.type)] = check.answer
        values[hallucination_evidence_field_name(check.type)] = check.evidence
    return values


def review_frozen_values(review: HumanReview | None) -> dict[str, str]:
    """The form values a submitted review can no longer change: its scores and
    hallucination answers (not the texts, confidence or evidence). Submitting
    shows the reveal (the agent, its team and model, the LLM scores, the other
    reviews), so a score changed after it would not be blind (issue 40)."""
    if review is None or review.status != ReviewStatus.SUBMITTED:
        return {}
    values = {
        score_field_name(d): str(s) for d, s in review.scores.values_list("dimension", "score")
    }
    values.update(
        (hallucination_field_name(kind), answer)
        for kind, answer in review.hallucination_checks.values_list("type", "answer")
    )
    return values


def _frozen_keep(review: HumanReview | None, data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with the frozen values of the submitted review filled in where
    missing or blank (a disabled field is not posted); ScoresFrozen (409, nothing
    written) when it asks to change one."""
    frozen = review_frozen_values(review)
    changed = [
        name.removeprefix("score_").removeprefix("hallucination_")
        for name, value in frozen.items()
        if data.get(name) not in (None, "") and str(data.get(name)).strip() != value
    ]
    if changed:
        raise ScoresFrozen(
            "your scores and hallucination answers cannot change once your review is "
            "submitted (submitting showed the agent and the LLM scores); you may still "
            f"edit the confidence and the texts. Changed: {', '.join(changed)}",
            field="scores",
        )
    # One value per field (a QueryDict's `**` would give lists).
    return {**{key: data.get(key) for key in data}, **frozen}


def review_draft_save(*, assignment: Assignment, data: Mapping[str, Any]) -> HumanReview:
    """Keep what the reviewer has typed so far, as typed (a draft may be
    incomplete). Unknown fields are dropped and long texts cut to the limit."""
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if assignment.is_closed:
            raise AssignmentClosed("this assignment is closed; the review can no longer change")
        review = HumanReview.objects.filter(
            submission_id=assignment.submission_id, reviewer_id=assignment.reviewer_id
        ).first()
        rubric, dimensions = _review_rubric_dimensions(review, assignment.review_round.stage)
        # Frozen values are never pending edits: a submitted review keeps them.
        allowed = review_form_fields(dimensions, stage=assignment.review_round.stage) - set(
            review_frozen_values(review)
        )
        draft = {key: str(data[key])[:TEXT_LIMIT] for key in allowed if data.get(key) is not None}
        if review is None:
            review = HumanReview.objects.create(
                submission_id=assignment.submission_id,
                reviewer_id=assignment.reviewer_id,
                assignment=assignment,
                rubric=rubric,
            )
        if review.status == ReviewStatus.SUBMITTED and _without_blank_evidence(
            draft
        ) == _without_blank_evidence(
            {k: v for k, v in _submitted_as_draft(review).items() if k in allowed}
        ):
            # A late autosave of exactly what was just submitted is not an edit.
            draft = {}
        review.draft = draft
        review.draft_saved_at = timezone.now() if draft else None
        review.save(update_fields=["draft", "draft_saved_at", "updated_at"])
        if assignment.status == AssignmentStatus.ASSIGNED:
            assignment.status = AssignmentStatus.IN_PROGRESS
            assignment.save(update_fields=["status"])
    return review


def _review_write(
    *,
    review: HumanReview,
    scores: Mapping[str, int],
    ranges: Mapping[str, tuple[int, int]],
    confidence: int | None,
    strengths: str,
    weaknesses: str,
    comments: str,
) -> bool:
    """Write the submitted values and a revision; False when nothing changed."""
    current = dict(review.scores.values_list("dimension", "score"))
    unchanged = (
        review.status == ReviewStatus.SUBMITTED
        and current == dict(scores)
        and (review.confidence, review.strengths, review.weaknesses, review.comments)
        == (confidence, strengths, weaknesses, comments)
    )
    if unchanged:
        return False
    now = timezone.now()
    review.status = ReviewStatus.SUBMITTED
    review.confidence = confidence
    review.strengths, review.weaknesses, review.comments = strengths, weaknesses, comments
    review.submitted_at = now
    review.save()
    review.scores.exclude(dimension__in=list(scores)).delete()
    for dimension, score in scores.items():
        low, high = ranges[dimension]
        HumanReviewScore.objects.update_or_create(
            review=review,
            dimension=dimension,
            defaults={"score": score, "scale_min": low, "scale_max": high},
        )
    number = (review.revisions.aggregate(n=Max("number"))["n"] or 0) + 1
    ReviewRevision.objects.create(
        review=review,
        number=number,
        scores=dict(scores),
        confidence=confidence,
        strengths=strengths,
        weaknesses=weaknesses,
        comments=comments,
    )
    # A review submitted or edited: its paper's stage, and the agreement.
    results_changed(
        Submission.objects.filter(pk=review.submission_id).values_list("stage", flat=True),
        agreement=True,
    )
    return True


def review_submit(*, assignment: Assignment, data: Mapping[str, Any]) -> HumanReview:
    """Validate every field against the stage's rubric and submit (or, after a
    first submission, edit) the review. Each submission is kept as a revision.
    After the first, the scores and hallucination answers stay as submitted
    (`review_frozen_values`): ScoresFrozen when `data` changes one."""
    with transaction.atomic():
        assignment = (
            Assignment.objects.select_for_update()
            .select_related("review_round")
            .get(pk=assignment.pk)
        )
        if assignment.is_closed:
            raise AssignmentClosed("this assignment is closed; the review can no longer change")
        review = HumanReview.objects.filter(
            submission_id=assignment.submission_id, reviewer_id=assignment.reviewer_id
        ).first()
        rubric, dimensions = _review_rubric_dimensions(review, assignment.review_round.stage)
        data = _frozen_keep(review, data)
        if not dimensions:
            raise ReviewInvalid(
                f"there is no active rubric for the {assignment.review_round.stage} "
                "stage yet; an organiser must add one",
                code="no_rubric",
            )
        form = ReviewForm(
            data,
            dimensions=dimensions,
            hallucination=assignment.review_round.stage in HALLUCINATION_REVIEW_STAGES,
        )
        if not form.is_valid():
            raise ReviewInvalid(items=form_error_items(form.errors))
        if review is None:
            review = HumanReview.objects.create(
                submission_id=assignment.submission_id,
                reviewer_id=assignment.reviewer_id,
                assignment=assignment,
                rubric=rubric,
            )
        ranges = {d["key"]: (int(d.get("min", 1)), int(d.get("max", 10))) for d in dimensions}
        _review_write(
            review=review,
            scores=form.cleaned_scores(),
            ranges=ranges,
            confidence=form.cleaned_data["confidence"],
            strengths=form.cleaned_data["strengths"],
            weaknesses=form.cleaned_data["weaknesses"],
            comments=form.cleaned_data["comments"],
        )
        _hallucination_checks_write(review=review, answers=form.cleaned_hallucination())
        review.draft = {}
        review.draft_saved_at = None
        review.save(update_fields=["draft", "draft_saved_at", "updated_at"])
        if assignment.status != AssignmentStatus.SUBMITTED:
            assignment.status = AssignmentStatus.SUBMITTED
            assignment.save(update_fields=["status"])
    return review


def review_import_record(
    *,
    submission: Submission,
    reviewer: User,
    scores: Mapping[str, int],
    ranges: Mapping[str, tuple[int, int]],
    rubric: Rubric | None = None,
) -> str:
    """A published human review as a submitted review: `created`, `updated`
    (its scores changed since the last import) or `unchanged`."""
    with transaction.atomic():
        review, created = HumanReview.objects.get_or_create(
            submission=submission,
            reviewer=reviewer,
            defaults={"imported": True, "rubric": rubric},
        )
        changed = _review_write(
            review=review,
            scores=scores,
            ranges=ranges,
            confidence=review.confidence,
            strengths=review.strengths,
            weaknesses=review.weaknesses,
            comments=review.comments,
        )
    if created:
        return "created"
    return "updated" if changed else "unchanged"


def placeholder_reviewer(*, reviewer_id: str) -> User:
    """The inactive account that stands for a published reviewer: no password
    that could ever match, never active, never assigned."""
    user, created = User.objects.get_or_create(
        username=f"mlrbench-reviewer-{reviewer_id}",
        defaults={"is_active": False},
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
        ReviewerProfile.objects.get_or_create(user=user, defaults={"is_placeholder": True})
    return user


def imported_review_skips_replace(*, source: str, skips: Iterable[ImportedReviewSkip]) -> None:
    """What the import of `source` left out, replacing what an earlier import recorded."""
    ImportedReviewSkip.objects.filter(source=source).delete()
    ImportedReviewSkip.objects.bulk_create(list(skips))
