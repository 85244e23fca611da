from django.db import migrations, models
from django.db.models import F


def running_heartbeat_from_start(apps, schema_editor):
    # A judgment running when this lands: its start is its last sign of life.
    Judgment = apps.get_model("judging", "Judgment")
    Judgment.objects.filter(status="running").update(heartbeat_at=F("started_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0011_submissions_moved"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgment",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="judgment",
            index=models.Index(fields=["status", "heartbeat_at"], name="judgment_status_heartbeat"),
        ),
        migrations.RunPython(running_heartbeat_from_start, migrations.RunPython.noop),
    ]
