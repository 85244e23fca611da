from django.apps import AppConfig


def _import_part(path, options):
    """After `import_mlrbench` (whose parts may write in bulk, without
    signals), start every leaderboard afresh and compute each stage's boards
    now, so that no visitor's first request computes one."""
    from benchmark.mlrbench_import import ImportPartReport
    from common.bulk_writes import deferred_done
    from common.results import BOARDS_DEFERRED

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
        from submissions.models import Submission

        from .receivers import model_written, submission_stage_before

        # The public results' safety net (leaderboard/receivers.py): model writes
        # no service made say what they changed, as the services' events do.
        pre_save.connect(
            submission_stage_before, sender=Submission, dispatch_uid="results-stage-before"
        )
        post_save.connect(model_written, dispatch_uid="results-model-saved")
        post_delete.connect(model_written, dispatch_uid="results-model-deleted")
        import_part_register(name="leaderboard", order=90, run=_import_part)
