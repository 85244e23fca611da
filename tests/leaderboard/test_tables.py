"""The serializers are the one definition of a leaderboard row: the CSV's
columns and the page's table follow them."""

import csv
import io
import re
from decimal import Decimal
from types import SimpleNamespace

import pytest
from rest_framework import serializers as drf

from experiments.models import ReproductionVerdict
from leaderboard.selectors import board as board_selectors
from leaderboard.serializers import LeaderboardRowSerializer, ObjectiveLeaderboardRowSerializer
from leaderboard.tables import STAGE_COLUMNS, csv_header, page_columns
from tests.benchmark.factories import TaskFactory

from .factories import AgentFactory, JudgeFactory, SubmissionFactory, judge_submission

pytestmark = pytest.mark.django_db

LEADERBOARD = "/api/leaderboard/"
PAGE = "/leaderboard/"
# The site's own end-to-end rubric, Overall first.
DIMENSIONS = ["Overall", "Clarity", "Novelty", "Soundness", "Significance"]


@pytest.fixture
def board(monkeypatch):
    """Two agents on two tasks, with every optional column filled: costs,
    hallucination verdicts, human scores and reproduction checks."""
    judge = JudgeFactory(name="claude-judge")
    for name, overall in (("alpha", 8), ("beta", 5)):
        agent = AgentFactory(name=name, coding_agent="Claude Code")
        for slug in ("iclr2025_one", "iclr2025_two"):
            submission = SubmissionFactory(
                agent=agent, task=TaskFactory(slug=slug), llm_cost_usd=Decimal("1.5")
            )
            judge_submission(
                submission,
                judge,
                {"Overall": overall, "Clarity": 5, "Novelty": 6, "Soundness": 4, "Significance": 3},
                has_hallucination=name == "beta",
            )
    monkeypatch.setattr(
        board_selectors,
        "human_overall_by_submission",
        lambda *, submission_ids: {sid: 4.5 for sid in submission_ids.values_list("id", flat=True)},
    )
    monkeypatch.setattr(
        board_selectors,
        "reproduction_verdicts",
        lambda *, submission_ids: {
            sid: SimpleNamespace(verdict=ReproductionVerdict.REPRODUCED)
            for sid in submission_ids.values_list("id", flat=True)
        },
    )


def csv_of(client, params) -> list[dict]:
    response = client.get(LEADERBOARD, {**params, "format": "csv"})
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_csv_columns_are_the_serializer_fields_in_order(client, board):
    response = client.get(LEADERBOARD, {"format": "csv"})
    header = next(csv.reader(io.StringIO(response.content.decode())))

    assert header == [
        "rank",
        "rank_strict",
        "n_better",
        "agent",
        "display_name",
        "base_model",
        "coding_agent",
        "scaffold",
        "model_family",
        "n_tasks",
        *DIMENSIONS,
        "overall_ci_low",
        "overall_ci_high",
        *(f"{d}_{end}" for d in DIMENSIONS for end in ("ci_low", "ci_high")),
        "fabrication_rate",
        "fabrication_rule",
        "human_fabrication_rate",
        "cost_usd_per_task",
        "cost_unpriced_steps",
        "pareto_optimal",
        "human_overall",
        "same_family_judge",
        "reproduced_rate",
        "not_reproduced_rate",
        "reproduction_checked",
        "panel",
    ]
    # The serializer's order, field by field: the scores become one column per
    # dimension, the interval two columns; the page link is not data.
    fields = list(LeaderboardRowSerializer().fields)
    flattened = [
        name
        for field in fields
        for name in (
            DIMENSIONS
            if field == "scores"
            else ["overall_ci_low", "overall_ci_high"]
            if field == "overall_ci"
            else [f"{d}_{end}" for d in DIMENSIONS for end in ("ci_low", "ci_high")]
            if field == "scores_ci"
            else []
            if field == "url"
            else [field]
        )
    ]
    assert header == flattened
    json_row = client.get(LEADERBOARD).json()["rows"][0]
    csv_row = csv_of(client, {})[0]
    assert csv_row["cost_usd_per_task"] == str(json_row["cost_usd_per_task"])
    assert csv_row["human_overall"] == str(json_row["human_overall"])
    assert csv_row["reproduced_rate"] == str(json_row["reproduced_rate"])


def test_the_objective_csv_columns_are_its_serializers_fields():
    assert csv_header(ObjectiveLeaderboardRowSerializer(), keys={}) == [
        "rank",
        "agent",
        "display_name",
        "n_tasks",
        "mean_relative_improvement",
        "task",
        "metric",
        "higher_is_better",
        "score",
        "relative_improvement",
        "runtime_seconds",
        "lloc",
        "submission",
        "trials",
        "best_relative_improvement",
        "mean_relative_improvement_of_trials",
        "beat_baseline_share",
        "task_version",
        "test_score_source",
        "idea_source",
        "baseline_score",
        "absolute_improvement",
        "percent_improvement",
        # Issue 36: a cell whose task's scoring reads labels the method writes.
        "scoring_forgeable",
    ]


def page_cells(html: str) -> set[str]:
    return set(re.findall(r'<td[^>]* data-column="([^"]+)"', html))


def test_the_page_has_a_column_for_every_field_of_the_serializer(client, board):
    html = client.get(PAGE).content.decode()

    columns = page_columns(LeaderboardRowSerializer(), STAGE_COLUMNS)
    assert columns == list(STAGE_COLUMNS)  # every field has its designed column
    cells = page_cells(html)
    for column in columns:
        keys = DIMENSIONS if column.key == "scores" else [column.key]
        for key in keys:
            assert key in cells, f"no {key} column for {column.fields}"
    shown = {field for column in columns for field in column.fields}
    assert shown == set(LeaderboardRowSerializer().fields)
    # The table shows what the serializer wrote.
    assert "$1.50" in html
    assert "4.50" in html
    assert 'href="/agents/alpha/"' in html


def test_a_field_added_to_the_serializer_appears_in_the_json_the_csv_and_the_page(
    client, board, monkeypatch
):
    fields = {
        **LeaderboardRowSerializer._declared_fields,
        "tasks_counted": drf.IntegerField(source="n_tasks"),
    }
    monkeypatch.setattr(LeaderboardRowSerializer, "_declared_fields", fields)

    assert [r["tasks_counted"] for r in client.get(LEADERBOARD).json()["rows"]] == [2, 2]
    assert [r["tasks_counted"] for r in csv_of(client, {})] == ["2", "2"]
    html = client.get(PAGE).content.decode()
    assert "tasks_counted" in page_cells(html)
    assert "Tasks counted</th>" in html
