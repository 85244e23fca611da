from decimal import Decimal, InvalidOperation

from django import template

register = template.Library()


@register.filter
def score(value) -> str:
    """A score as people write it: 7, 7.5, 6.67 (never 7.00 or 7.50); '' for none."""
    if value is None or value == "":
        return ""
    try:
        number = Decimal(str(value)).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError):
        return ""
    text = f"{number:.2f}".rstrip("0").rstrip(".")
    return text or "0"
