from django.db import migrations

GROUPS = ["reviewers", "organisers"]


def groups_create(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in GROUPS:
        Group.objects.get_or_create(name=name)


def groups_delete(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("reviews", "0001_reviewers_rounds_reviews"),
    ]

    operations = [migrations.RunPython(groups_create, groups_delete)]
