"""Human review's tables: reviewer profiles, review rounds with their
assignments, reviews with one row per scored dimension (range-checked by the
database, as judging's DimensionScore), and the history of every submitted
version of a review.

Roles are Django groups (`reviewers`, `organisers`: benchmark/roles.py);
teams, and so conflicts of interest, come from `benchmark.Team`.
"""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from benchmark.roles import ORGANISERS_GROUP, REVIEWERS_GROUP  # noqa: F401 - defined once there
from judging.models import HallucinationType
from submissions.models import Stage, Submission

# Codes avoid letters and digits that read alike (0/O, 1/I/L).
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


def paper_code_new() -> str:
    """An anonymous paper code such as `P-7KQ3XM`; it says nothing about the submission."""
    return "P-" + "".join(secrets.choice(_CODE_ALPHABET) for _ in range(6))


DEFAULT_MAX_LOAD = 6


class ReviewerProfile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviewer_profile"
    )
    affiliation = models.CharField(max_length=200, blank=True)
    # Topic keys (benchmark.models.Topic); assignment prefers papers on these topics.
    expertise = models.JSONField(default=list, blank=True)
    max_load = models.PositiveSmallIntegerField(
        default=DEFAULT_MAX_LOAD, help_text="Most open assignments this reviewer takes at once."
    )
    # Accounts made by the import for published human scores: never sign in, never assigned.
    is_placeholder = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["user__username"]

    def __str__(self) -> str:
        return f"reviewer {self.user}"


class ReviewRound(models.Model):
    """An organiser's batch: a stage, a set of its submissions, N reviewers per paper."""

    name = models.CharField(max_length=200)
    stage = models.CharField(max_length=16, choices=Stage.choices)
    submissions = models.ManyToManyField(Submission, related_name="review_rounds", blank=True)
    reviewers_per_paper = models.PositiveSmallIntegerField(default=2)
    due_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    # Set by an organiser (`review_round_release`): from then on the round's
    # submitted reviews are public (leaderboard, export). A released round is closed.
    released_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(stage__in=Stage.values), name="round_stage_valid"),
            models.CheckConstraint(
                condition=Q(reviewers_per_paper__gte=1, reviewers_per_paper__lte=20),
                name="round_reviewers_per_paper_range",
            ),
            models.CheckConstraint(
                condition=Q(released_at__isnull=True) | Q(closed_at__isnull=False),
                name="round_released_is_closed",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_closed(self) -> bool:
        return self.closed_at is not None

    @property
    def is_released(self) -> bool:
        return self.released_at is not None


class AssignmentStatus(models.TextChoices):
    ASSIGNED = "assigned", "Not started"
    IN_PROGRESS = "in_progress", "Draft saved"
    SUBMITTED = "submitted", "Submitted"


class Assignment(models.Model):
    """One reviewer, one paper. The reviewer only ever sees the paper under `code`."""

    review_round = models.ForeignKey(
        ReviewRound, on_delete=models.CASCADE, related_name="assignments"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_assignments"
    )
    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="review_assignments"
    )
    code = models.CharField(max_length=16, unique=True, default=paper_code_new)
    due_at = models.DateTimeField()
    status = models.CharField(
        max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.ASSIGNED
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["due_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["reviewer", "submission"], name="assignment_unique_reviewer_submission"
            ),
            models.CheckConstraint(
                condition=Q(status__in=AssignmentStatus.values), name="assignment_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["reviewer", "closed_at"])]

    def __str__(self) -> str:
        return self.code

    @property
    def is_closed(self) -> bool:
        return self.closed_at is not None


class ReviewStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"


def released_review_q(prefix: str = "") -> Q:
    """Submitted reviews the public may see: the published MLR-Bench scores
    (imported) and the reviews of rounds an organiser has released. `prefix`
    reaches a review from another model (`"review__"`). Never a review of a system
    agent's paper (a canary an organiser put in a round): it is no agent's result."""
    return (
        Q(**{f"{prefix}status": ReviewStatus.SUBMITTED})
        & Q(**{f"{prefix}submission__agent__is_system": False})
        & (
            Q(**{f"{prefix}imported": True})
            | Q(**{f"{prefix}assignment__review_round__released_at__isnull": False})
        )
    )


class HumanReview(models.Model):
    """A reviewer's review of a submission: the submitted values live in the
    columns and in `scores`; `draft` holds what the reviewer is typing, raw,
    until they submit (it may be incomplete or out of range)."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="human_reviews"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="human_reviews"
    )
    assignment = models.OneToOneField(
        Assignment, on_delete=models.SET_NULL, null=True, blank=True, related_name="review"
    )
    rubric = models.ForeignKey(
        "judging.Rubric", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    status = models.CharField(
        max_length=16, choices=ReviewStatus.choices, default=ReviewStatus.DRAFT
    )
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    strengths = models.TextField(blank=True)
    weaknesses = models.TextField(blank=True)
    comments = models.TextField(blank=True)
    draft = models.JSONField(default=dict, blank=True)
    draft_saved_at = models.DateTimeField(null=True, blank=True)
    imported = models.BooleanField(default=False)
    submitted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["submission", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "reviewer"], name="human_review_unique_per_reviewer"
            ),
            models.CheckConstraint(
                condition=Q(status__in=ReviewStatus.values), name="human_review_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=1, confidence__lte=5),
                name="human_review_confidence_range",
            ),
            models.CheckConstraint(
                condition=Q(status=ReviewStatus.DRAFT) | Q(submitted_at__isnull=False),
                name="human_review_submitted_has_time",
            ),
        ]
        indexes = [models.Index(fields=["status"])]

    def __str__(self) -> str:
        return f"review of {self.submission_id} by {self.reviewer_id}"


class HumanReviewScore(models.Model):
    """One dimension's submitted score; the range is the rubric's, copied onto
    the row so the database refuses a score outside it."""

    review = models.ForeignKey(HumanReview, on_delete=models.CASCADE, related_name="scores")
    dimension = models.CharField(max_length=64)
    score = models.PositiveSmallIntegerField()
    scale_min = models.PositiveSmallIntegerField(default=1)
    scale_max = models.PositiveSmallIntegerField(default=10)

    class Meta:
        ordering = ["review", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["review", "dimension"], name="human_review_score_unique"
            ),
            models.CheckConstraint(
                condition=Q(score__gte=F("scale_min"), score__lte=F("scale_max")),
                name="human_review_score_within_scale",
            ),
            models.CheckConstraint(
                condition=Q(scale_min__lt=F("scale_max")), name="human_review_score_scale_ordered"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dimension}={self.score}"


class ReviewRevision(models.Model):
    """Every submitted version of a review, the first one included, kept as it was."""

    review = models.ForeignKey(HumanReview, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    scores = models.JSONField()
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    strengths = models.TextField(blank=True)
    weaknesses = models.TextField(blank=True)
    comments = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["review", "number"]
        constraints = [
            models.UniqueConstraint(fields=["review", "number"], name="review_revision_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="review_revision_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.review} r{self.number}"


class HallucinationAnswer(models.TextChoices):
    YES = "yes", "Yes"
    NO = "no", "No"
    NOT_SURE = "not_sure", "Not sure"


class HumanHallucinationCheck(models.Model):
    """An expert's answer to one hallucination question (one type) about one paper:
    imported from MLR-Bench's `Hallucination Check.csv`, or asked in a review round
    beside the scores (then it belongs to that review, and is public only as the
    review is: submitted, and its round released)."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="hallucination_checks"
    )
    review = models.ForeignKey(
        HumanReview,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="hallucination_checks",
    )
    type = models.CharField(max_length=32, choices=HallucinationType.choices)
    answer = models.CharField(max_length=16, choices=HallucinationAnswer.choices)
    evidence = models.TextField(blank=True)
    imported = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["submission", "type", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["review", "type"],
                condition=Q(review__isnull=False),
                name="hallucination_check_unique_per_review_type",
            ),
            # The published check has one row per paper.
            models.UniqueConstraint(
                fields=["submission", "type"],
                condition=Q(imported=True),
                name="hallucination_check_unique_imported",
            ),
            models.CheckConstraint(
                condition=Q(type__in=HallucinationType.values),
                name="hallucination_check_type_valid",
            ),
            models.CheckConstraint(
                condition=Q(answer__in=HallucinationAnswer.values),
                name="hallucination_check_answer_valid",
            ),
            models.CheckConstraint(
                condition=Q(imported=True) | Q(review__isnull=False),
                name="hallucination_check_has_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type}={self.answer} on {self.submission_id}"


class ImportedReviewSkip(models.Model):
    """A row of a published human-score file the import left out on purpose: the
    same reviewer scoring the same paper again (the first row is the one kept).
    Replaced on each import of the file, so the agreement page names exactly
    what the scores it shows left out."""

    source = models.CharField(max_length=200)  # the file, relative to the clone
    line = models.PositiveIntegerField()
    kept_line = models.PositiveIntegerField()
    reviewer_id = models.CharField(max_length=100)
    agent = models.CharField(max_length=200)
    task = models.CharField(max_length=200)
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["source", "line"]
        constraints = [
            models.UniqueConstraint(fields=["source", "line"], name="imported_review_skip_unique"),
            models.CheckConstraint(
                condition=Q(kept_line__lt=F("line")), name="imported_review_skip_kept_first"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source} line {self.line} (duplicate of line {self.kept_line})"
