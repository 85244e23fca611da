from django.apps import AppConfig
from django.db.models.signals import post_migrate


class BenchmarkConfig(AppConfig):
    name = "benchmark"
    verbose_name = "Benchmark"

    def ready(self) -> None:
        from .mlrbench_import import import_part_register, tasks_part

        import_part_register(name="tasks", order=10, run=tasks_part)
        post_migrate.connect(_roles_groups_sync, dispatch_uid="benchmark.roles_groups")


def _roles_groups_sync(sender: AppConfig, **kwargs: object) -> None:
    """After `migrate`, the role groups exist and organisers hold the
    permissions of every model of the site (those of an app are made by the
    app's own post_migrate, so this runs after each app's)."""
    from .roles import organisers_group_sync

    organisers_group_sync()
