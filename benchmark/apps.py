from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"
    verbose_name = "Benchmark"

    def ready(self) -> None:
        from .mlrbench_import import import_part_register, tasks_part
        from .runs_import import runs_part

        import_part_register(name="tasks", order=10, run=tasks_part)
        import_part_register(name="runs", order=20, run=runs_part)
