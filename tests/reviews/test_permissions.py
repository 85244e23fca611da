"""Who reaches what: anonymous, a submitter (in the agent's team), an
unassigned reviewer, the assigned reviewer before and after submitting, an
organiser; and that nothing an unsubmitted reviewer receives names the
agent, its team or model, the LLM scores or the other reviewers."""

import json
import re
from urllib.parse import urljoin

import pytest
from django.urls import reverse

from tests.benchmark.factories import PASSWORD

from .scenario import IDENTITY, review_data, scenario_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario():
    return scenario_build()


def _urls(s) -> dict[str, tuple[str, str]]:
    code_a = s.assignment_a.code
    return {
        "queue": ("get", reverse("reviews:queue")),
        "paper": ("get", reverse("reviews:paper", args=[code_a])),
        "figure": ("get", f"/reviews/papers/{code_a}/figures/loss.png"),
        "draft": ("post", reverse("reviews:draft", args=[code_a])),
        "rounds": ("get", reverse("reviews:rounds")),
        "round": ("get", reverse("reviews:round", args=[s.review_round.pk])),
        "export": ("get", reverse("reviews:export") + "?stage=end2end"),
        "agreement": ("get", reverse("reviews:agreement") + "?stage=end2end"),
        "api_agreement": ("get", "/api/agreement/?stage=end2end"),
        "api_assignments": ("get", "/api/reviews/assignments/"),
        "api_assignment": ("get", f"/api/reviews/assignments/{code_a}/"),
        "api_submit": ("post", f"/api/reviews/assignments/{code_a}/review/"),
        "api_round": ("get", f"/api/reviews/rounds/{s.review_round.pk}/assignments/"),
        "api_export": ("get", "/api/reviews/export/?stage=end2end"),
        "admin_reviews": ("get", "/admin/reviews/humanreview/"),
    }


# Expected status per role and URL; 302 = sent to sign in, 404 = "no such paper".
MATRIX = {
    "anonymous": {
        "queue": 302,
        "paper": 302,
        "figure": 302,
        "draft": 302,
        "rounds": 302,
        "round": 302,
        "export": 302,
        "agreement": 200,
        "api_agreement": 200,
        "api_assignments": 403,
        "api_assignment": 403,
        "api_submit": 403,
        "api_round": 403,
        "api_export": 403,
        "admin_reviews": 302,
    },
    "submitter": {
        "queue": 403,
        "paper": 403,
        "figure": 403,
        "draft": 403,
        "rounds": 403,
        "round": 403,
        "export": 403,
        "agreement": 200,
        "api_agreement": 200,
        "api_assignments": 403,
        "api_assignment": 403,
        "api_submit": 403,
        "api_round": 403,
        "api_export": 403,
        "admin_reviews": 302,
    },
    "unassigned": {
        "queue": 200,
        "paper": 404,
        "figure": 404,
        "draft": 404,
        "rounds": 403,
        "round": 403,
        "export": 403,
        "agreement": 200,
        "api_agreement": 200,
        "api_assignments": 200,
        "api_assignment": 404,
        "api_submit": 404,
        "api_round": 403,
        "api_export": 403,
        "admin_reviews": 302,
    },
    "assigned": {
        "queue": 200,
        "paper": 200,
        "figure": 200,
        "draft": 200,
        "rounds": 403,
        "round": 403,
        "export": 403,
        "agreement": 200,
        "api_agreement": 200,
        "api_assignments": 200,
        "api_assignment": 200,
        "api_submit": 400,
        "api_round": 403,
        "api_export": 403,
        "admin_reviews": 302,
    },
    "organiser": {
        "queue": 200,
        "paper": 404,
        "figure": 404,
        "draft": 404,
        "rounds": 200,
        "round": 200,
        "export": 200,
        "agreement": 200,
        "api_agreement": 200,
        "api_assignments": 200,
        "api_assignment": 404,
        "api_submit": 404,
        "api_round": 200,
        "api_export": 200,
        "admin_reviews": 200,  # organisers manage the site's models in the admin
    },
}


def _user(s, role):
    return {
        "anonymous": None,
        "submitter": s.submitter,
        "unassigned": s.reviewer_c,
        "assigned": s.reviewer_a,
        "organiser": s.organiser,
    }[role]


@pytest.mark.parametrize("role", list(MATRIX))
def test_permission_matrix(client, scenario, role):
    user = _user(scenario, role)
    if user is not None:
        client.force_login(user)
    got = {}
    for name, (method, url) in _urls(scenario).items():
        if method == "post" and name == "api_submit":
            response = client.post(
                url, data=json.dumps({"scores": {}}), content_type="application/json"
            )
        elif method == "post":
            response = client.post(url, {"strengths": "typing"})
        else:
            response = client.get(url)
        got[name] = response.status_code
    assert got == MATRIX[role]


def _assert_blind(text: str, s) -> None:
    lowered = text.lower()
    for word in IDENTITY:
        assert word.lower() not in lowered, f"{word!r} leaked"
    for other in (s.reviewer_b, s.reviewer_d):
        assert other.username not in text
    assert "LLM stage scores" not in text
    assert "Reviewer 1" not in text


def test_nothing_an_unsubmitted_reviewer_receives_names_the_agent(client, scenario):
    s = scenario
    code = s.assignment_a.code
    client.force_login(s.reviewer_a)
    paper_url = reverse("reviews:paper", args=[code])
    page = client.get(paper_url)
    html = page.content.decode()
    # The paper, its figure, its code and its log are there, under the blind code.
    assert "We study drift." in html
    # The figure by its blind path, served under the blind code (never the paper's own src).
    assert 'src="./results/figures/loss.png"' in html
    assert "agent_code/main.py" in html
    assert "epoch 299 loss" in html and "epoch 50 loss" not in html  # the tail only
    _assert_blind(html, s)

    # Every link and image of the page stays on the site's blind or public pages.
    allowed_prefixes = (
        f"/reviews/papers/{code}/",
        "/static/",
        "/reviews/",
        "/agreement/",
        "/tasks/",
        "/api/docs/",
        "/admin/login/",
        # the site navigation: public lists, the reviewer's own account, signing out
        "/leaderboard/",
        "/fabrication/",  # per agent; a paper still to review shows no evidence there
        "/judges/",
        "/releases/",
        "/submissions/",
        "/account/",
        "/accounts/",
        # the site footer's credit to the MLR-Bench repository
        "https://github.com/chchenhui/mlrbench",
    )
    links = re.findall(r'(?:href|src)="([^"#]*)"', html)
    assert links
    for link in links:
        absolute = urljoin(paper_url, link)
        assert absolute == "/" or absolute.startswith(allowed_prefixes), link
        if absolute.startswith(f"/reviews/papers/{code}/"):
            response = client.get(absolute)
            assert response.status_code == 200, absolute
            body = b"".join(response.streaming_content) if response.streaming else response.content
            _assert_blind(body.decode("utf-8", errors="replace"), s)
            assert "sandbox" in response["Content-Security-Policy"]

    responses = [
        client.get(reverse("reviews:queue")),
        client.post(reverse("reviews:draft", args=[code]), {"strengths": "half a thought"}),
        client.get("/api/reviews/assignments/"),
        client.get(f"/api/reviews/assignments/{code}/"),
        client.post(
            f"/api/reviews/assignments/{code}/review/",
            data=json.dumps({"scores": {"Overall": 11}}),
            content_type="application/json",
        ),
        client.get("/api/agreement/?stage=end2end"),
        client.get(reverse("reviews:agreement")),
    ]
    for response in responses:
        assert response.status_code in (200, 400)
        _assert_blind(response.content.decode(), s)
    detail = client.get(f"/api/reviews/assignments/{code}/").json()
    assert detail["revealed"] is None
    assert {a["path"] for a in detail["artifacts"]} == {
        "results/paper.md",
        "results/figures/loss.png",
        "agent_code/main.py",
        "results/log.txt",
    }
    # The real, agent-revealing path is not served either.
    assert client.get(f"/reviews/papers/{code}/zephyr-secret_code/main.py").status_code == 404


def test_after_submitting_the_reviewer_sees_agent_llm_and_anonymous_others(client, scenario):
    s = scenario
    client.force_login(s.reviewer_b)
    html = client.get(reverse("reviews:paper", args=[s.assignment_b.code])).content.decode()
    assert "Zephyr Hidden Agent" in html and "Kappa Lab" in html and "omegamodel-42" in html
    assert "LLM stage scores" in html
    assert "Overall: 7.50" in html  # the mean of the two judges
    assert "Reviewer 1" in html  # reviewer D's scores, without D's name
    assert s.reviewer_d.username not in html and s.reviewer_a.username not in html
    detail = client.get(f"/api/reviews/assignments/{s.assignment_b.code}/").json()
    assert detail["revealed"]["agent"] == "zephyr-secret"
    assert detail["revealed"]["llm_scores"]["Overall"] == 7.5
    assert detail["revealed"]["other_reviews"] == [
        {
            "reviewer": "Reviewer 1",
            "scores": {
                d: 3 for d in ["Clarity", "Novelty", "Soundness", "Significance", "Overall"]
            },
        }
    ]


def test_a_reviewer_cannot_reach_another_reviewers_paper_code(client, scenario):
    client.force_login(scenario.reviewer_a)
    code_b = scenario.assignment_b.code
    assert client.get(reverse("reviews:paper", args=[code_b])).status_code == 404
    assert client.get(f"/api/reviews/assignments/{code_b}/").status_code == 404
    assert (
        client.post(
            f"/api/reviews/assignments/{code_b}/review/",
            data=json.dumps(review_data()),
            content_type="application/json",
        ).status_code
        == 404
    )


def test_the_organiser_sees_who_reviews_what(client, scenario):
    client.force_login(scenario.organiser)
    html = client.get(reverse("reviews:round", args=[scenario.review_round.pk])).content.decode()
    assert "reviewer-a" in html and "zephyr-secret" in html
    assert "2 of 3 reviews submitted" in html
    data = client.get(f"/api/reviews/rounds/{scenario.review_round.pk}/assignments/").json()
    assert {(r["reviewer"], r["status"]) for r in data["results"]} == {
        ("reviewer-a", "assigned"),
        ("reviewer-b", "submitted"),
        ("reviewer-d", "submitted"),
    }


def test_every_sign_in_lands_a_reviewer_on_their_queue_without_upload_links(client, scenario):
    queue = reverse("reviews:queue")
    paper = reverse("reviews:paper", args=[scenario.assignment_a.code])
    for login, wanted, lands in (
        ("/accounts/login/", "/", queue),  # the nav's "Sign in" on the home page
        ("/accounts/login/", "/leaderboard/", queue),
        ("/accounts/login/", paper, paper),  # sent to sign in from a review page
    ):
        client.logout()
        answer = client.post(
            login, {"username": "reviewer-a", "password": PASSWORD, "next": wanted}
        )
        assert answer.status_code == 302 and answer["Location"] == lands, (login, wanted)
    html = client.get(queue).content.decode()
    assert reverse("submissions:submission-upload") not in html
    # Not the organisers' page: the site's own 403, with a way back.
    refused = client.get(reverse("reviews:rounds"))
    assert refused.status_code == 403
    assert 'data-testid="error-403"' in refused.content.decode()
    assert 'href="/"' in refused.content.decode()

    # Anyone else goes where they were going.
    client.logout()
    answer = client.post(
        "/accounts/login/",
        {"username": "organiser", "password": PASSWORD, "next": "/leaderboard/"},
    )
    assert answer["Location"] == "/leaderboard/"
    # The reviewers' old sign-in address leads to the one sign-in page, then the queue.
    client.logout()
    assert client.get("/reviews/login/")["Location"] == "/accounts/login/?next=%2Freviews%2F"
