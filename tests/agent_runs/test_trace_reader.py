"""A run's trace has one reader (submissions.traces): the live run page and the
submission it is stored as show the same steps of the same file."""

import pytest

from agent_runs.selectors import agent_run_transcript
from submissions.traces import trace_parse
from tests.agent_runs.test_pages import (
    _run,
    _trace_with_steps,
    organiser,  # noqa: F401 - a fixture
)

pytestmark = pytest.mark.django_db


def test_the_run_page_and_the_stored_trace_read_the_same_steps(task, organiser):  # noqa: F811
    run = _run(task, organiser)
    path = _trace_with_steps(run).path

    live = agent_run_transcript(run=run)
    stored = trace_parse(path.read_bytes, reader="json", size=path.stat().st_size)

    assert stored["format"] == "mlr-agent" and stored["agent"] == run.agent.name
    assert live.total == len(stored["steps"]) == 2
    for shown, kept in zip(live.steps, stored["steps"], strict=True):
        assert (shown["index"], shown["stage"], shown["started_at"]) == (
            kept["index"],
            kept["stage"],
            kept["started_at"],
        )
        assert shown["tokens"] == kept["input_tokens"] + kept["output_tokens"]
        assert shown["cost_usd"] == kept["cost_usd"]
        assert [c["name"] for c in shown["tool_calls"]] == [c["name"] for c in kept["tool_calls"]]
    results = [c["result"] for c in stored["steps"][1]["tool_calls"]]
    assert [r["content"] for r in live.steps[1]["tool_results"]] == results
