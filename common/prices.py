"""The one order in which tokens are priced, wherever they are (a judge's call, an
agent run's call, a plan or an estimate, a submission's usage files at intake):

1. the judge's or the agent run's own price (`own_price`): someone set it on
   purpose for this deployment (a self-hosted server, a negotiated rate);
2. the price tables, first match wins: the organisers' prices (`ModelPrice` in
   the admin), then the site's shipped table (`submissions.prices.SHIPPED_PRICES`,
   versioned: a release records its `PRICE_TABLE_VERSION`, so its costs do not
   move with the litellm installed);
3. litellm's model price table.

A model none of them prices costs None (unknown), never 0: a benchmark that
prices an unknown model at zero makes that agent look cheap. The gateway's own
calls (common.llm) have no tables: their price is the configured one or litellm's.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

LITELLM_SOURCE = "litellm's model price table"
OWN_PRICE_SOURCE = "the configured price"
_MILLION = Decimal(1_000_000)
_MICRODOLLAR = Decimal("0.000001")


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
        total = (
            input_tokens * self.input
            + output_tokens * self.output
            + cache_write * (self.cache_write if self.cache_write is not None else self.input)
            + cache_read * (self.cache_read if self.cache_read is not None else self.input)
        ) / _MILLION
        return total.quantize(_MICRODOLLAR)

    @property
    def label(self) -> str:
        return f"{self.source} (as of {self.as_of.isoformat()})"


_DATED = re.compile(r"^(?P<base>.+?)-\d{2}-\d{2}$")


def _names(model: str) -> list[str]:
    """The names a price may be listed under: the model, without a provider
    prefix (`gemini/...`), and for a dated name its undated base."""
    bare = model.rsplit("/", 1)[-1]
    names = list(dict.fromkeys([model, bare]))
    return names


def price_lookup(model: str, prices: Sequence[Price]) -> Price | None:
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


@dataclass(frozen=True)
class Priced:
    cost_usd: Decimal | None  # None: unknown
    source: str = ""  # where the price comes from ("" when unknown)


def tokens_price(
    *,
    model: str,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int = 0,
    cache_creation_tokens: int = 0,
    own_price: tuple[Decimal, Decimal] | None = None,
    prices: Sequence[Price] = (),
    litellm: Callable[[], Decimal | None] | None = None,
) -> Priced:
    """What these tokens of `model` cost, in the order of the module's docstring:
    `own_price` (USD per million input and output tokens), the first of `prices`
    for the model, then `litellm` (how the caller asks litellm's table: a call's
    own cost, or the table by name). A price without token counts (a server that
    did not say) is an unknown cost: litellm's price for the name is not asked,
    it is not that price."""
    if own_price is not None:
        price: Price | None = Price(
            model, own_price[0], own_price[1], None, None, OWN_PRICE_SOURCE, date.min
        )
    else:
        price = price_lookup(model, prices)
    if price is not None:
        if input_tokens is None or output_tokens is None:
            return Priced(None)
        cost = price.cost(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_write=cache_creation_tokens,
            cache_read=cache_read_tokens,
        )
        return Priced(cost, OWN_PRICE_SOURCE if own_price is not None else price.label)
    listed = litellm() if litellm is not None else None
    return Priced(listed, LITELLM_SOURCE) if listed is not None else Priced(None)
