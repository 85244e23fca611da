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
from django.core.management import call_command

from benchmark.models import Agent
from judging.models import JudgingCondition, Judgment, JudgmentStatus
from submissions.models import Stage, Submission

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
            r'<td class="num" data-column="([^"]+)"[^>]*>(?:<strong>)?([0-9.]+)', match.group(2)
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


# MLR-Bench's performance_cost.py: USD per token (input, output, cache write, cache
# read) and the model each agent's writing steps ran on; `lit` is always the search model.
SCRIPT_PRICES = {
    "claude-3-7-sonnet-20250219": (3e-6, 15e-6, 3.75e-6, 0.3e-6),
    "gemini-2.5-pro-preview": (1.25e-6, 10e-6, 0, 0),
    "o4-mini-2025-04-16": (1.1e-6, 4.4e-6, 0, 0),
    "gpt-4o-search-preview-2025-03-11": (2.5e-6, 10e-6, 0, 0),
}
WRITING_MODEL = {
    "claude": "claude-3-7-sonnet-20250219",
    "gemini": "gemini-2.5-pro-preview",
    "gemini-cli": "gemini-2.5-pro-preview",
    "o4-mini": "o4-mini-2025-04-16",
    "codex": "o4-mini-2025-04-16",
}


def script_step_cost(usage: dict, model: str) -> float:
    """compute_cost of performance_cost.py: OpenAI's usage has three keys, Anthropic's four."""
    price_in, price_out, cache_write, cache_read = SCRIPT_PRICES[model]
    if "prompt_tokens" in usage:
        return usage["prompt_tokens"] * price_in + usage["completion_tokens"] * price_out
    return (
        usage["input_tokens"] * price_in
        + usage["output_tokens"] * price_out
        + usage["cache_creation_input_tokens"] * cache_write
        + usage["cache_read_input_tokens"] * cache_read
    )


def test_costs_per_step_follow_mlrbenchs_rule_and_unknown_coding_costs_are_lower_bounds(
    client, sample
):
    from submissions.selectors import submission_costs

    data = sample.path
    board = {r["agent"]: r for r in client.get("/api/leaderboard/?stage=end2end").json()["rows"]}

    for agent, writing_model in WRITING_MODEL.items():
        folder = data / "agent_results" / f"end2end_{agent}" / TASK
        submission = Submission.objects.get(agent__name=agent, stage=Stage.END2END)
        costs = submission_costs(submission)
        steps = {step.step: step for step in costs.steps}
        assert set(steps) == {"idea", "lit", "proposal", "paper"}
        expected_total = 0.0
        for name, step in steps.items():
            model = "gpt-4o-search-preview-2025-03-11" if name == "lit" else writing_model
            usage = json.loads((folder / f"{name}_token_usage.json").read_text())
            expected = script_step_cost(usage, model)
            assert step.cost_usd is not None
            assert float(step.cost_usd) == pytest.approx(expected, abs=1e-6), (agent, name)
            assert step.price_source, (agent, name)  # every price says where it comes from
            expected_total += expected
        assert steps["lit"].model == "gpt-4o-search-preview-2025-03-11"
        trace = folder / "claude_output.json"
        row = board[agent]
        if trace.is_file():
            # The coding agent's cost, as the script adds it: its `system` messages.
            messages = json.loads(trace.read_text())
            expected_total += sum(m["cost_usd"] for m in messages if m.get("role") == "system")
            assert row["cost_unpriced_steps"] == 0
            assert row["cost_usd_per_task"] == pytest.approx(expected_total, abs=5e-5)  # 4 places
        else:
            # Codex CLI and Gemini CLI left no cost: the LLM steps are a lower bound.
            assert row["cost_unpriced_steps"] == 1, agent
            assert row["cost_usd_per_task"] == pytest.approx(expected_total, abs=5e-5)  # 4 places
            assert row["pareto_optimal"] is False
    assert {a for a, r in board.items() if r["cost_unpriced_steps"]} == {"codex", "gemini-cli"}

    html = client.get("/leaderboard/?stage=end2end").content.decode()
    codex = re.search(r'<tr data-agent="codex".*?</tr>', html, re.S).group(0)
    assert 'data-column="cost">at least $' in codex
    assert html.count('data-testid="cost-open-marker"') == 2
    note = re.search(r"Lower bounds: .*?</span>", html).group(0)
    assert "Codex CLI (o4-mini) (1 step without a known cost" in note, note
    assert "Gemini CLI (Gemini 2.5 Pro) (1 step" in note


def test_a_release_of_the_sample_is_valid_croissant_and_its_parquet_says_what_its_json_says(
    client, sample, tmp_path
):
    import pandas as pd

    from leaderboard.release_files import croissant_validate

    call_command("release", "create", "sample-1", stdout=io.StringIO())
    data = client.get("/api/releases/sample-1/").json()
    for listed in data["files"]:
        (tmp_path / listed["name"]).write_bytes(client.get(listed["url"]).content)

    assert croissant_validate(tmp_path) == []
    frame = pd.read_parquet(tmp_path / "leaderboard_end2end.parquet")
    rows = data["leaderboards"]["end2end"]["rows"]
    assert list(frame["agent"]) == [r["agent"] for r in rows]
    assert list(frame["cost_unpriced_steps"]) == [r["cost_unpriced_steps"] for r in rows]
    judgments = pd.read_parquet(tmp_path / "judgments.parquet")
    assert len(judgments) == len(data["judgments"]["rows"])
