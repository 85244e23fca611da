"""The LLM gateway (common/llm.py) owns what every model call shares: the one
retry policy (attempts, backoff with jitter and a cap, which errors are
retried, a server's Retry-After, a caller's deadline), and litellm: no other
module of the site imports it."""

import ast
import time
from pathlib import Path

import pytest
from django.conf import settings

from common.llm import (
    LLMError,
    PermanentLLMError,
    RetriesExhausted,
    RetryPolicy,
    TransientLLMError,
    call_with_retries,
    model_provider,
    supports_pdf_input,
)
from tests.conftest import PROJECT_ROOT

POLICY = RetryPolicy(attempts=3, base_seconds=2.0, max_seconds=60.0)


def highest(low: float, high: float) -> float:
    return high


def lowest(low: float, high: float) -> float:
    return low


class Script:
    """A call that raises the scripted errors in turn, then answers."""

    def __init__(self, *errors: BaseException, answer: str = "ok"):
        self.errors = list(errors)
        self.answer = answer
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.answer


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# ---------------------------------------------------------------- the waits


def test_the_wait_doubles_from_the_base_up_to_the_cap():
    policy = RetryPolicy(attempts=10, base_seconds=2.0, max_seconds=60.0)
    assert [policy.delay(n, uniform=highest) for n in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]


def test_the_jitter_is_a_point_in_the_upper_half_of_the_wait():
    assert POLICY.delay(3, uniform=lowest) == 4.0
    assert POLICY.delay(3, uniform=highest) == 8.0
    assert all(4.0 <= POLICY.delay(3) <= 8.0 for _ in range(200))


def test_a_retry_after_is_the_least_wait_up_to_the_cap():
    assert POLICY.delay(1, retry_after=7, uniform=lowest) == 7.0
    assert POLICY.delay(1, retry_after=0.1, uniform=lowest) == 1.0  # the backoff is longer
    assert POLICY.delay(1, retry_after=3600, uniform=lowest) == 60.0


def test_a_policy_without_an_attempt_or_with_a_negative_wait_is_refused():
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_seconds=-1)


def test_the_policy_comes_from_the_settings(settings):
    settings.LLM_RETRY_ATTEMPTS = 4
    settings.LLM_RETRY_BASE_SECONDS = 0.5
    settings.LLM_RETRY_MAX_SECONDS = 9.0
    assert RetryPolicy.from_settings() == RetryPolicy(attempts=4, base_seconds=0.5, max_seconds=9.0)


# ---------------------------------------------------------------- the retries


def test_transient_errors_are_retried_until_the_call_answers():
    call, sleeps, told = Script(TransientLLMError("429"), TransientLLMError("503")), Sleeps(), []
    answer = call_with_retries(
        call,
        policy=POLICY,
        sleep=sleeps,
        on_retry=lambda attempt, exc, delay: told.append((attempt, str(exc), delay)),
    )
    assert answer == "ok" and call.calls == 3
    assert len(sleeps) == 2 and 1.0 <= sleeps[0] <= 2.0 and 2.0 <= sleeps[1] <= 4.0
    assert [(attempt, text) for attempt, text, _ in told] == [(1, "429"), (2, "503")]
    assert [delay for *_, delay in told] == sleeps


def test_the_last_attempt_s_failure_gives_up_saying_how_often_and_why():
    errors = [TransientLLMError(f"HTTP 500 #{n}", retry_after=n) for n in range(1, 4)]
    call, sleeps = Script(*errors), Sleeps()
    with pytest.raises(RetriesExhausted) as caught:
        call_with_retries(call, policy=POLICY, sleep=sleeps)
    gave_up = caught.value
    assert call.calls == 3 and len(sleeps) == 2
    assert gave_up.attempts == 3 and gave_up.last is errors[-1] and not gave_up.out_of_time
    assert str(gave_up) == "gave up after 3 attempts: HTTP 500 #3"
    assert gave_up.__cause__ is errors[-1] and gave_up.retry_after == 3
    assert isinstance(gave_up, LLMError) and not isinstance(gave_up, TransientLLMError)


def test_a_permanent_error_or_any_other_is_not_retried():
    for error in (PermanentLLMError("bad key"), ValueError("a bug"), KeyboardInterrupt()):
        call, sleeps = Script(error), Sleeps()
        with pytest.raises(type(error)) as caught:
            call_with_retries(call, policy=POLICY, sleep=sleeps)
        assert caught.value is error and call.calls == 1 and sleeps == []


def test_a_wait_that_would_end_past_the_deadline_gives_up_at_once():
    call, sleeps = Script(TransientLLMError("429", retry_after=30)), Sleeps()
    with pytest.raises(RetriesExhausted) as caught:
        call_with_retries(call, policy=POLICY, sleep=sleeps, deadline=time.monotonic() + 10)
    assert caught.value.out_of_time and caught.value.attempts == 1
    assert str(caught.value) == "gave up after 1 attempts (time limit): 429"
    assert call.calls == 1 and sleeps == []


def test_one_attempt_is_no_retry():
    call, sleeps = Script(TransientLLMError("timeout")), Sleeps()
    with pytest.raises(RetriesExhausted):
        call_with_retries(call, policy=RetryPolicy(attempts=1), sleep=sleeps)
    assert call.calls == 1 and sleeps == []


def test_without_a_policy_the_settings_one_applies(settings):
    settings.LLM_RETRY_ATTEMPTS = 2
    settings.LLM_RETRY_BASE_SECONDS = 0.0
    call = Script(*(TransientLLMError("503") for _ in range(5)))
    with pytest.raises(RetriesExhausted) as caught:
        call_with_retries(call, sleep=Sleeps())
    assert call.calls == 2 and caught.value.attempts == 2


# ---------------------------------------------------------------- litellm


def test_what_litellm_knows_of_a_model_is_asked_through_the_gateway():
    assert model_provider("o4-mini") == "openai"
    assert model_provider("anthropic/claude-3-7-sonnet-20250219") == "anthropic"
    assert model_provider("") is None
    assert supports_pdf_input("gpt-4o") is True
    assert supports_pdf_input("openai/no-such-model") is False


# The site's code: its packages (what a non-editable install ships) and
# manage.py. Tests and perf scripts may drive litellm directly (a canary stubs
# litellm.completion), and migrations are history.
SITE_PACKAGES = (*settings.PROJECT_APPS, "common", "sandbox", "mlrbench_site")
GATEWAY = Path("common/llm.py")


def _site_sources() -> list[Path]:
    found = [PROJECT_ROOT / "manage.py"]
    for package in SITE_PACKAGES:
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            if "migrations" not in path.relative_to(PROJECT_ROOT).parts:
                found.append(path)
    return found


def _litellm_imports(path: Path) -> list[int]:
    """The lines where the module imports litellm, by any form of import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Call) and node.args:
            # importlib.import_module("litellm"), __import__("litellm")
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            is_import = called in ("import_module", "__import__")
            text = first.value if isinstance(first, ast.Constant) else None
            names = [text] if is_import and isinstance(text, str) else []
        else:
            continue
        if any(name == "litellm" or name.startswith("litellm.") for name in names):
            lines.append(node.lineno)
    return lines


def test_the_scan_sees_every_form_of_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import os, litellm\n"
        "from litellm.utils import x\n"
        "def f():\n"
        "    import importlib\n"
        "    importlib.import_module('litellm')\n"
        "    return __import__('litellm.types')\n"
        "import litellmish\n"
        "from . import litellm as local\n"
    )
    assert _litellm_imports(module) == [1, 2, 5, 6]


def test_no_module_but_the_gateway_imports_litellm():
    sources = _site_sources()
    assert PROJECT_ROOT / GATEWAY in sources and len(sources) > 100
    assert _litellm_imports(PROJECT_ROOT / GATEWAY)  # the scan finds the one that does
    wrong = {
        str(path.relative_to(PROJECT_ROOT)): lines
        for path in sources
        if path.relative_to(PROJECT_ROOT) != GATEWAY and (lines := _litellm_imports(path))
    }
    assert wrong == {}, "call litellm through a function of common/llm.py"
