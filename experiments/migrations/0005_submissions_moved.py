"""The submission tables moved to the `submissions` app: this app's relations
now point at it. State only: the columns and constraints stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('experiments', '0004_task_environments_labels_external_tests'),
        ('submissions', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='experimentrun',
                    name='submission',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='experiment_runs', to='submissions.submission'),
                ),
            ],
            database_operations=[],
        ),
    ]
