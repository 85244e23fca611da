"""Filters for whole numbers (ids, years) that answer 400 to anything that is
not one in range: django-filter's NumberFilter takes `-1.1e+296` for a
number and the database then fails on it (a 500)."""

import django_filters
from django import forms

# PostgreSQL's bigint, the type of every id.
BIGINT_MAX = 2**63 - 1


class WholeNumberField(forms.IntegerField):
    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("min_value", -BIGINT_MAX)
        kwargs.setdefault("max_value", BIGINT_MAX)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


class WholeNumberFilter(django_filters.NumberFilter):  # type: ignore[misc]
    field_class = WholeNumberField
