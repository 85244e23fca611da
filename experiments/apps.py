from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "experiments"
    verbose_name = "Experiments"

    def ready(self) -> None:
        from . import receivers  # noqa: F401 - connects submission_ready
