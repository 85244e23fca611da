import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmark.models import ModelFamily
from common.csv_cells import csv_cell
from judging.models import JudgingCondition, JudgmentStatus
from submissions.models import Stage
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.errors import error_messages
from tests.judging.factories import JudgeFactory
from tests.leaderboard.factories import bulk_board, judge_submission
from tests.submissions.factories import SubmissionFactory
from tests.support.queries import count_queries

pytestmark = pytest.mark.django_db

LEADERBOARD = "/api/leaderboard/"


def scores(overall, clarity=5):
    return {"Overall": overall, "Clarity": clarity, "Novelty": 6, "Soundness": 4}


@pytest.fixture
def two_agents():
    claude = JudgeFactory(name="claude-judge", model_family=ModelFamily.ANTHROPIC)
    gemini = JudgeFactory(name="gemini-judge", model_family=ModelFamily.GOOGLE)
    alpha = AgentFactory(
        name="alpha",
        display_name="Alpha",
        base_model="claude-3-7",
        model_family=ModelFamily.ANTHROPIC,
    )
    beta = AgentFactory(name="beta", display_name="Beta", base_model="o4-mini")
    for task_slug, (a, b) in {"iclr2025_one": (8, 5), "iclr2025_two": (6, 4)}.items():
        task = TaskFactory(slug=task_slug)
        sa = SubmissionFactory(agent=alpha, task=task)
        judge_submission(sa, claude, scores(a, clarity=a))
        judge_submission(sa, gemini, scores(a - 1, clarity=a))
        sb = SubmissionFactory(agent=beta, task=task)
        judge_submission(sb, claude, scores(b))
        judge_submission(sb, gemini, scores(b + 1))
    return alpha, beta


def test_the_leaderboard_api_answers_ranked_rows(client, two_agents):
    response = client.get(LEADERBOARD, {"stage": "end2end"})

    assert response.status_code == 200
    body = response.json()
    assert body["stage"] == "end2end"
    assert body["acceptance_line"] == 6.0
    first, second = body["rows"]
    # Two tasks cannot tell agents apart (`rank`); `rank_strict` is the order by mean.
    assert (first["rank_strict"], first["agent"], first["n_tasks"]) == (1, "alpha", 2)
    assert first["rank"] == 1 and first["n_better"] == 0
    # Tasks: (8+7)/2 and (6+5)/2.
    assert first["scores"] == {"Overall": 6.5, "Clarity": 7.0, "Novelty": 6.0, "Soundness": 4.0}
    assert first["same_family_judge"] is True
    assert first["base_model"] == "claude-3-7"
    assert first["url"] == "/agents/alpha/"
    assert len(first["overall_ci"]) == 2
    assert first["overall_ci"][0] <= 6.5 <= first["overall_ci"][1]
    assert (second["rank_strict"], second["agent"], second["scores"]["Overall"]) == (
        2,
        "beta",
        5.0,
    )
    assert second["rank"] == 1
    assert second["same_family_judge"] is False
    assert second["fabrication_rate"] is None
    assert second["human_overall"] is None


def test_the_csv_has_the_same_rows(client, two_agents):
    json_rows = client.get(LEADERBOARD, {"stage": "end2end"}).json()["rows"]
    response = client.get(LEADERBOARD, {"stage": "end2end", "format": "csv"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="leaderboard-end2end.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["agent"] for r in rows] == [r["agent"] for r in json_rows]
    json_download = client.get(LEADERBOARD, {"stage": "end2end", "format": "json"})
    assert 'filename="leaderboard-end2end.json"' in json_download["Content-Disposition"]
    assert json_download.json()["rows"] == json_rows
    for csv_row, json_row in zip(rows, json_rows, strict=True):
        assert int(csv_row["rank"]) == json_row["rank"]
        for key, value in json_row["scores"].items():
            assert float(csv_row[key]) == value
        assert float(csv_row["overall_ci_low"]) == json_row["overall_ci"][0]


def test_the_api_applies_the_same_choices_as_the_page(client, two_agents):
    only_gemini = client.get(LEADERBOARD, {"judge": "gemini-judge"}).json()["rows"]
    assert {r["agent"]: r["scores"]["Overall"] for r in only_gemini} == {"alpha": 6.0, "beta": 5.5}

    excluded = client.get(LEADERBOARD, {"exclude_same_family": "1"}).json()["rows"]
    assert {r["agent"]: r["scores"]["Overall"] for r in excluded} == {"alpha": 6.0, "beta": 5.0}

    by_clarity = client.get(LEADERBOARD, {"sort": "Clarity"}).json()["rows"]
    assert [r["agent"] for r in by_clarity] == ["beta", "alpha"]
    assert [r["rank_strict"] for r in by_clarity] == [2, 1]

    assert client.get(LEADERBOARD, {"task": "iclr2025_two"}).json()["rows"][0]["n_tasks"] == 1
    assert client.get(LEADERBOARD, {"stage": "idea"}).json()["rows"] == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"stage": "poetry"}, "stage"),
        ({"judge": "nobody"}, "judge"),
        ({"year": "last"}, "year"),
        ({"condition": "blindfolded"}, "condition"),
        ({"sort": "Elegance"}, "sort"),
    ],
)
def test_a_bad_parameter_is_a_clear_400(client, two_agents, params, field):
    response = client.get(LEADERBOARD, params)

    assert response.status_code == 400
    assert field in error_messages(response)


def test_csv_cells_that_look_like_formulas_are_escaped(client):
    for prefix in ("=", "+", "-", "@", "\t", "\r"):
        assert csv_cell(f"{prefix}cmd|' /C calc'!A0") == f"'{prefix}cmd|' /C calc'!A0"
    assert csv_cell(-1.5) == -1.5
    assert csv_cell("plain") == "plain"

    agent = AgentFactory(name="evil", display_name='=HYPERLINK("http://x","y")')
    judge_submission(SubmissionFactory(agent=agent), JudgeFactory(), scores(5))
    response = client.get(LEADERBOARD, {"format": "csv"})

    row = next(csv.DictReader(io.StringIO(response.content.decode())))
    assert row["display_name"] == '\'=HYPERLINK("http://x","y")'


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"judge": "judge-a", "exclude_same_family": "1"},
        {"common_tasks": "1", "conference": "iclr"},
    ],
)
def test_query_count_is_the_same_for_3_and_300_agents(client, params):
    judges = [JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")]
    tasks = [TaskFactory(slug=f"iclr2025_t{i}") for i in range(4)]
    bulk_board(n_agents=3, tasks=tasks, judges=judges, prefix="small")
    page = reverse("leaderboard:leaderboard")
    small = (count_queries(client, page, params), count_queries(client, LEADERBOARD, params))
    assert len(client.get(LEADERBOARD, params).json()["rows"]) == 3

    bulk_board(n_agents=297, tasks=tasks, judges=judges, prefix="large")
    large = (count_queries(client, page, params), count_queries(client, LEADERBOARD, params))

    assert len(client.get(LEADERBOARD, params).json()["rows"]) == 300
    assert small == large


def test_answers_are_cached_until_a_judgment_lands(
    client, two_agents, django_capture_on_commit_callbacks
):
    first = client.get(LEADERBOARD).json()
    with CaptureQueriesContext(connection) as queries:
        again = client.get(LEADERBOARD).json()
    assert again == first
    assert len(queries) == 0

    gamma = AgentFactory(name="gamma")
    with django_capture_on_commit_callbacks(execute=True):
        judge_submission(SubmissionFactory(agent=gamma), JudgeFactory(), scores(10))

    assert [r["agent"] for r in client.get(LEADERBOARD).json()["rows"]] == [
        "gamma",
        "alpha",
        "beta",
    ]


def test_anonymous_clients_are_throttled_and_signed_in_users_are_not(client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"public_api": "2/minute", "export": "1/minute"},
    }
    assert client.get(LEADERBOARD).status_code == 200
    assert client.get("/api/judgments/").status_code == 200
    throttled = client.get(LEADERBOARD)
    assert throttled.status_code == 429
    assert "Retry-After" in throttled

    assert client.get("/api/export/").status_code == 200
    assert client.get("/api/export/").status_code == 429

    user = get_user_model().objects.create_user("researcher", password="pw")
    client.force_login(user)
    assert all(client.get(LEADERBOARD).status_code == 200 for _ in range(3))


def test_the_judgments_api_lists_finished_judgments_with_scores(client, two_agents):
    alpha, _ = two_agents
    queued = SubmissionFactory(agent=alpha, stage=Stage.PAPER)
    judge_submission(queued, JudgeFactory(name="slow"), scores(9), status=JudgmentStatus.QUEUED)
    no_code = SubmissionFactory(agent=alpha, stage=Stage.PAPER)
    judge_submission(
        no_code, JudgeFactory(name="blind"), scores(3), condition=JudgingCondition.NO_CODE
    )

    everything = client.get("/api/judgments/").json()
    assert everything["count"] == 9  # 8 with code, 1 without; the queued one is not public

    alpha_claude = client.get(
        "/api/judgments/", {"agent": "alpha", "judge": "claude-judge", "task": "iclr2025_one"}
    ).json()
    assert alpha_claude["count"] == 1
    judgment = alpha_claude["results"][0]
    assert judgment["stage"] == "end2end"
    assert judgment["condition"] == "with_code"
    assert judgment["judge_model_family"] == "anthropic"
    assert judgment["input_tokens"] == 1000
    assert judgment["cost_usd"] == 0.01
    assert {s["dimension"]: s["score"] for s in judgment["scores"]}["Overall"] == 8.0
    assert judgment["scores"][0]["justification"].endswith("Because.")

    assert client.get("/api/judgments/", {"condition": "no_code"}).json()["count"] == 1
    assert client.get("/api/judgments/", {"stage": "paper"}).json()["count"] == 1
    assert client.get("/api/judgments/", {"stage": "bogus"}).status_code == 400


def test_the_judgments_api_is_paginated(client):
    judge = JudgeFactory()
    for _ in range(3):
        judge_submission(SubmissionFactory(), judge, scores(5))

    first = client.get("/api/judgments/", {"page_size": 2}).json()

    assert first["count"] == 3
    assert len(first["results"]) == 2
    second = client.get(first["next"]).json()
    assert len(second["results"]) == 1


def test_the_openapi_schema_documents_the_endpoints(client):
    response = client.get("/api/schema/", {"format": "json"})

    paths = response.json()["paths"]
    assert "/api/leaderboard/" in paths
    assert "/api/judgments/" in paths
    assert "/api/export/" in paths
    parameters = {p["name"] for p in paths["/api/leaderboard/"]["get"]["parameters"]}
    assert {"stage", "judge", "exclude_same_family", "common_tasks", "format"} <= parameters
    assert "application/zip" in paths["/api/export/"]["get"]["responses"]["200"]["content"]
