"""The one error shape, unit by unit: every kind of error the API can raise
becomes `{"errors": [{"field", "code", "message"}]}` with its status."""

from django import forms
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, serializers

from common.drf import exception_handler
from common.errors import (
    Conflict,
    ErrorItem,
    NotFound,
    ValidationFailed,
    form_add_errors,
    form_error_items,
)


def handled(exc: Exception):
    return exception_handler(exc, {"view": None, "request": None})


def test_an_application_error_answers_its_status_items_and_extra_data():
    response = handled(
        Conflict(
            "already submitted as 7", code="duplicate_submission", field="archive", extra={"id": 7}
        )
    )

    assert response.status_code == 409
    assert response.data == {
        "errors": [
            {
                "field": "archive",
                "code": "duplicate_submission",
                "message": "already submitted as 7",
            }
        ],
        "id": 7,
    }


def test_an_application_error_carries_several_items_and_reads_as_one_line():
    error = ValidationFailed(
        items=[
            ErrorItem(code="required", message="Name a task.", field="task"),
            ErrorItem(code="invalid_choice", message="No such stage.", field="stage"),
        ]
    )

    assert (error.status_code, error.code, error.field) == (400, "required", "task")
    assert str(error) == "Name a task.; No such stage."
    assert [item["field"] for item in handled(error).data["errors"]] == ["task", "stage"]
    assert NotFound().body() == {
        "errors": [{"field": None, "code": "not_found", "message": "Not found."}]
    }


class _Author(serializers.Serializer):
    name = serializers.CharField()


class _Paper(serializers.Serializer):
    title = serializers.CharField()
    author = _Author()
    reviewers = _Author(many=True)

    def validate(self, attrs):
        raise serializers.ValidationError("the paper as a whole is wrong")


def test_nested_serializer_errors_are_flattened_with_their_field_names():
    paper = _Paper(data={"author": {}, "reviewers": [{"name": "ok"}, {}]})
    assert not paper.is_valid()
    invalid = _Paper(data={"title": "t", "author": {"name": "a"}, "reviewers": []})
    assert not invalid.is_valid()

    response = handled(exceptions.ValidationError(paper.errors))
    whole = handled(exceptions.ValidationError(invalid.errors))

    assert response.status_code == 400
    assert {(item["field"], item["code"]) for item in response.data["errors"]} == {
        ("title", "required"),
        ("author.name", "required"),
        ("reviewers.1.name", "required"),
    }
    assert whole.data == {
        "errors": [{"field": None, "code": "invalid", "message": "the paper as a whole is wrong"}]
    }


def test_drf_and_django_errors_get_the_same_shape_and_keep_their_headers():
    throttled = handled(exceptions.Throttled(wait=42))
    missing = handled(Http404("No such paper in your queue."))
    forbidden = handled(DjangoPermissionDenied("Reviewers only."))
    parse = handled(exceptions.ParseError())
    method = handled(exceptions.MethodNotAllowed("DELETE"))

    assert (throttled.status_code, throttled["Retry-After"]) == (429, "42")
    assert throttled.data["errors"][0]["code"] == "throttled"
    assert missing.status_code == 404
    assert missing.data["errors"] == [
        {"field": None, "code": "not_found", "message": "No such paper in your queue."}
    ]
    assert (forbidden.status_code, forbidden.data["errors"][0]["code"]) == (
        403,
        "permission_denied",
    )
    assert (parse.status_code, parse.data["errors"][0]["code"]) == (400, "parse_error")
    assert (method.status_code, method.data["errors"][0]["message"]) == (
        405,
        'Method "DELETE" not allowed.',
    )
    assert handled(ValueError("a bug")) is None  # left to Django: a 500


class _TeamForm(forms.Form):
    name = forms.CharField(max_length=5)


def test_a_form_shows_the_errors_items_at_their_fields_once():
    form = _TeamForm({"name": "far too long"})
    error = ValidationFailed(
        items=[
            *form_error_items(_TeamForm({"name": "far too long"}).errors),
            ErrorItem(code="duplicate", message="a team named 'x' exists", field="name"),
            ErrorItem(code="closed", message="registration is closed", field="not_a_field"),
        ]
    )

    form_add_errors(form, error)

    assert form.errors["name"] == [
        "Ensure this value has at most 5 characters (it has 12).",
        "a team named 'x' exists",
    ]
    assert form.non_field_errors() == ["registration is closed"]
    # The codes stay too, for the JSON a page's script reads.
    assert [(item.field, item.code) for item in form_error_items(form.errors)] == [
        ("name", "max_length"),
        ("name", "duplicate"),
        (None, "closed"),
    ]
