"""`Submission.status` is the intake's status only (received, ready, failed).

Whether a submission is being judged or judged is derived from its judgments by
the judging app, so the rows that stored `judging` or `judged` were ready
submissions: they become `ready`, and the check constraint stops accepting the
two values. Backwards, the rows stay `ready` (the state is derived either way).
"""

from django.db import migrations, models

INTAKE_STATUSES = ["received", "ready", "failed"]


def judging_states_to_ready(apps, schema_editor) -> None:
    Submission = apps.get_model("benchmark", "Submission")
    Submission.objects.filter(status__in=["judging", "judged"]).update(status="ready")


class Migration(migrations.Migration):
    dependencies = [
        ("benchmark", "0007_experiments_moved"),
    ]

    operations = [
        # The rows first: the narrower constraint below would refuse them.
        migrations.RunPython(judging_states_to_ready, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="submission", name="submission_status_valid"),
        migrations.AlterField(
            model_name="submission",
            name="status",
            field=models.CharField(
                choices=[("received", "Received"), ("ready", "Ready"), ("failed", "Failed")],
                default="received",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="submission",
            constraint=models.CheckConstraint(
                condition=models.Q(status__in=INTAKE_STATUSES), name="submission_status_valid"
            ),
        ),
    ]
