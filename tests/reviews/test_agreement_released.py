"""The public agreement counts released reviews only; an organiser may count
every submitted one (issue 20, finding 3)."""

import pytest

from reviews.services import review_round_release

from .scenario import scenario_build

pytestmark = pytest.mark.django_db


def _n_humans(answer: dict) -> int:
    return max(row["n_reviews"] for row in answer["dimensions"])


def test_unreleased_reviews_are_not_in_the_public_agreement(client):
    s = scenario_build()  # two reviews submitted in a round not yet released

    anonymous = client.get("/api/agreement/?stage=end2end").json()
    asking_for_all = client.get("/api/agreement/?stage=end2end&reviews=submitted").json()
    page = client.get("/agreement/?stage=end2end&reviews=submitted").content.decode()
    client.force_login(s.organiser)
    organiser = client.get("/api/agreement/?stage=end2end&reviews=submitted").json()

    assert anonymous["reviews"] == "released" and _n_humans(anonymous) == 0
    assert asking_for_all["reviews"] == "released" and _n_humans(asking_for_all) == 0
    assert "Clear writing" not in page
    assert organiser["reviews"] == "submitted" and _n_humans(organiser) == 2


def test_released_reviews_count_once_the_round_is_released(client):
    s = scenario_build()
    review_round_release(review_round=s.review_round)

    answer = client.get("/api/agreement/?stage=end2end").json()

    assert _n_humans(answer) == 2
