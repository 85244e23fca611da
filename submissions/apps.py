from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Submissions"

    def ready(self) -> None:
        from benchmark.mlrbench_import import import_part_register

        from .runs_import import runs_part

        import_part_register(name="runs", order=20, run=runs_part)
