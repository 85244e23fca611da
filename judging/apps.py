from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "MLR-Judge"

    def ready(self) -> None:
        from benchmark.mlrbench_import import import_part_register
        from benchmark.signals import submission_ready

        from .mlrbench_import import reviews_part
        from .receivers import submission_ready_receiver

        # Sent after the intake's transaction commits; queueing enqueues on commit too.
        submission_ready.connect(submission_ready_receiver, dispatch_uid="judging.submission_ready")
        import_part_register(name="reviews", order=30, run=reviews_part)
