from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Human review"

    def ready(self) -> None:
        from benchmark.mlrbench_import import import_part_register

        from .mlrbench_import import human_scores_part
        from .receivers import receivers_connect

        receivers_connect()
        import_part_register(name="human scores", order=40, run=human_scores_part)
