"""Issue 40: 5,000 nested JSON objects (30 KB) answered 500 on the API's JSON
endpoints (Python's JSON reader recursed past its limit). They are answered
400 in the one error shape, and JSON of any ordinary depth still reads."""

import json

import pytest

from common.parsers import JSON_MAX_DEPTH, json_too_deep
from tests.benchmark.factories import UserFactory


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_depth_is_counted_outside_strings_only():
    assert not json_too_deep(_nested(JSON_MAX_DEPTH))
    assert json_too_deep(_nested(JSON_MAX_DEPTH + 1))
    assert json_too_deep("[" * 5000 + "]" * 5000)
    brackets_in_text = json.dumps({"text": "[{" * 5000, "quote": 'a "[" \\ ]'})
    assert not json_too_deep(brackets_in_text)


@pytest.mark.django_db
def test_deep_json_is_answered_400_in_the_one_error_shape(client):
    from benchmark.roles import organiser_grant

    grace = UserFactory(username="grace")
    organiser_grant(user=grace)  # agent runs are the organisers'
    client.force_login(grace)

    response = client.post("/api/agent-runs/", data=_nested(5000), content_type="application/json")

    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["code"] == "parse_error" and "levels deep" in error["message"]
    broken = client.post("/api/agent-runs/", data="{nope", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["errors"][0]["code"] == "parse_error"
    ordinary = client.post("/api/agent-runs/", data={"tasks": []}, content_type="application/json")
    assert ordinary.status_code == 400
    assert ordinary.json()["errors"][0]["code"] != "parse_error"


@pytest.mark.django_db
def test_deep_json_on_the_review_draft_put_is_answered_400(client):
    from tests.reviews.scenario import scenario_build

    s = scenario_build()
    client.force_login(s.reviewer_a)
    url = f"/api/reviews/assignments/{s.assignment_a.code}/draft/"

    response = client.put(url, data=_nested(5000), content_type="application/json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "parse_error"
    saved = client.put(url, data={"strengths": "clear"}, content_type="application/json")
    assert saved.status_code == 200, saved.content
