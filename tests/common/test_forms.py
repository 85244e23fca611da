"""`common.forms.serializer_form`: a page form drawn from an input serializer,
which validates what the page posts (the new-agent-run page's one definition)."""

from django import forms
from django.http import QueryDict
from rest_framework import serializers

from common.forms import serializer_form


class _Input(serializers.Serializer):
    names = serializers.ListField(child=serializers.CharField(), label="Names")
    ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    count = serializers.IntegerField(required=False, default=3, max_value=9, help_text="How many.")
    kind = serializers.ChoiceField(
        choices=[("a", "A"), ("b", "B")], required=False, default="", allow_blank=True
    )
    flag = serializers.BooleanField(required=False, default=False)


InputForm = serializer_form(_Input, choices={"names": lambda: [("x", "x"), ("y", "y")]})


def test_the_form_draws_the_serializers_fields_and_leaves_validation_to_it():
    form = InputForm(QueryDict("names=x&names=zz&ids=1,+2+x&count=99&kind=c"))
    assert list(form.fields) == ["names", "ids", "count", "kind", "flag"]
    assert (form.fields["names"].label, form.fields["count"].help_text) == ("Names", "How many.")
    assert form.fields["count"].initial == 3
    assert isinstance(form.fields["kind"], forms.ChoiceField)
    assert form.fields["kind"].choices == [("", "—"), ("a", "A"), ("b", "B")]
    # A list with options to choose from, and one typed as text.
    assert isinstance(form.fields["names"], forms.MultipleChoiceField)
    assert form.fields["names"].choices == [("x", "x"), ("y", "y")]
    assert type(form.fields["ids"]) is forms.CharField
    assert form.errors == {}  # the form never judges the input itself

    data = form.serializer_data()
    assert (data.getlist("names"), data.getlist("ids")) == (["x", "zz"], ["1", "2", "x"])
    serializer = _Input(data=data)
    assert not serializer.is_valid()
    assert set(serializer.errors) == {"ids", "count", "kind"}


def test_a_form_bound_to_a_plain_mapping_gives_the_serializer_the_same_input():
    form = InputForm({"names": ["x", "y"], "ids": "3 4", "count": "2"})
    serializer = _Input(data=form.serializer_data())
    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data == {
        "names": ["x", "y"],
        "ids": [3, 4],
        "count": 2,
        "kind": "",
        "flag": False,
    }
