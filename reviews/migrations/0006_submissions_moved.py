"""The submission tables moved to the `submissions` app: this app's relations
now point at it. State only: the columns and constraints stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('reviews', '0005_imported_review_skips'),
        ('submissions', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='assignment',
                    name='submission',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='review_assignments', to='submissions.submission'),
                ),
                migrations.AlterField(
                    model_name='humanhallucinationcheck',
                    name='submission',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='hallucination_checks', to='submissions.submission'),
                ),
                migrations.AlterField(
                    model_name='humanreview',
                    name='submission',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='human_reviews', to='submissions.submission'),
                ),
                migrations.AlterField(
                    model_name='reviewround',
                    name='submissions',
                    field=models.ManyToManyField(blank=True, related_name='review_rounds', to='submissions.submission'),
                ),
            ],
            database_operations=[],
        ),
    ]
