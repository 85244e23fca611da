"""Admin log entries and permissions of the moved models follow them: their
content types change app label instead of being created anew."""

from django.db import migrations

MODELS = ["submission", "submissioninput", "artifact", "derivedartifact"]


def _relabel(apps, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    if content_type.objects.filter(app_label=new, model__in=MODELS).exists():
        return  # already created for the new app (post_migrate ran first)
    content_type.objects.filter(app_label=old, model__in=MODELS).update(app_label=new)


def forward(apps, schema_editor) -> None:
    _relabel(apps, "benchmark", "submissions")


def backward(apps, schema_editor) -> None:
    _relabel(apps, "submissions", "benchmark")


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("benchmark", "0019_submissions_moved"),
        ("submissions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forward, backward)]
