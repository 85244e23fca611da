from django import template

register = template.Library()


@register.filter
def lookup(mapping, key):
    """`{{ row.scores|lookup:dimension.key }}`: a dict value by a variable key."""
    if mapping is None:
        return None
    return mapping.get(key)


@register.filter
def score(value, digits: int = 2) -> str:
    """A score with fixed decimals, or an em dash when there is none."""
    if value is None or value == "":
        return "—"
    return f"{float(value):.{int(digits)}f}"


@register.filter
def percent(value) -> str:
    if value is None:
        return "—"
    return f"{float(value) * 100:.0f}%"


@register.filter
def usd(value) -> str:
    if value is None:
        return "—"
    return f"${float(value):,.2f}"


@register.filter
def slice_k(points, k):
    """`{{ row.best_of_k|slice_k:k }}`: the best-of-k point for this k, or None."""
    for point in points or []:
        if point.get("k") == k:
            return point
    return None
