"""The project's rubric for method submissions of objective tasks: MLRC-Bench's
five dimensions. Idempotent, like 0003: a stage with a rubric is left alone."""

from django.db import migrations


def forwards(apps, schema_editor):
    from judging.services.rubrics import ensure_default_rubrics

    ensure_default_rubrics(rubric_model=apps.get_model("judging", "Rubric"))


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0004_judge_own_price"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
