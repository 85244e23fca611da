"""The site's hallucination rubric (version 1) for each stage that gets one, so a
fresh database runs the hallucination pass at once. Its own migration: PostgreSQL
will not alter a table in the transaction that has just written to it."""

from django.db import migrations


def default_hallucination_rubrics(apps, schema_editor):
    """The site's hallucination rubric (version 1) for each stage that gets one."""
    from judging.services.rubrics import ensure_default_rubrics

    ensure_default_rubrics(rubric_model=apps.get_model("judging", "Rubric"))


def hallucination_reviews_remove(apps, schema_editor):
    """Back to before hallucination reviews: they and their rubrics go (one rubric per
    stage and version again)."""
    apps.get_model("judging", "Judgment").objects.filter(kind="hallucination").delete()
    # Without the collector: going back past the submissions' move, the historical
    # models it would walk (every relation to a rubric) are not all of one state.
    # Nothing refers to these rubrics once their judgments are gone; the
    # database's foreign keys would refuse it otherwise.
    rubrics = apps.get_model("judging", "Rubric").objects.filter(kind="hallucination")
    rubrics._raw_delete(schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0007_hallucination_reviews"),
    ]

    operations = [
        migrations.RunPython(default_hallucination_rubrics, hallucination_reviews_remove),
    ]
