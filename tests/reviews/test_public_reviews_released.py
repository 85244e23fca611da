"""Every public page and endpoint that reads human reviews counts released
ones only (issue 32, finding 6: the judges' board counted an unreleased
round's reviews, so its human mean moved before the round was released)."""

import io
import re
import zipfile

import pytest
from django.core.cache import cache

from reviews.models import HumanReview
from reviews.services import review_round_release

from .scenario import scenario_build

pytestmark = pytest.mark.django_db

PUBLIC_READERS_OF_REVIEWS = [
    "/api/judges/leaderboard/?stage=end2end",
    "/judges/?stage=end2end",
    "/api/agreement/?stage=end2end",
    "/agreement/?stage=end2end",
    "/api/leaderboard/?stage=end2end",
    "/leaderboard/?stage=end2end",
    "/api/fabrication/?stage=end2end",
    "/fabrication/?stage=end2end",
]


_VOLATILE = re.compile(
    r'nonce="[^"]*"|name="csrfmiddlewaretoken" value="[^"]*"|"computed_at": ?"[^"]*"'
    r"|\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)?|(?:\d+|an?)\s(?:second|minute)s?\sago"
)


def _answers(client, urls: list[str]) -> dict[str, str]:
    cache.clear()
    answers = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code in (200, 404), url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if body.startswith(b"PK"):  # the export: its files, not the zip's timestamps
            with zipfile.ZipFile(io.BytesIO(body)) as archive:
                body = b"".join(archive.read(name) for name in sorted(archive.namelist()))
        answers[url] = _VOLATILE.sub("", f"{response.status_code} {body.decode()}")
    return answers


def _urls(s) -> list[str]:
    submission = s.submission
    return [
        *PUBLIC_READERS_OF_REVIEWS,
        "/api/export/",
        f"/submissions/{submission.pk}/",
        f"/submissions/{submission.pk}/scores/",
        f"/tasks/{submission.task.slug}/results/",
        f"/agents/{submission.agent.name}/",
    ]


def test_no_public_page_or_endpoint_counts_an_unreleased_review(client):
    s = scenario_build()  # two reviews submitted in a round not yet released
    assert HumanReview.objects.filter(status="submitted").count() == 2
    urls = _urls(s)
    with_reviews = _answers(client, urls)

    HumanReview.objects.filter(assignment__review_round=s.review_round).delete()
    without = _answers(client, urls)

    changed = [url for url in urls if with_reviews[url] != without[url]]
    assert changed == [], changed


def test_the_judges_board_counts_them_once_released(client):
    s = scenario_build()
    before = client.get(PUBLIC_READERS_OF_REVIEWS[0]).json()["n_reviews"]
    review_round_release(review_round=s.review_round)
    cache.clear()
    after = client.get(PUBLIC_READERS_OF_REVIEWS[0]).json()["n_reviews"]
    assert (before, after) == (0, 2)
