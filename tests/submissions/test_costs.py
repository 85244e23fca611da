"""A run's usage files are priced in the site's one order (common.prices): an
organiser's price wins over litellm's even for a model litellm lists, as a
judge's own price does."""

from datetime import date
from decimal import Decimal

import pytest

from benchmark.models import ModelPrice
from common.prices import LITELLM_SOURCE
from submissions.costs import price_table, step_cost

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
