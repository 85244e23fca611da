"""The project's own rubric for each judged stage, as version 1, so a fresh
database can judge at once. Idempotent: a stage with a rubric is left alone."""

from django.db import migrations


def forwards(apps, schema_editor):
    from judging.services.rubrics import ensure_default_rubrics

    ensure_default_rubrics(rubric_model=apps.get_model("judging", "Rubric"))


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0002_judge_names_run_token"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
