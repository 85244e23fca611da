"""The trace viewer: coding-agent traces are read once at intake into steps
(Claude Code, Codex CLI, Gemini CLI, the MLR-Agent), within a budget, and the
page serves the stored steps."""

import json
from pathlib import Path

import pytest

from submissions.derived import artifact_trace
from submissions.intake import submission_intake
from submissions.models import DerivedArtifact, DerivedKind, Submission
from tests.benchmark.factories import AgentFactory
from tests.benchmark.runs import PAPER, sample_run, zip_entries, zip_folder
from tests.submissions.factories import SubmissionFactory, artifact_add

pytestmark = pytest.mark.django_db

MLR_AGENT_NAME = "mlr-agent_output.json"


def intake(folder_or_zip: Path, task, tmp_path: Path, *, stage: str = "end2end") -> Submission:
    archive = folder_or_zip
    if folder_or_zip.is_dir():
        archive = zip_folder(folder_or_zip, tmp_path / "run.zip")
    return submission_intake(
        agent=AgentFactory(),
        task=task,
        stage=stage,
        archive=archive,
        archive_name="run.zip",
        uploader=None,
        source="api",
    )


def stored_trace(submission: Submission, path: str) -> dict:
    row = DerivedArtifact.objects.get(
        artifact__submission=submission, artifact__path=path, kind=DerivedKind.TRACE_STEPS
    )
    return json.loads(row.content)


def trace_url(submission: Submission, path: str) -> str:
    return f"/submissions/{submission.pk}/trace/{path}"


def mlr_agent_trace(steps: list[dict] | None = None, **extra) -> bytes:
    return json.dumps(
        {
            "format": "mlr-agent-trace",
            "version": 1,
            "model": "gpt-4o-mini",
            "agent": "mlr-agent-gpt-4o-mini",
            "steps": steps if steps is not None else mlr_agent_steps(),
            "ended": {"reason": "finish", "summary": "Trained the model; accuracy 0.9123."},
            **extra,
        }
    ).encode()


def mlr_agent_steps() -> list[dict]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "run", "arguments": json.dumps({"command": "python code/train.py"})},
    }
    return [
        {
            "index": 0,
            "stage": "experiment",
            "started_at": "2026-12-01T10:00:00Z",
            "duration_s": 1.5,
            "message": {
                "role": "assistant",
                "content": "I will **train** the model.",
                "tool_calls": [call],
            },
            "tool_results": [
                {
                    "tool_call_id": "call_1",
                    "name": "run",
                    "content": "exit 0\n<script>alert('x')</script>\ntest accuracy 0.9123\n",
                }
            ],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 80},
            "cost_usd": 0.0031,
        },
        {
            "index": 1,
            "stage": "experiment",
            "message": {"role": "assistant", "content": "<img src=x onerror=alert(1)> Done."},
            "tool_results": [],
            "usage": {"prompt_tokens": 1300, "completion_tokens": 20},
            "cost_usd": 0.0012,
        },
    ]


def mlr_agent_run(tmp_path: Path, trace: bytes) -> Path:
    return zip_entries(
        tmp_path / "run.zip",
        {
            "results/paper.md": PAPER,
            "code/train.py": b"print('test accuracy 0.9123')\n",
            "results/log.txt": b"test accuracy 0.9123\n",
            MLR_AGENT_NAME: trace,
        },
    )


def test_a_claude_code_trace_is_read_at_intake_into_steps_with_tools_tokens_and_cost(
    client, task, mlrbench_data, tmp_path
):
    submission = intake(sample_run(mlrbench_data, "claude"), task, tmp_path)

    trace = stored_trace(submission, "claude_output.json")
    assert (trace["format"], trace["model"]) == ("claude-code", "claude-3-7-sonnet-20250219")
    steps = trace["steps"]
    assert steps[0]["role"] == "user" and "task.md" in steps[0]["text"]
    # One API message split over entries is one step, its usage counted once.
    first = steps[1]
    assert [call["name"] for call in first["tool_calls"]] == ["Batch"]
    assert "Read(file_path" in first["tool_calls"][0]["result"]
    assert first["input_tokens"] == 22146 and first["output_tokens"] == 362
    assert first["cost_usd"] > 0
    assert all(call["result"] is not None for step in steps for call in step["tool_calls"])
    assert trace["totals"]["cost_usd"] == pytest.approx(1.1838173)
    assert trace["ended"]["reason"] == "finish"

    page = client.get(trace_url(submission, "claude_output.json"))
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('data-testid="trace-step"') == len(steps)
    assert "<summary><code>Batch</code>" in html
    assert "22,146 in / 362 out tokens" in html
    assert "$1.1838 (as the agent recorded it)" in html
    # The submission page links the viewer.
    assert (
        trace_url(submission, "claude_output.json")
        in client.get(submission.get_absolute_url()).content.decode()
    )


def test_a_codex_log_is_read_into_turns_with_commands_and_their_output(
    client, task, mlrbench_data, tmp_path
):
    submission = intake(sample_run(mlrbench_data, "codex"), task, tmp_path)

    trace = stored_trace(submission, "codex_log.log")
    assert (trace["format"], trace["model"]) == ("codex", "o4-mini")
    steps = trace["steps"]
    assert steps[0]["role"] == "user"
    calls = [call for step in steps for call in step["tool_calls"]]
    assert calls[0]["name"] == "exec" and calls[0]["arguments"] == "bash -lc 'rg --files'"
    assert calls[0]["is_error"] is True  # exited 127
    assert {call["name"] for call in calls} == {"exec", "apply_patch"}
    assert steps[1]["total_tokens"] == 2564
    assert trace["ended"]["reason"] == "finish"
    html = client.get(trace_url(submission, "codex_log.log")).content.decode()
    assert "2,564 tokens" in html and "Codex CLI" in html


def test_a_gemini_cli_log_is_one_message_and_says_why(client, task, mlrbench_data, tmp_path):
    submission = intake(sample_run(mlrbench_data, "gemini-cli"), task, tmp_path)

    trace = stored_trace(submission, "gemini_log.log")
    assert trace["format"] == "gemini-cli"
    assert len(trace["steps"]) == 1 and "gemini" in trace["steps"][0]["text"]
    assert "without tool calls or tokens" in trace["note"]
    html = client.get(trace_url(submission, "gemini_log.log")).content.decode()
    assert "shown as one message" in html


def test_the_mlr_agent_trace_shows_steps_with_stage_tokens_cost_and_escaped_text(
    client, task, tmp_path
):
    submission = intake(mlr_agent_run(tmp_path, mlr_agent_trace()), task, tmp_path)

    trace = stored_trace(submission, MLR_AGENT_NAME)
    assert (trace["format"], trace["model"]) == ("mlr-agent", "gpt-4o-mini")
    (call,) = trace["steps"][0]["tool_calls"]
    assert call["arguments"] == "command: python code/train.py"
    assert "test accuracy 0.9123" in call["result"]
    assert trace["totals"]["steps_cost_usd"] == pytest.approx(0.0043)

    html = client.get(trace_url(submission, MLR_AGENT_NAME)).content.decode()
    assert "1,200 in / 80 out tokens" in html and "$0.0031" in html and "experiment" in html
    # The message's markdown was rendered at intake; the tool's output is text.
    assert "<strong>train</strong>" in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "<script>alert" not in html and "onerror" not in html


def test_a_trace_that_is_not_json_is_stored_without_steps_and_says_so(client, task, tmp_path):
    archive = mlr_agent_run(tmp_path, b'{"format": "mlr-agent-trace", "steps": [')

    submission = intake(archive, task, tmp_path)

    trace = stored_trace(submission, MLR_AGENT_NAME)
    assert trace["steps"] == [] and trace["note"] == "not read: not JSON (JSONDecodeError)"
    page = client.get(trace_url(submission, MLR_AGENT_NAME))
    assert page.status_code == 200 and "not read: not JSON" in page.content.decode()


def test_a_trace_nested_too_deeply_is_refused_with_a_note(task, tmp_path):
    submission = intake(mlr_agent_run(tmp_path, b"[" * 200_000 + b"]" * 200_000), task, tmp_path)

    assert stored_trace(submission, MLR_AGENT_NAME)["note"].startswith("not read:")


def test_a_trace_past_the_size_limit_is_not_read(settings, task, tmp_path):
    settings.TRACE_MAX_BYTES = 1000
    trace = mlr_agent_trace(mlr_agent_steps() * 5)

    submission = intake(mlr_agent_run(tmp_path, trace), task, tmp_path)

    stored = stored_trace(submission, MLR_AGENT_NAME)
    assert stored["steps"] == [] and stored["truncated"] is True
    assert "more than the 0 MiB the site reads" in stored["note"]


def test_a_long_trace_is_cut_at_the_step_and_text_bounds_with_a_note(
    client, settings, task, tmp_path
):
    settings.TRACE_MAX_STEPS = 3
    settings.TRACE_MAX_FIELD_CHARS = 50
    steps = mlr_agent_steps() * 10
    steps[0] = {**steps[0], "message": {**steps[0]["message"], "content": "x" * 500}}

    submission = intake(mlr_agent_run(tmp_path, mlr_agent_trace(steps)), task, tmp_path)

    trace = stored_trace(submission, MLR_AGENT_NAME)
    assert len(trace["steps"]) == 3 and trace["truncated"] is True
    assert trace["note"].startswith("cut at 3 steps")
    assert trace["steps"][0]["text"] == "x" * 50 + "\n[… 450 more characters cut]"
    # What came after the cut is still read: how the run ended.
    assert trace["ended"]["reason"] == "finish"
    html = client.get(trace_url(submission, MLR_AGENT_NAME)).content.decode()
    assert "cut at 3 steps; the rest of the trace is not shown" in html


def test_a_trace_past_the_time_budget_keeps_the_steps_read_so_far(settings, task, tmp_path):
    settings.TRACE_PARSE_SECONDS = 0

    submission = intake(mlr_agent_run(tmp_path, mlr_agent_trace()), task, tmp_path)

    trace = stored_trace(submission, MLR_AGENT_NAME)
    assert trace["truncated"] is True and trace["steps"] == []
    assert "took longer than 0 s" in trace["note"]


def test_a_trace_from_before_the_viewer_is_read_once_on_first_view(client, task):
    submission = SubmissionFactory(task=task)
    artifact = artifact_add(submission, MLR_AGENT_NAME, "trace", mlr_agent_trace())
    assert not DerivedArtifact.objects.filter(artifact=artifact).exists()

    assert client.get(trace_url(submission, MLR_AGENT_NAME)).status_code == 200
    row = DerivedArtifact.objects.get(artifact=artifact, kind=DerivedKind.TRACE_STEPS)
    DerivedArtifact.objects.filter(pk=row.pk).update(note="kept")
    assert (trace := artifact_trace(artifact))
    assert trace["format"] == "mlr-agent"
    assert DerivedArtifact.objects.get(pk=row.pk).note == "kept"  # not read again


def test_a_file_that_is_not_a_trace_has_no_trace_page(client, task, tmp_path):
    submission = intake(mlr_agent_run(tmp_path, mlr_agent_trace()), task, tmp_path)

    assert client.get(trace_url(submission, "results/log.txt")).status_code == 404
    assert client.get(trace_url(submission, "nothing.json")).status_code == 404


def test_a_trace_of_many_tool_calls_is_cut_at_the_total_text_bound(settings, task, tmp_path):
    settings.TRACE_MAX_TOTAL_CHARS = 2000
    (first, _) = mlr_agent_steps()
    many = [
        {"id": f"c{i}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        for i in range(500)
    ]
    first = {**first, "message": {**first["message"], "tool_calls": many}}
    first["tool_results"] = [
        {"tool_call_id": f"c{i}", "name": "run", "content": "y" * 100} for i in range(500)
    ]

    submission = intake(mlr_agent_run(tmp_path, mlr_agent_trace([first])), task, tmp_path)

    trace = stored_trace(submission, MLR_AGENT_NAME)
    assert trace["truncated"] is True
    assert trace["note"].startswith("cut at 2,000 characters of text")
    assert 0 < len(trace["steps"][0]["tool_calls"]) < 500


def test_deeply_nested_content_costs_what_is_kept_not_a_copy_per_level(settings):
    """Issue 32, finding 3: 120 nested lists around a text of 60,000 lines.
    Written whole, that is 60,000 lines indented 240 deep, copied again at
    every level; written once up to the field's bound it is a few KiB."""
    import tracemalloc

    from submissions.traces import trace_parse

    settings.TRACE_MAX_FIELD_CHARS = 2000
    content: object = "\n" * 60_000
    for _ in range(120):
        content = [content]
    data = json.dumps([{"role": "user", "content": content}]).encode()

    tracemalloc.start()
    try:
        trace = trace_parse(lambda: data, reader="json", size=len(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The parsed JSON is about 0.2 MiB; the whole pretty text would be 14 MiB.
    assert peak < 4 * 1024 * 1024, peak
    text = trace["steps"][0]["text"]
    assert text.endswith("[… more characters cut]")
    assert len(text) < 2100


def test_a_codex_result_takes_the_first_waiting_call_without_rescanning_the_turn():
    """Issue 32, finding 8: each result header rescanned the turn's calls
    (quadratic: 20,000 commands took 35 s). The waiting calls are a queue."""
    from submissions.traces import _Budget, _codex_section, _Parsed

    budget = _Budget(deadline=float("inf"), max_steps=10, max_chars=1000, max_total_chars=10**7)
    parsed, state = _Parsed(), dict[str, object]()
    for number in range(3):
        _codex_section(f"exec ls {number} in /w", "", parsed, state, budget)
    _codex_section("ls 0 succeeded in 1ms:", "zero", parsed, state, budget)

    class _NoScan(list):
        def __iter__(self):
            raise AssertionError("the turn's calls were scanned for a waiting one")

    step = parsed.steps[0]
    step["tool_calls"] = _NoScan(step["tool_calls"])
    _codex_section("ls 1 exited 2 in 1ms:", "one", parsed, state, budget)
    calls = list.__iter__(step["tool_calls"])
    assert [(c["result"], c["is_error"]) for c in calls] == [
        ("zero", False),
        ("one", True),
        (None, False),
    ]


def test_a_turn_of_many_commands_is_shown_a_bounded_page_at_a_time(client, task, tmp_path):
    """Issue 32, finding 8, its page: one Codex turn of 20,000 commands was
    stored as one step, and its trace page rendered every call on every view
    (0.9 s, 90x an ordinary trace page). A step holds at most STEP_MAX_CALLS
    calls, the rest continue in steps of their own, and a page shows at most
    TRACE_CALLS_PER_PAGE calls; all of them are still there, page by page."""
    from submissions.selectors import TRACE_CALLS_PER_PAGE
    from submissions.traces import STEP_MAX_CALLS

    stamp = "[2025-07-30T13:48:02]"
    calls = 2 * TRACE_CALLS_PER_PAGE + 7
    lines = [f"{stamp} OpenAI Codex v0.5.0 (research preview)", "model: o4-mini"]
    lines += [f"{stamp} User instructions:", "Run it."]
    lines += [f"{stamp} exec bash -lc 'echo {n}' in /w" for n in range(calls)]
    for n in range(calls):
        lines += [f"{stamp} bash -lc 'echo {n}' succeeded in 9ms:", f"out {n}"]
    lines.append(f"{stamp} tokens used: 1000")
    archive = zip_entries(
        tmp_path / "run.zip",
        {"results/paper.md": PAPER, "codex_log.log": "\n".join(lines).encode()},
    )
    submission = intake(archive, task, tmp_path)

    trace = stored_trace(submission, "codex_log.log")
    assert trace["totals"]["tool_calls"] == calls and trace["totals"]["steps"] == 2
    assert max(len(step["tool_calls"]) for step in trace["steps"]) <= STEP_MAX_CALLS
    assert [step["index"] for step in trace["steps"]] == list(range(len(trace["steps"])))
    shown = []
    for page in (1, 2, 3):
        html = client.get(f"{trace_url(submission, 'codex_log.log')}?page={page}").content
        on_page = html.decode().count('data-testid="tool-result"')
        assert 0 < on_page <= TRACE_CALLS_PER_PAGE
        shown.append(on_page)
    assert sum(shown) == calls
    last = client.get(f"{trace_url(submission, 'codex_log.log')}?page=3").content.decode()
    assert f"out {calls - 1}" in last and "next</a>" not in last
