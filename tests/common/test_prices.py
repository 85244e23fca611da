"""Tokens are priced in one order everywhere: the judge's or agent run's own
price, then the price tables (an organiser's, then the site's shipped one), then
litellm's table; a model none of them knows costs None, never 0."""

from datetime import date
from decimal import Decimal

from common.prices import LITELLM_SOURCE, OWN_PRICE_SOURCE, Price, Priced, tokens_price

ORGANISERS = Price(
    "a-model", Decimal("1"), Decimal("4"), None, None, "our invoice", date(2026, 1, 2)
)
SHIPPED = Price("a-model", Decimal("2"), Decimal("8"), None, None, "shipped", date(2025, 6, 19))


def litellm_at(cost):
    asked = []

    def ask():
        asked.append(True)
        return cost

    return ask, asked


def price(**options) -> Priced:
    return tokens_price(model="a-model", input_tokens=1000, output_tokens=500, **options)


def test_the_own_price_wins_then_the_tables_in_their_order_then_litellm():
    litellm, asked = litellm_at(Decimal("9"))

    own = price(
        own_price=(Decimal("3"), Decimal("6")), prices=(ORGANISERS, SHIPPED), litellm=litellm
    )
    assert own == Priced(Decimal("0.006000"), OWN_PRICE_SOURCE)

    organisers = price(prices=(ORGANISERS, SHIPPED), litellm=litellm)
    assert organisers == Priced(Decimal("0.003000"), "our invoice (as of 2026-01-02)")

    shipped = price(prices=(SHIPPED,), litellm=litellm)
    assert shipped == Priced(Decimal("0.006000"), "shipped (as of 2025-06-19)")
    assert not asked

    assert price(prices=(), litellm=litellm) == Priced(Decimal("9"), LITELLM_SOURCE)
    # A table entry of another model is no price for this one.
    other = Price("other", Decimal("1"), Decimal("1"), None, None, "x", date(2025, 1, 1))
    assert price(prices=(other,), litellm=litellm).source == LITELLM_SOURCE


def test_a_model_nobody_prices_is_unknown_not_free():
    litellm, _ = litellm_at(None)
    assert price(prices=(), litellm=litellm) == Priced(None)
    assert price(own_price=(Decimal("0"), Decimal("0"))).cost_usd == Decimal("0")  # a free server
    # A configured server that did not say how many tokens: unknown, and litellm's
    # price for the name is not asked (it is not that server's).
    litellm, asked = litellm_at(Decimal("1"))
    unknown = tokens_price(
        model="gpt-4o", input_tokens=None, output_tokens=None,
        own_price=(Decimal("2"), Decimal("2")), litellm=litellm,
    )  # fmt: skip
    assert unknown.cost_usd is None and not asked
