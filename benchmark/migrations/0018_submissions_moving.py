"""The submission tables move to the `submissions` app (first half): their
relations leave benchmark's state. Only Django's state changes; the tables,
their rows and constraints stay (submissions/migrations/0001_initial.py takes
them over under the same names)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('benchmark', '0017_derived_source_html'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='derivedartifact',
                    name='artifact',
                ),
                migrations.RemoveField(
                    model_name='submission',
                    name='agent',
                ),
                migrations.RemoveField(
                    model_name='submission',
                    name='based_on',
                ),
                migrations.RemoveField(
                    model_name='submission',
                    name='task',
                ),
                migrations.RemoveField(
                    model_name='submission',
                    name='uploader',
                ),
                migrations.RemoveField(
                    model_name='submissioninput',
                    name='submission',
                ),
                migrations.RemoveField(
                    model_name='submissioninput',
                    name='based_on',
                ),
                migrations.DeleteModel(
                    name='Artifact',
                ),
                migrations.DeleteModel(
                    name='DerivedArtifact',
                ),
            ],
            database_operations=[],
        ),
    ]
