from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "MLR-Judge"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from benchmark.mlrbench_import import import_part_register
        from submissions.signals import submission_ready
        from submissions.states import submission_state_register

        from . import checks  # noqa: F401 - registers the settings checks
        from .mlrbench_import import reviews_part
        from .models import Rubric, SubmissionJudgingState
        from .receivers import rubric_changed_receiver, submission_ready_receiver
        from .selectors import submission_judging_state_expression

        # Sent after the intake's transaction commits; queueing enqueues on commit too.
        submission_ready.connect(submission_ready_receiver, dispatch_uid="judging.submission_ready")
        for signal in (post_save, post_delete):
            signal.connect(
                rubric_changed_receiver, sender=Rubric, dispatch_uid=f"judging.rubric.{signal}"
            )
        import_part_register(name="reviews", order=30, run=reviews_part)
        # Pages, the API and the admin show a submission's judging state, derived here.
        submission_state_register(
            expression=submission_judging_state_expression,
            choices=[
                (state.value, str(state.label))
                for state in (SubmissionJudgingState.JUDGING, SubmissionJudgingState.JUDGED)
            ],
        )
