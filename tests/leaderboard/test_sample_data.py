"""The published MLR-Bench end-to-end scores, through the importer, on the
leaderboard: each agent's row on `iclr2025_bi_align` is the mean of the two
judges' published scores, dimension by dimension, in the page, the JSON and
the CSV.
"""

import csv
import io
import json
import re
from pathlib import Path

import pytest

from benchmark.models import Agent, Stage, Submission
from judging.models import JudgingCondition, Judgment, JudgmentStatus

pytestmark = pytest.mark.django_db

TASK = "iclr2025_bi_align"
DIMENSIONS = ("Clarity", "Novelty", "Soundness", "Significance", "Overall")


def published_means(data: Path, condition: str) -> dict[str, dict[str, float]]:
    """`{agent: {dimension: mean of the judges' scores}}` from the review files."""
    suffix = "_no_code" if condition == JudgingCondition.NO_CODE else ""
    by_agent: dict[str, dict[str, list[float]]] = {}
    for folder in sorted((data / "agent_reviews").glob(f"subset_reviews_*/{TASK}")):
        for path in folder.glob("review_*.json"):
            agent = path.stem.removeprefix("review_")
            if suffix:
                if not agent.endswith(suffix):
                    continue
                agent = agent.removesuffix(suffix)
            elif agent.endswith("_no_code"):
                continue
            review = json.loads(path.read_text(encoding="utf-8"))
            for dimension in DIMENSIONS:
                by_agent.setdefault(agent, {}).setdefault(dimension, []).append(
                    float(review[dimension]["score"])
                )
    if not suffix:
        # AI Scientist v2's papers carry their two end-to-end reviews beside them.
        for path in sorted(data.glob(f"ai_scientist_v2_papers/*/{TASK}/review_*.json")):
            if path.name.startswith("review_hallucination_"):
                continue
            review = json.loads(path.read_text(encoding="utf-8"))
            for dimension in DIMENSIONS:
                by_agent.setdefault("ai-scientist-v2", {}).setdefault(dimension, []).append(
                    float(review[dimension]["score"])
                )
    return {
        agent: {d: sum(v) / len(v) for d, v in dims.items()}
        for agent, dims in by_agent.items()
        if all(len(v) == 2 for v in dims.values())
    }


def review_key(agent: Agent, keys: set[str]) -> str:
    """Which published agent folder an imported agent is: its name, or a name
    that ends with `-<folder>` / `_<folder>` (the longest such folder)."""
    if agent.name in keys:
        return agent.name
    matches = [k for k in keys if agent.name.endswith((f"-{k}", f"_{k}"))]
    assert matches, f"imported agent {agent.name!r} matches none of {sorted(keys)}"
    return max(matches, key=len)


def page_rows(html: str) -> dict[str, dict[str, float]]:
    rows = {}
    for match in re.finditer(r'<tr data-agent="([^"]+)"(.*?)</tr>', html, re.S):
        cells = re.findall(
            r'<td class="num" data-column="([^"]+)">(?:<strong>)?([0-9.]+)', match.group(2)
        )
        rows[match.group(1)] = {k: float(v) for k, v in cells if k in DIMENSIONS}
    return rows


@pytest.mark.parametrize("condition", [JudgingCondition.WITH_CODE, JudgingCondition.NO_CODE])
def test_end_to_end_rows_equal_the_published_judge_means(client, sample, condition):
    submissions = Submission.objects.filter(stage=Stage.END2END, task__slug=TASK)
    judged = Judgment.objects.filter(
        submission__in=submissions, status=JudgmentStatus.DONE, condition=condition
    )
    assert judged.exists(), f"no {condition} judgment after import"

    expected_by_folder = published_means(sample.path, condition)
    agents = Agent.objects.filter(submissions__in=judged.values("submission_id")).distinct()
    expected = {
        agent.name: expected_by_folder[review_key(agent, set(expected_by_folder))]
        for agent in agents
    }
    assert expected, "no imported agent has published reviews"
    params = {"stage": "end2end", "task": TASK, "condition": condition}

    body = client.get("/api/leaderboard/", params).json()
    from_json = {row["agent"]: row["scores"] for row in body["rows"]}

    response = client.get("/api/leaderboard/", {**params, "format": "csv"})
    from_csv = {
        row["agent"]: {d: float(row[d]) for d in DIMENSIONS}
        for row in csv.DictReader(io.StringIO(response.content.decode()))
    }

    from_page = page_rows(client.get("/leaderboard/", params).content.decode())

    for name, means in expected.items():
        for dimension, mean in means.items():
            assert from_json[name][dimension] == pytest.approx(mean), (name, dimension)
            assert from_csv[name][dimension] == pytest.approx(mean), (name, dimension)
            assert from_page[name][dimension] == pytest.approx(mean, abs=0.005), (
                name,
                dimension,
            )
    assert set(from_json) == set(expected)
