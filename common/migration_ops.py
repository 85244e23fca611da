"""Operations that migrations of moved models share."""

from typing import Any

from django.db import migrations


def content_types_relabel(*, models: list[str], old: str, new: str) -> migrations.RunPython:
    """Admin log entries and permissions of models that moved from app `old` to
    app `new` follow them: their content types change app label instead of
    being created anew (and back when the migration is reversed)."""

    def relabel(apps: Any, frm: str, to: str) -> None:
        content_type = apps.get_model("contenttypes", "ContentType")
        if content_type.objects.filter(app_label=to, model__in=models).exists():
            return  # already created for the new app (post_migrate ran first)
        content_type.objects.filter(app_label=frm, model__in=models).update(app_label=to)

    return migrations.RunPython(
        lambda apps, schema_editor: relabel(apps, old, new),
        lambda apps, schema_editor: relabel(apps, new, old),
    )
