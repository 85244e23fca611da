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
        from benchmark.mlrbench_import import import_part_register

        # No model signal: services announce their writes (`common.results`), the
        # admin through `common.results_admin.ResultsAdminMixin`.
        import_part_register(name="leaderboard", order=90, run=_import_part)
