"""Keep the cached agreement statistics current: any saved or deleted
judgment, judge score, submitted review or review score moves the cache
generation on once the transaction commits."""

from django.db.models.signals import post_delete, post_save

from common.bulk_writes import deferred
from judging.models import DimensionScore, Judgment

from .agreement_cache import AGREEMENT_GENERATION
from .models import HumanReview, HumanReviewScore, ReviewRound, ReviewStatus

# A draft autosave touches only these; it cannot change any statistic.
_DRAFT_FIELDS = frozenset({"draft", "draft_saved_at", "updated_at"})


def _invalidate_on_commit(**kwargs) -> None:
    # In an import: once, at its end, not once per judgment and score.
    if deferred("reviews.agreement", AGREEMENT_GENERATION.bump):
        return
    AGREEMENT_GENERATION.bump_on_commit()


def _review_saved(sender, instance: HumanReview, update_fields=None, **kwargs) -> None:
    if update_fields is not None and set(update_fields) <= _DRAFT_FIELDS:
        return
    if instance.status == ReviewStatus.SUBMITTED:
        AGREEMENT_GENERATION.bump_on_commit()


def receivers_connect() -> None:
    for model in (Judgment, DimensionScore, HumanReviewScore):
        post_save.connect(
            _invalidate_on_commit, sender=model, dispatch_uid=f"agreement-save-{model.__name__}"
        )
    for deleted in (Judgment, DimensionScore, HumanReview, HumanReviewScore):
        post_delete.connect(
            _invalidate_on_commit,
            sender=deleted,
            dispatch_uid=f"agreement-delete-{deleted.__name__}",
        )
    post_save.connect(_review_saved, sender=HumanReview, dispatch_uid="agreement-save-review")
    # Releasing a round makes its reviews part of the public agreement.
    post_save.connect(
        _invalidate_on_commit, sender=ReviewRound, dispatch_uid="agreement-save-round"
    )
