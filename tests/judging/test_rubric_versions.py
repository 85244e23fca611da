"""A rubric version is what its judgments were scored against: its content does
not change in the admin, and the copy judge runs keep of it (services.rubric_by_id)
is dropped if its row is written anyway."""

import pytest

from judging.models import Rubric
from judging.services.rubrics import rubric_by_id

pytestmark = pytest.mark.django_db


def test_a_judge_run_rereads_a_rubric_row_that_was_written(rubrics):
    rubric = rubrics["idea"]
    assert rubric_by_id(rubric.pk).prompt == rubric.prompt
    Rubric.objects.filter(pk=rubric.pk).update(source="note")  # no signal: the copy stays
    assert rubric_by_id(rubric.pk).source == rubric.source

    rubric.prompt = "A rewritten prompt."
    rubric.save()

    assert rubric_by_id(rubric.pk).prompt == "A rewritten prompt."


def test_the_admin_shows_a_versions_content_read_only(admin_client, rubrics):
    rubric = rubrics["experiment"]
    page = admin_client.get(f"/admin/judging/rubric/{rubric.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="is_active"' in html and 'name="source"' in html
    for field in ("prompt", "dimensions", "version", "stage", "extra_fields"):
        assert f'name="{field}"' not in html, field

    added = admin_client.get("/admin/judging/rubric/add/").content.decode()
    assert 'name="prompt"' in added
