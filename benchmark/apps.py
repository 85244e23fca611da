from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"
    verbose_name = "Benchmark"

    def ready(self) -> None:
        from .mlrbench_import import import_part_register, tasks_part

        import_part_register(name="tasks", order=10, run=tasks_part)
