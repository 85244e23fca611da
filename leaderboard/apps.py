from django.apps import AppConfig

# Writes to these apps' tables can change a leaderboard, an agent page or the export.
WATCHED_APPS = frozenset({"benchmark", "judging", "reviews"})


def _data_written(sender, **kwargs) -> None:
    if sender._meta.app_label in WATCHED_APPS:
        from .caching import data_changed

        data_changed()


def _judgment_finished(sender, **kwargs) -> None:
    from .caching import data_changed

    data_changed()


def _import_part(path, options):
    """After `import_mlrbench` (whose parts may write in bulk, without
    signals), start every leaderboard afresh."""
    from benchmark.mlrbench_import import ImportPartReport

    from .caching import data_changed

    data_changed()
    report = ImportPartReport()
    report.add("cache cleared")
    return report


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from benchmark.mlrbench_import import import_part_register
        from judging.signals import judgment_finished

        post_save.connect(_data_written, dispatch_uid="leaderboard-data-written-save")
        post_delete.connect(_data_written, dispatch_uid="leaderboard-data-written-delete")
        # A judge run writes without model signals and says so with its own.
        judgment_finished.connect(_judgment_finished, dispatch_uid="leaderboard-judgment-finished")
        import_part_register(name="leaderboard", order=90, run=_import_part)
