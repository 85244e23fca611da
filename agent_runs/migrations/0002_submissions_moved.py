"""The submission tables moved to the `submissions` app: this app's relations
now point at it. State only: the columns and constraints stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_runs', '0001_agent_runs'),
        ('submissions', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='agentrun',
                    name='submission',
                    field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='agent_run', to='submissions.submission'),
                ),
            ],
            database_operations=[],
        ),
    ]
