"""A run's usage files are priced in the site's one order (common.prices): an
organiser's price wins over litellm's even for a model litellm lists, as a
judge's own price does."""

from datetime import date
from decimal import Decimal

import pytest
from django.core.files.base import ContentFile

from benchmark.models import ModelPrice
from common.prices import LITELLM_SOURCE
from submissions.costs import (
    price_table,
    step_cost,
    step_from_json,
    step_json,
    steps_priced_total,
    submissions_reprice,
)
from submissions.models import ArtifactKind, Submission
from submissions.selectors import submission_costs
from tests.benchmark.runs import sample_run, zip_entries, zip_folder
from tests.support.uploads import upload

USAGE = {"model": "gpt-4o-mini", "input_tokens": 1_000_000, "output_tokens": 0}


@pytest.mark.django_db
def test_an_organisers_price_wins_over_litellms_table():
    listed = step_cost(step="idea", usage=USAGE, default_model="", prices=price_table())
    assert listed.price_source == LITELLM_SOURCE and listed.cost_usd

    ModelPrice.objects.create(
        model="gpt-4o-mini",
        input_usd_per_mtok=Decimal("0.05"),
        output_usd_per_mtok=Decimal("0.2"),
        source="our self-hosted copy",
        as_of=date(2026, 1, 1),
    )
    own = step_cost(step="idea", usage=USAGE, default_model="", prices=price_table())
    assert own.cost_usd == Decimal("0.050000")
    assert own.price_source == "our self-hosted copy (as of 2026-01-01)"


LOCAL_USAGE = b'{"model": "my-local-model", "input_tokens": 1000, "output_tokens": 1000}'


def _idea_with_usage(tmp_path):
    return zip_entries(
        tmp_path / "idea.zip", {"idea.md": b"# An idea", "idea_token_usage.json": LOCAL_USAGE}
    )


def _usage_overwrite(submission, content: bytes) -> None:
    for artifact in submission.artifacts.filter(kind=ArtifactKind.TOKEN_USAGE):
        storage = artifact.file.storage
        storage.delete(artifact.file.name)
        storage.save(artifact.file.name, ContentFile(content))


@pytest.mark.django_db
def test_a_runs_steps_are_priced_once_at_intake_and_its_page_reads_them(
    client, media_root, agent, task, token, mlrbench_data, tmp_path
):
    archive = zip_folder(sample_run(mlrbench_data), tmp_path / "run.zip")
    submission = Submission.objects.get(pk=upload(client, archive, token=token).json()["id"])
    usage_files = submission.artifacts.filter(kind=ArtifactKind.TOKEN_USAGE).count()
    assert submission.llm_steps is not None
    assert usage_files and len(submission.llm_steps) == usage_files
    stored = [step_from_json(item) for item in submission.llm_steps]
    assert steps_priced_total(stored) == (submission.llm_cost_usd, submission.llm_unpriced_steps)

    # The page prices nothing again: with the usage files emptied it shows what
    # the intake stored.
    _usage_overwrite(submission, b"{}")
    page = client.get(submission.get_absolute_url()).content.decode()
    assert f"${submission.llm_cost_usd:.4f}" in page
    assert submission_costs(Submission.objects.get(pk=submission.pk)).steps == stored


@pytest.mark.django_db
def test_a_row_from_before_the_steps_were_stored_is_priced_once_on_first_read(
    client, media_root, agent, task, token, tmp_path
):
    submission_id = upload(client, _idea_with_usage(tmp_path), token=token, stage="idea").json()[
        "id"
    ]
    Submission.objects.filter(pk=submission_id).update(llm_steps=None)

    costs = submission_costs(Submission.objects.get(pk=submission_id))

    assert [(step.step, step.model, step.cost_usd) for step in costs.steps] == [
        ("idea", "my-local-model", None)
    ]
    assert Submission.objects.get(pk=submission_id).llm_steps == [step_json(costs.steps[0])]


@pytest.mark.django_db
def test_an_organisers_new_price_prices_the_stored_steps_again(
    client, media_root, agent, task, token, tmp_path
):
    submission_id = upload(client, _idea_with_usage(tmp_path), token=token, stage="idea").json()[
        "id"
    ]
    before = Submission.objects.get(pk=submission_id)
    assert (before.llm_cost_usd, before.llm_unpriced_steps) == (None, 1)

    ModelPrice.objects.create(
        model="my-local-model",
        input_usd_per_mtok=Decimal("1"),
        output_usd_per_mtok=Decimal("2"),
        source="our server",
        as_of=date(2026, 1, 1),
    )
    assert submissions_reprice() == 1

    after = Submission.objects.get(pk=submission_id)
    assert (after.llm_cost_usd, after.llm_unpriced_steps) == (Decimal("0.003"), 0)
    assert after.llm_steps
    step = step_from_json(after.llm_steps[0])
    assert step.cost_usd == Decimal("0.003") and step.price_source.startswith("our server")
