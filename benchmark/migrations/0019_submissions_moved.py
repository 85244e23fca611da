"""The submission tables moved to the `submissions` app (second half): once
every app points at `submissions.Submission`, benchmark's state forgets the
models. State only; the tables stay."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('agent_runs', '0002_submissions_moved'),
        ('benchmark', '0018_submissions_moving'),
        ('experiments', '0005_submissions_moved'),
        ('judging', '0011_submissions_moved'),
        ('reviews', '0006_submissions_moved'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name='Submission',
                ),
                migrations.DeleteModel(
                    name='SubmissionInput',
                ),
            ],
            database_operations=[],
        ),
    ]
