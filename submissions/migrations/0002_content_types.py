"""Admin log entries and permissions of the moved models follow them: their
content types change app label instead of being created anew."""

from django.db import migrations

from common.migration_ops import content_types_relabel


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("benchmark", "0019_submissions_moved"),
        ("submissions", "0001_initial"),
    ]

    operations = [
        content_types_relabel(
            models=["submission", "submissioninput", "artifact", "derivedartifact"],
            old="benchmark",
            new="submissions",
        )
    ]
