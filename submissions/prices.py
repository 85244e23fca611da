"""Prices of the models the published MLR-Bench runs used: litellm's price
table drops retired models, which would leave those runs' steps unpriced and
their totals silently low, and its prices move with the litellm installed.

The table is versioned: a change of any price is a new `PRICE_TABLE_VERSION`,
which releases record. The order it is consulted in is `common.prices`':
organisers' own prices (`ModelPrice` in the admin), then this table, then
litellm's.
"""

from datetime import date
from decimal import Decimal

from common.prices import Price

PRICE_TABLE_VERSION = "2025-06-19"


SHIPPED_PRICES: tuple[Price, ...] = (
    Price(
        "claude-3-7-sonnet-20250219",
        Decimal("3"),
        Decimal("15"),
        Decimal("3.75"),
        Decimal("0.30"),
        "https://www.anthropic.com/pricing#api; the rates of MLR-Bench's performance_cost.py",
        date(2025, 6, 19),
    ),
    Price(
        "gemini-2.5-pro-preview",
        Decimal("1.25"),
        Decimal("10"),
        None,
        None,
        "https://ai.google.dev/gemini-api/docs/pricing (prompts up to 200k tokens); "
        "the rates of MLR-Bench's performance_cost.py",
        date(2025, 6, 19),
        match_dated=True,
    ),
    Price(
        "o4-mini-2025-04-16",
        Decimal("1.10"),
        Decimal("4.40"),
        None,
        Decimal("0.275"),
        "https://platform.openai.com/docs/pricing; the rates of MLR-Bench's performance_cost.py",
        date(2025, 6, 19),
    ),
    Price(
        "gpt-4o-search-preview-2025-03-11",
        Decimal("2.50"),
        Decimal("10"),
        None,
        None,
        "https://platform.openai.com/docs/pricing; the rates of MLR-Bench's performance_cost.py",
        date(2025, 6, 19),
    ),
)
