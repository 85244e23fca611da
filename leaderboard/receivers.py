"""The safety net of the public results' caches: a model write that no service
made (the admin, a shell, the tests' factories) says what it changed through
the same `common.results.results_changed` as the services' events.

Connected in `LeaderboardConfig.ready()` to `post_save` and `post_delete` of
every model of the apps whose rows the public answers read (`WATCHED_APPS`);
rows no public answer reads (`UNREAD_MODELS`) and a reviewer's draft (its
autosave, or the draft row its first one creates) call nothing. A row names
its stage (a submission, a rubric, a default panel, a round, or a row of one
submission, one judgment or one review), else it changes every stage (a task,
an agent, a judge). The agreement's inputs (`AGREEMENT_MODELS`, a submitted
review, a round) are marked so. Writes that send no model signal
(`QuerySet.update`, `bulk_create`) are the services' to announce.
"""

from django.db.models.signals import post_delete

from common.bulk_writes import pending
from common.results import results_changed
from judging.models import DimensionScore, Judgment, Rubric, StagePanel
from reviews.models import HumanReview, HumanReviewScore, ReviewRound, ReviewStatus
from submissions.models import Submission

# Writes to these apps' tables can change a leaderboard, an agent page or the export.
WATCHED_APPS = frozenset({"benchmark", "submissions", "judging", "reviews"})
# Rows that no public answer reads (a reviewer's assignment and its progress).
UNREAD_MODELS = frozenset({"reviews.Assignment"})
# A reviewer's draft autosave writes only these: nothing public changes.
DRAFT_FIELDS = frozenset({"draft", "draft_saved_at", "updated_at"})
# Rows whose every write (and deletion) can change the agreement statistics.
AGREEMENT_MODELS: tuple[type, ...] = (Judgment, DimensionScore, HumanReviewScore)
# Rows of one stage that name it themselves.
STAGE_MODELS: tuple[type[Rubric] | type[StagePanel] | type[ReviewRound], ...] = (
    Rubric,
    StagePanel,
    ReviewRound,
)


def _stages_written(instance) -> set[str] | None:
    """The stages whose results a saved or deleted row can change; None when it
    belongs to no one stage (a task, an agent, a judge: every stage)."""
    if isinstance(instance, Submission):
        return {instance.stage, *getattr(instance, "_leaderboard_stage_before", ())}
    if isinstance(instance, STAGE_MODELS):  # a stage's rubric, default panel or round
        return {instance.stage}
    submission_id = getattr(instance, "submission_id", None)
    if submission_id is not None:
        stages = Submission.objects.filter(pk=submission_id).values_list("stage", flat=True)
        return set(stages) or None  # gone with a deleted submission: every stage
    for parent, field in ((Judgment, "judgment_id"), (HumanReview, "review_id")):
        parent_id = getattr(instance, field, None)
        if parent_id is not None:
            stage = parent.objects.filter(pk=parent_id).values_list("submission__stage", flat=True)
            return set(stage) or None
    return None


def _is_draft_write(sender, instance, update_fields, created: bool) -> bool:
    """A reviewer's draft: its autosave, or the draft row its first one creates."""
    if sender is not HumanReview:
        return False
    if update_fields is not None and set(update_fields) <= DRAFT_FIELDS:
        return True
    return created and instance.status == ReviewStatus.DRAFT


def _agreement_written(sender, instance, deleted: bool) -> bool:
    if issubclass(sender, AGREEMENT_MODELS):
        return True
    if sender is HumanReview:  # a submitted one saved, or any deleted
        return deleted or instance.status == ReviewStatus.SUBMITTED
    return sender is ReviewRound  # releasing one makes its reviews public


def submission_stage_before(sender, instance, **kwargs) -> None:
    """`pre_save` of a submission: one moved to another stage changes the
    results of the stage it left too."""
    if instance.pk is not None:
        before = type(instance).objects.filter(pk=instance.pk).values_list("stage", flat=True)
        instance._leaderboard_stage_before = tuple(before)


def model_written(
    sender, instance=None, update_fields=None, created=False, signal=None, **kwargs
) -> None:
    """`post_save` and `post_delete` of every model (see the module docstring)."""
    meta = sender._meta
    if meta.app_label not in WATCHED_APPS or meta.label in UNREAD_MODELS:
        return
    if _is_draft_write(sender, instance, update_fields, created):
        return
    agreement = _agreement_written(sender, instance, deleted=signal is post_delete)
    # In an import: every stage once, at its end (no query per row for its stage).
    stages = None if pending() else _stages_written(instance)
    results_changed(stages, agreement=agreement)
