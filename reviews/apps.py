from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Human review"

    def ready(self) -> None:
        from benchmark.accounts import user_role_register
        from benchmark.mlrbench_import import import_part_register
        from benchmark.roles import reviewer_revoke

        from .hallucination_import import hallucination_checks_part
        from .mlrbench_import import human_scores_part
        from .services import reviewer_register

        user_role_register(
            name="reviewer",
            grant=lambda user: reviewer_register(user=user),
            revoke=lambda user: reviewer_revoke(user=user),
        )
        import_part_register(name="human scores", order=40, run=human_scores_part)
        import_part_register(name="hallucination check", order=45, run=hallucination_checks_part)
