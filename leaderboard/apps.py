from django.apps import AppConfig

# Writes to these apps' tables can change a leaderboard, an agent page or the export.
WATCHED_APPS = frozenset({"benchmark", "submissions", "judging", "reviews"})
# A reviewer's draft autosave writes only these: nothing public changes.
DRAFT_FIELDS = frozenset({"draft", "draft_saved_at", "updated_at"})
# Rows that no public answer reads (a reviewer's assignment and its progress).
UNREAD_MODELS = frozenset({"reviews.Assignment"})
# The key of the boards' invalidation kept for the end of a bulk write.
BOARDS_DEFERRED = "leaderboard.boards"


def _stages_written(sender, instance) -> set[str] | None:
    """The stages whose boards a saved or deleted row can change; None when it
    belongs to no one stage (a task, an agent, a judge: every board)."""
    from judging.models import Judgment
    from submissions.models import Submission

    if isinstance(instance, Submission):
        return {instance.stage, *getattr(instance, "_leaderboard_stage_before", ())}
    submission_id = getattr(instance, "submission_id", None)
    if submission_id is not None:
        stages = Submission.objects.filter(pk=submission_id).values_list("stage", flat=True)
        return set(stages) or None  # gone with a deleted submission: every board
    judgment_id = getattr(instance, "judgment_id", None)
    if judgment_id is not None:
        stage = Judgment.objects.filter(pk=judgment_id).values_list("submission__stage", flat=True)
        return set(stage) or None
    return None


def _submission_stage_before(sender, instance, **kwargs) -> None:
    """A submission moved to another stage changes the board it left too."""
    if instance.pk is not None:
        before = type(instance).objects.filter(pk=instance.pk).values_list("stage", flat=True)
        instance._leaderboard_stage_before = tuple(before)


def _is_draft_write(sender, instance, update_fields, created: bool) -> bool:
    """A reviewer's draft: its autosave, or the draft row its first one creates."""
    if sender._meta.label != "reviews.HumanReview":
        return False
    if update_fields is not None and set(update_fields) <= DRAFT_FIELDS:
        return True
    from reviews.models import ReviewStatus

    return created and instance.status == ReviewStatus.DRAFT


def _data_written(sender, instance=None, update_fields=None, created=False, **kwargs) -> None:
    if sender._meta.app_label not in WATCHED_APPS or sender._meta.label in UNREAD_MODELS:
        return
    if _is_draft_write(sender, instance, update_fields, created):
        return
    from common.bulk_writes import deferred

    from .caching import data_changed

    # An import invalidates every board once, at its end (see `_import_part`),
    # not once per row with a query for the row's stage.
    if deferred(BOARDS_DEFERRED, lambda: data_changed(None)):
        return
    data_changed(_stages_written(sender, instance))


def _judgment_finished(sender, submission_id=None, **kwargs) -> None:
    from submissions.models import Submission

    from .caching import data_changed

    stage = Submission.objects.filter(pk=submission_id).values_list("stage", flat=True)
    data_changed(set(stage) or None)


def _import_part(path, options):
    """After `import_mlrbench` (whose parts may write in bulk, without
    signals), start every leaderboard afresh and compute each stage's boards
    now, so that no visitor's first request computes one."""
    from benchmark.mlrbench_import import ImportPartReport
    from common.bulk_writes import deferred_done

    from .refresh import boards_after_import

    report = ImportPartReport()
    report.add("boards computed", boards_after_import())
    # Every board was made stale and computed after the parts' writes.
    deferred_done(BOARDS_DEFERRED)
    report.add("cache cleared")
    return report


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save, pre_save

        from benchmark.mlrbench_import import import_part_register
        from judging.signals import judgment_finished
        from submissions.models import Submission

        pre_save.connect(
            _submission_stage_before, sender=Submission, dispatch_uid="leaderboard-stage-before"
        )
        post_save.connect(_data_written, dispatch_uid="leaderboard-data-written-save")
        post_delete.connect(_data_written, dispatch_uid="leaderboard-data-written-delete")
        # A judge run writes without model signals and says so with its own.
        judgment_finished.connect(_judgment_finished, dispatch_uid="leaderboard-judgment-finished")
        import_part_register(name="leaderboard", order=90, run=_import_part)
