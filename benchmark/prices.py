"""Prices of the models the published MLR-Bench runs used, for when litellm's
price table no longer lists them (it drops retired models, which would leave
those runs' steps unpriced and their totals silently low).

The table is versioned: a change of any price is a new `PRICE_TABLE_VERSION`,
which releases record. Organisers' own prices (`ModelPrice` in the admin)
win over this table; litellm's table wins over both.
"""

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

PRICE_TABLE_VERSION = "2025-06-19"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    model: str
    input: Decimal
    output: Decimal
    cache_write: Decimal | None
    cache_read: Decimal | None
    source: str
    as_of: date
    # Also the model's dated names, `<model>-MM-DD` (Gemini previews).
    match_dated: bool = False

    def cost(
        self, *, input_tokens: int, output_tokens: int, cache_write: int, cache_read: int
    ) -> Decimal:
        """Cache tokens at the cache rates (the input rate where the table has none)."""
        million = Decimal(1_000_000)
        total = (
            input_tokens * self.input
            + output_tokens * self.output
            + cache_write * (self.cache_write if self.cache_write is not None else self.input)
            + cache_read * (self.cache_read if self.cache_read is not None else self.input)
        ) / million
        return total.quantize(Decimal("0.000001"))


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

_DATED = re.compile(r"^(?P<base>.+?)-\d{2}-\d{2}$")


def _names(model: str) -> list[str]:
    """The names a price may be listed under: the model, without a provider
    prefix (`gemini/...`), and for a dated name its undated base."""
    bare = model.rsplit("/", 1)[-1]
    names = list(dict.fromkeys([model, bare]))
    return names


def price_lookup(model: str, prices: tuple[Price, ...]) -> Price | None:
    """The first of `prices` for `model` (exact name, provider prefix
    dropped, or the undated base of a dated name for a `match_dated` entry)."""
    if not model:
        return None
    names = _names(model)
    dated_bases = [m.group("base") for name in names if (m := _DATED.match(name))]
    for price in prices:
        if price.model in names or (price.match_dated and price.model in dated_bases):
            return price
    return None
