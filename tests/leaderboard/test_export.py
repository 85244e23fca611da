import csv
import io
import json
import zipfile
from collections import defaultdict
from decimal import Decimal

import pytest

from judging.models import JudgingCondition, JudgmentStatus
from judging.selectors import stage_scores
from submissions.models import Stage, SubmissionInput
from tests.benchmark.factories import AgentFactory
from tests.errors import error_messages
from tests.judging.factories import JudgeFactory
from tests.leaderboard.factories import judge_submission
from tests.submissions.factories import SubmissionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset():
    claude, gemini = JudgeFactory(name="claude-judge"), JudgeFactory(name="gemini-judge")
    alpha = AgentFactory(name="alpha", display_name="-alpha")
    beta = AgentFactory(name="beta")
    for agent, base in ((alpha, 7), (beta, 4)):
        for stage in (Stage.END2END, Stage.EXPERIMENT):
            submission = SubmissionFactory(
                agent=agent, stage=stage, llm_cost_usd=Decimal("1.250000")
            )
            judge_submission(
                submission,
                claude,
                {"Overall": base, "Clarity": base + 1},
                has_hallucination=stage == Stage.EXPERIMENT,
                justification="=SUM(A1:A9) looks wrong",
            )
            judge_submission(submission, gemini, {"Overall": base + 1.5, "Clarity": base})
            judge_submission(
                submission, gemini, {"Overall": 2, "Clarity": 2}, condition=JudgingCondition.NO_CODE
            )
    hidden = SubmissionFactory(agent=beta, stage=Stage.PAPER)
    judge_submission(hidden, claude, {"Overall": 10}, status=JudgmentStatus.FAILED)


def download(client, **params) -> zipfile.ZipFile:
    response = client.get("/api/export/", params)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response.streaming
    assert "attachment" in response["Content-Disposition"]
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def read_csv(archive: zipfile.ZipFile, name: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(archive.read(name).decode())))


def test_the_export_round_trips_the_scores(client, dataset):
    archive = download(client)

    names = set(archive.namelist())
    for table in ("tasks", "agents", "submissions", "judgments", "scores"):
        assert {f"{table}.csv", f"{table}.jsonl"} <= names
    judgments = {row["id"]: row for row in read_csv(archive, "judgments.csv")}
    # Stage scores rebuilt from the files: the mean over judges per condition.
    rebuilt: dict[tuple, list[float]] = defaultdict(list)
    for row in read_csv(archive, "scores.csv"):
        judgment = judgments[row["judgment_id"]]
        assert judgment["submission_id"] == row["submission_id"]
        key = (int(row["submission_id"]), judgment["condition"], row["dimension"])
        rebuilt[key].append(float(row["score"]))
    for condition in JudgingCondition.values:
        expected = stage_scores(condition=condition)
        from_files = {
            (sid, dim): sum(values) / len(values)
            for (sid, cond, dim), values in rebuilt.items()
            if cond == condition
        }
        assert from_files == {
            (sid, dim): float(mean) for sid, dims in expected.items() for dim, mean in dims.items()
        }
    # The failed judgment is not part of the public dataset.
    assert len(judgments) == 12
    assert len(read_csv(archive, "submissions.csv")) == 5


def test_json_lines_hold_the_same_rows_as_the_csv(client, dataset):
    archive = download(client)

    for table in ("tasks", "agents", "submissions", "judgments", "scores"):
        csv_rows = read_csv(archive, f"{table}.csv")
        lines = archive.read(f"{table}.jsonl").decode().splitlines()
        objects = [json.loads(line) for line in lines]
        assert len(objects) == len(csv_rows)
        assert list(objects[0]) == list(csv_rows[0])
    scores = [json.loads(line) for line in archive.read("scores.jsonl").decode().splitlines()]
    assert {s["score"] for s in scores} == {2.0, 4.0, 5.0, 5.5, 7.0, 8.0, 8.5}
    judgment = json.loads(archive.read("judgments.jsonl").decode().splitlines()[0])
    assert judgment["strengths"] == ["clear"]
    assert judgment["has_hallucination"] in (True, False, None)


def test_export_csv_cells_are_escaped(client, dataset):
    archive = download(client, formats="csv")

    assert not any(name.endswith(".jsonl") for name in archive.namelist())
    agents = {row["name"]: row for row in read_csv(archive, "agents.csv")}
    assert agents["alpha"]["display_name"] == "'-alpha"
    justifications = {row["justification"] for row in read_csv(archive, "scores.csv")}
    assert "'=SUM(A1:A9) looks wrong" in justifications
    assert "=SUM(A1:A9) looks wrong" not in justifications


def test_an_unknown_export_format_is_refused(client):
    response = client.get("/api/export/", {"formats": "xlsx"})

    assert response.status_code == 400
    assert "xlsx" in error_messages(response)["formats"][0]


def test_the_export_has_each_submissions_inputs_in_order(client):
    first, second = SubmissionFactory.create_batch(2, stage=Stage.IDEA)
    proposal = SubmissionFactory(task=first.task, stage=Stage.PROPOSAL)
    SubmissionInput.objects.create(submission=proposal, based_on=second, position=0)
    SubmissionInput.objects.create(submission=proposal, based_on=first, position=1)

    rows = read_csv(download(client), "submission_inputs.csv")

    assert rows == [
        {"submission_id": str(proposal.pk), "based_on": str(second.pk), "position": "0"},
        {"submission_id": str(proposal.pk), "based_on": str(first.pk), "position": "1"},
    ]
