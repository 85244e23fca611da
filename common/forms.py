"""A page form drawn from an API's input serializer, so that an endpoint the
browser and the API share has one input definition: the serializer names the
fields, their types, limits, defaults, labels and help, and validates; the
form only draws them and carries the serializer's and the service's errors
(`form_add_errors`) beside the fields."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from django import forms
from django.forms.utils import ErrorDict
from django.http import QueryDict
from rest_framework import fields as api
from rest_framework import serializers

Choices = Callable[[], list[tuple[str, str]]]


class SerializerForm(forms.Form):
    """Never validates by itself: its errors are those added to it."""

    # The list fields drawn as one text box ("12, 13 14"), split for the serializer.
    text_lists: ClassVar[tuple[str, ...]] = ()

    def full_clean(self) -> None:
        self._errors = ErrorDict()
        self.cleaned_data = {}

    def serializer_data(self) -> QueryDict:
        """The posted data as the serializer reads an HTML form's."""
        if isinstance(self.data, QueryDict):
            data = self.data.copy()
        else:  # bound to a plain mapping: each value a list of one or its own list
            data = QueryDict(mutable=True)
            for name, value in self.data.items():
                data.setlist(name, value if isinstance(value, list | tuple) else [value])
        for name in self.text_lists:
            text = data.get(name) or ""
            data.setlist(name, text.replace(",", " ").split())
        return data


def serializer_form(
    serializer_class: type[serializers.Serializer[Any]],
    *,
    choices: Mapping[str, Choices] | None = None,
    widgets: Mapping[str, forms.Widget] | None = None,
) -> type[SerializerForm]:
    """The page form of `serializer_class`'s fields, in its order. `choices`
    gives a list of strings its options (read when each form is made, e.g. the
    catalogue's tasks); a list without them is a text box of its members."""
    choices = dict(choices or {})
    widgets = dict(widgets or {})
    attrs: dict[str, Any] = {}
    text_lists = []
    for name, field in serializer_class().fields.items():
        as_text = isinstance(field, api.ListField) and name not in choices
        if as_text:
            text_lists.append(name)
        attrs[name] = _form_field(field, widget=widgets.get(name), as_text=as_text)
    attrs["text_lists"] = tuple(text_lists)

    def __init__(self: SerializerForm, *args: Any, **kwargs: Any) -> None:
        SerializerForm.__init__(self, *args, **kwargs)
        for name, options in choices.items():
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = options()

    attrs["__init__"] = __init__
    return type(f"{serializer_class.__name__}Form", (SerializerForm,), attrs)


def _form_field(
    field: api.Field[Any, Any, Any, Any], *, widget: forms.Widget | None, as_text: bool
) -> forms.Field:
    common: dict[str, Any] = {
        "required": False,
        "label": field.label,
        "help_text": field.help_text or "",
    }
    if field.default is not api.empty and not callable(field.default):
        common["initial"] = field.default
    if widget is not None:
        common["widget"] = widget
    if isinstance(field, api.BooleanField):
        return forms.BooleanField(**common)
    if isinstance(field, api.ChoiceField):
        blank = [("", "—")] if field.allow_blank else []
        return forms.ChoiceField(choices=[*blank, *field.choices.items()], **common)
    if isinstance(field, api.IntegerField):
        return forms.IntegerField(min_value=field.min_value, max_value=field.max_value, **common)
    if isinstance(field, api.DecimalField):
        return forms.DecimalField(
            max_digits=field.max_digits, decimal_places=field.decimal_places, **common
        )
    if isinstance(field, api.ListField):
        return forms.CharField(**common) if as_text else forms.MultipleChoiceField(**common)
    if isinstance(field, api.CharField):
        return forms.CharField(max_length=field.max_length, **common)
    raise TypeError(f"{type(field).__name__} has no page field")
