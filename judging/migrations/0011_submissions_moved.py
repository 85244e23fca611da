"""The submission tables moved to the `submissions` app: this app's relations
now point at it. State only: the columns and constraints stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0010_canaries'),
        ('submissions', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='canary',
                    name='source',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='canaries_made', to='submissions.submission'),
                ),
                migrations.AlterField(
                    model_name='canary',
                    name='submission',
                    field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='canary', to='submissions.submission'),
                ),
                migrations.AlterField(
                    model_name='judgment',
                    name='submission',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='judgments', to='submissions.submission'),
                ),
            ],
            database_operations=[],
        ),
    ]
